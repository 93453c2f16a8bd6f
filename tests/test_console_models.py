"""The console's `/llm models provider=` and `/llm failover set|show|clear` for the console
guild's own keys, decided by the policy engine (issue 30). Both backends; wire-level fake."""

from __future__ import annotations

import asyncio
import io

import pytest

from gigi_core import Actor
from gigi_core.default_plugins.console import GUILD, ConsoleSurface
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI

KEY = "sk-console-models-012345"


@pytest.fixture
async def kernel(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    async with open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as k:
        yield k


async def drive(kernel, lines: list[str], actor: Actor | None = None) -> str:
    out = io.StringIO()
    stdin = io.StringIO("".join(line + "\n" for line in lines))
    console = ConsoleSurface(kernel, stdin=stdin, stdout=out, actor=actor)
    await asyncio.wait_for(console.run(), 30)
    return out.getvalue()


async def test_the_operator_lists_models_and_sets_failover(kernel) -> None:
    async with FakeOpenAI(api_key=KEY) as fake:
        owner = f"guild:{GUILD}"
        for label in ("main", "spare"):
            await kernel.llm.add_credential(
                owner, "openai-compatible", label, KEY, base_url=fake.base_url
            )
        fake.models = ["m-b", "m-a"]
        output = await drive(
            kernel,
            [
                "/llm models provider=main",
                "/llm models provider=main",
                "/llm models",
                "/llm failover set purpose=chat order=spare:m-a on=rate_limited,overloaded",
                "/llm failover set purpose=chat order=nobody",
                "/llm failover show",
                "/llm failover clear purpose=chat",
                "/llm failover show",
                "/llm failover set purpose=chat order=spare colour=blue",
            ],
        )
    assert "main (openai-compatible) can call 2 models (fetched " in output
    assert "can call 2 models (cached, fetched " in output
    assert output.index("  m-a") < output.index("  m-b")
    assert len(fake.requests_to("models")) == 1
    assert "/llm models needs provider=..." in output
    assert "Failover for chat: the profile, then spare (openai-compatible, m-a); on " in output
    assert "overloaded, rate_limited" in output
    assert "no active credential labelled 'nobody'" in output
    assert "  chat: the profile, then spare" in output
    assert "Removed the chat failover list." in output
    assert "No failover lists here" in output
    assert "/llm failover set has no option 'colour'" in output


async def test_a_member_without_the_capability_is_refused(kernel) -> None:
    output = await drive(
        kernel,
        ["/llm failover set purpose=chat order=x", "/llm models provider=x"],
        actor=Actor(id="bob"),
    )
    assert output.count("Not allowed:") == 2
    assert await kernel.llm.failover(f"guild:{GUILD}") == []
