"""The confirmation message shows the arguments being approved, and can ping nobody."""

from __future__ import annotations

import hashlib

from discord_world import world

from gigi_core.testing.scripted import call, say

HOSTILE = "@everyone ``` **bold** <@123456789012345678> <@&123456789012345678> @here"


def _posts(w) -> list:
    return [r for r in w.env.http_requests if r.method == "POST" and r.path.endswith("/messages")]


async def test_prompt_shows_the_text_being_added(tmp_path) -> None:
    async with world(tmp_path, [call(("notes.add", {"text": "buy milk"})), say("Added.")]) as w:
        [prompt] = await w.mention(w.member, "add a note")
        assert "**Needs confirmation:**" in prompt.content
        assert 'text: "buy milk"' in prompt.content


async def test_hostile_arguments_cannot_break_out_or_ping(tmp_path) -> None:
    async with world(tmp_path, [call(("notes.add", {"text": HOSTILE})), say("Added.")]) as w:
        [prompt] = await w.mention(w.member, "add a note")
        content = prompt.content
        # The arguments sit in one code block that the value cannot close.
        assert content.count("```") == 2
        block = content.split("```", 2)[1]
        assert block.startswith("text\n") and "text: " in block
        assert "**bold**" in block  # shown literally inside the block, not as markup
        for raw in ("@everyone", "@here", "<@123456789012345678>", "<@&123456789012345678>"):
            assert raw not in content
        assert "@\u200beveryone" in block
        assert all(p.json["allowed_mentions"]["parse"] == [] for p in _posts(w))
        assert w.notes.ran == []


async def test_a_refused_call_is_said_in_the_reply_and_named_in_the_trace(tmp_path) -> None:
    turns = [call(("notes_erase_all", {"why": "@everyone"})), say("Done, all notes erased!")]
    async with world(tmp_path, turns) as w:
        [reply] = await w.mention(w.member, "erase every note")
        assert reply.content.startswith("Done, all notes erased!")
        assert "Not done — Gigi refused: notes_erase_all (no such tool)." in reply.content
        trace = await w.member.slash(w.channel, "agent trace")
        text = trace.followups[-1].content if trace.followups else trace.response.content
        # the trace keeps a hash and length of a name no action has (issue 28)
        digest = hashlib.sha256(b"notes_erase_all").hexdigest()[:8]
        assert f"`unknown_tool: sha256:{digest} (15 chars)`" in text
        assert "notes_erase_all" not in text
        assert "@everyone" not in text
