"""Read Message History: a member who may view a channel but not read its history gets no
earlier message of it from memory, whichever path calls the tool and whether or not the call
names the channel (an omitted channel argument means the channel asked in)."""

from __future__ import annotations

import json
from typing import Any

import discord
from discord_world import world

from gigi_core.testing.scripted import call, say

SECRET = "postgres-before-bob-joined"
READS = (
    ("memory recent", "memory.recent", {}),
    ("memory count", "memory.count", {"text": "postgres"}),
    ("memory search", "memory.search", {"query": "postgres"}),
)


async def _remembered_channel_bob_cannot_read_back(w: Any) -> Any:
    """#nohist: bob views it but has no Read Message History; memory holds earlier messages;
    bob holds memory.read.guild and may use the /memory command."""
    nohist = w.guild.create_text_channel(
        "nohist", overwrites={w.member: discord.PermissionOverwrite(read_message_history=False)}
    )
    for n in range(3):
        await w.admin.send(nohist, f"{SECRET} {n}")
    await w.kernel.enable_plugin(w.gid, "memory")
    await w.kernel.jobs.start()
    await w.admin.slash(w.channel, "memory enable", channel=nohist, retention_days=3650)
    await w.admin.slash(w.channel, "memory sync", channel=nohist)
    await w.env.settle()
    await w.admin.slash(w.channel, "gigi grants add", capability="memory.read.guild", user=w.member)
    [command] = [c for c in await w.bot.tree.fetch_commands() if c.name == "memory"]
    w.guild.set_command_permissions(command, {w.guild.default_role: True})
    return nohist


def _shown(result: Any) -> str:
    parts = [result.response, *(result.followups or [])]
    return "\n".join(str(getattr(p, "content", "") or "") for p in parts if p is not None)


async def test_memory_commands_without_a_channel_refuse_a_member_without_history(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_DISCORD_JOB_POLL_SECONDS", "0.02")
    async with world(tmp_path, [], plugins=["memory", "local-embed"]) as w:
        nohist = await _remembered_channel_bob_cannot_read_back(w)
        # The admin reads it back (memory holds the messages: the refusal below is the check).
        shown = _shown(await w.admin.slash(nohist, "memory recent"))
        assert SECRET in shown
        for command, _, options in READS:
            shown = _shown(await w.member.slash(nohist, command, **options))
            assert SECRET not in shown and "cannot view that channel" in shown, (command, shown)
            # The same call naming the channel was refused before, and still is.
            named = _shown(await w.member.slash(nohist, command, channel=nohist, **options))
            assert SECRET not in named and "cannot view that channel" in named, (command, named)


async def test_agent_calls_without_a_channel_refuse_a_member_without_history(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_DISCORD_JOB_POLL_SECONDS", "0.02")
    async with world(tmp_path, [], plugins=["memory", "local-embed"]) as w:
        nohist = await _remembered_channel_bob_cannot_read_back(w)
        for _, action, args in READS:
            w.model.turns.extend([call((action, args)), say("done")])
            asked = len(w.model.requests)
            await w.mention(w.member, "what was said here before?", channel=nohist)
            tool_result = str(w.model.requests[asked + 1].messages[-1].content)
            assert SECRET not in tool_result and "cannot view that channel" in tool_result, (
                action,
                tool_result,
            )
        # `/agent call` (the direct path, no model) refuses too.
        for _, action, args in READS:
            result = await w.member.slash(
                nohist, "agent call", action=action, args=json.dumps(args)
            )
            shown = _shown(result)
            assert SECRET not in shown and "cannot view that channel" in shown, (action, shown)
