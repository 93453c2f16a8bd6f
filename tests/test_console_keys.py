"""The console's personal keys (issue 30): `/llm key ...` for the operator's own key (the key
on a line of its own, never echoed), `/llm policy personal-keys`, `/ask billing=` remembered
for later lines, and the disclosure prompt. Both backends; a fake OpenAI on loopback."""

from __future__ import annotations

import asyncio
import io

import pytest

from gigi_core import Actor
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.testing import FakeRetriever, RetrieverPlugin, open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.retrieval import hit

KEY = "sk-console-CANARY-8d2f4a6c1e"
BOB = Actor(id="bob")


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


async def test_the_operator_manages_their_own_key(kernel) -> None:
    async with FakeOpenAI(api_key=KEY) as fake:
        fake.reply_text("OK")
        output = await drive(
            kernel,
            [
                "/llm key list",
                f"/llm key add provider=openai-compatible label=mine base_url={fake.base_url}",
                KEY,
                "/llm key add provider=openai-compatible label=mine base_url=http://x.test/v1",
                "/llm key prefer label=mine model=m-1",
                "/llm key test label=mine",
                "/llm key list",
                "/llm key add provider=nope label=x",
                "/llm key test",
                "/llm key remove label=mine",
                "/llm key colour=blue",
            ],
        )
    assert KEY not in output
    assert "You have no keys yet: /llm key add provider=P label=L." in output
    [cred] = await kernel.llm.list_credentials("user:alice", include_revoked=True)
    assert (
        f"Saved your key mine for openai-compatible (fingerprint …{cred.fingerprint_suffix})"
        in (output)
    )
    assert "Next: /llm key prefer label=mine model=M." in output
    assert "Error: you already have a key labelled 'mine'" in output
    assert "Your key mine now answers for you with m-1" in output
    assert "mine works with m-1" in output
    assert fake.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    assert f"  mine: openai-compatible, fingerprint …{cred.fingerprint_suffix}, active" in output
    assert "answers for you" in output
    assert "Error: no provider is registered as 'nope'" in output
    assert "Error: /llm key test needs label=..." in output
    assert "Removed your key mine; the sealed key is destroyed." in output
    assert "Usage: /llm key add provider=P" in output
    assert cred.revoked_at is not None


async def test_only_admins_set_the_policy_and_billing_me_follows_it(kernel) -> None:
    async with FakeOpenAI(api_key=KEY) as mine:
        refused = await drive(kernel, ["/llm policy personal-keys value=guild-allowed"], BOB)
        assert "Not allowed" in refused
        assert (await kernel.llm.policy("console")).personal_keys == "off"
        await kernel.llm.personal.add(
            "alice", "openai-compatible", "mine", KEY, base_url=mine.base_url, model="m-1"
        )
        mine.reply_text("paid by you")
        mine.reply_text("still you")
        output = await drive(
            kernel,
            [
                "/ask billing=me hello",
                "/llm policy personal-keys value=guild-allowed",
                "/ask billing=me hello",
                "and again",
                "/ask billing=tenant hi",
                "/ask",
            ],
        )
    assert "Your own key cannot answer here (personal keys: off)" in output
    assert "/llm policy personal-keys value=guild-allowed" in output
    assert "Personal keys here: guild-allowed." in output
    assert "paid by you" in output and "still you" in output
    assert await kernel.llm.personal.billing("console", "alice") == "me"
    owners = {
        (e["billing_owner_type"], e["billing_owner_id"])
        for e in await kernel.llm.usage_log.events()
    }
    assert owners == {("user", "alice")}
    assert "Error: billing='tenant': use billing=server or billing=me" in output
    assert "Usage: /ask [billing=server|me] TEXT" in output


async def test_the_disclosure_is_confirmed_once_per_guild(
    database_url, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("USER", "alice")
    notes = RetrieverPlugin(
        tmp_path,
        FakeRetriever("notes", hits=[hit("notes:n:1", "the code is TANGERINE", "console")]),
    )
    async with (
        open_test_kernel(
            tmp_path,
            plugins=["openai"],
            extra_plugins=[("notes", notes)],
            database_url=database_url,
        ) as kernel,
        FakeOpenAI(api_key=KEY) as mine,
    ):
        await kernel.enable_plugin("console", "notes")  # the guild now has context to give
        await kernel.llm.set_policy("console", personal_keys="guild-allowed")
        await kernel.llm.personal.add(
            "alice", "openai-compatible", "mine", KEY, base_url=mine.base_url, model="m-1"
        )
        mine.reply_text("answered")
        mine.reply_text("answered again")
        output = await drive(
            kernel,
            [
                "/ask billing=me what is the code?",
                "/llm key disclose",
                "no",
                "/llm key disclose",
                "yes",
                "/llm key disclose",
                "what is the code?",
            ],
        )
        asked = [str(r.json["messages"]) for r in mine.requests_to("chat")]
    assert "TANGERINE" not in asked[0] and "TANGERINE" in asked[-1]
    assert "left out. To include it, confirm once with `/llm key disclose`" in output
    assert "your openai-compatible account" in output
    assert "Not confirmed; the guild's context stays out" in output
    assert "Confirmed: answers billed to your key here now include this guild's context." in output
    assert "You already confirmed this for this guild." in output
    assert await kernel.llm.personal.acknowledged("console", "alice")
