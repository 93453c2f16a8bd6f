"""The console's `/llm policy channel|role|show` (decided by the policy engine, as on
Discord): set a place's answer mode, instructions and model, inherit from parents, show
where each value came from; a member without the capability is refused. Both backends."""

from __future__ import annotations

import asyncio
import io

import pytest

from gigi_core import Actor
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.llm import Place
from gigi_core.testing import open_test_kernel


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


async def test_the_operator_sets_and_shows_place_and_role_policies(kernel) -> None:
    output = await drive(
        kernel,
        [
            "/llm policy channel place=category:k1 answer=replies",
            "/llm policy channel place=thread:t1 purpose=chat model=m-2 prompt=Be brief, please.",
            "/llm policy role role=r-1 allow=m-1,chat",
            "/llm policy show place=thread:t1 place=channel:c1 place=category:k1",
            "/llm policy channel answer=always",
            "/llm policy channel colour=blue",
            "/llm policy role role=r-1",
            "/llm policy",
        ],
    )
    assert "category k1: models inherited; instructions inherited; answers replies." in output
    assert "thread t1: models chat -> model m-2; instructions 17 characters" in output
    assert "role r-1 may use: m-1, chat." in output
    assert "Policy at thread t1 > channel c1 > category k1:" in output
    assert "  answers: replies (from category)" in output
    assert "  instructions: 17 characters (from thread)" in output
    assert "  chat: model m-2 (from thread t1)" in output
    assert "  role r-1 may use: m-1, chat" in output
    assert "use one of mention, replies, every" in output
    assert "/llm policy channel has no option 'colour'" in output
    assert "needs role=ID and allow=M,M or clear=yes" in output
    assert "Usage: /llm policy channel" in output
    effective = await kernel.llm.places.effective("console", (Place("thread", "t1"),))
    assert effective.prompt.value == "Be brief, please."
    # the console's own channel is the default place
    await drive(kernel, ["/llm policy channel prompt=Speak like a pirate."])
    here = await kernel.llm.places.effective("console", (Place("channel", "console"),))
    assert (here.prompt.value, here.prompt.where) == ("Speak like a pirate.", "channel")


async def test_a_member_without_the_capability_is_refused(kernel) -> None:
    output = await drive(
        kernel,
        ["/llm policy channel answer=replies", "/llm policy show"],
        actor=Actor(id="bob"),
    )
    assert output.count("Not allowed:") == 2
    assert (await kernel.llm.places.effective("console")).answer.where == "default"
