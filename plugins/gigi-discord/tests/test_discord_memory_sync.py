"""`/memory sync` end to end on Discord: the admin's reply follows the job until it is done,
and the channel's earlier messages become countable."""

from __future__ import annotations

from discord_world import world

from gigi_core import Actor


async def test_memory_sync_pages_discord_history_and_shows_progress(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_DISCORD_JOB_POLL_SECONDS", "0.02")
    async with world(tmp_path, [], plugins=["memory", "local-embed"]) as w:
        for n in range(120):  # SimCord's clock starts in January 2026: keep a long retention
            await w.member.send(w.channel, f"postgres thought {n}")
        await w.kernel.enable_plugin(w.gid, "memory")
        await w.kernel.jobs.start()
        await w.admin.slash(w.channel, "memory enable", channel=w.channel, retention_days=3650)
        result = await w.admin.slash(w.channel, "memory sync", channel=w.channel)
        await w.env.settle()
        shown = (result.followups[-1] if result.followups else result.response).content
        assert shown.startswith(f"Syncing <#{w.channel.id}>") and shown.endswith("Done.")
        assert result.ephemeral  # an admin command's answer
        admin = Actor(id=str(w.admin.id), is_admin=True)
        counted = await w.kernel.call_tool(
            "memory.count",
            {"text": "postgres"},
            actor=admin,
            guild_id=w.gid,
            channel_id=str(w.channel.id),
        )
        assert counted.result["count"] == 120
        [command] = [c for c in await w.bot.tree.fetch_commands() if c.name == "memory"]
        assert command.default_member_permissions is not None  # hidden from members by default
