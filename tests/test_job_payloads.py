"""First-party plugins never put message text in a job payload (payloads are stored and listed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from gigi_core.events import GuildLeft, MessageCreated, MessageDeleted, MessageEdited
from gigi_core.store.job_tables import JobRow
from gigi_core.testing import open_test_kernel

CANARY = "payload-canary-3c1e9 private words"


async def test_first_party_jobs_carry_no_message_text(tmp_path: Path, database_url: str) -> None:
    """Every installed first-party plugin, enabled, sees canary messages; no job holds them."""
    async with open_test_kernel(tmp_path, database_url=database_url, strict=False) as kernel:
        plugins = sorted(kernel.registry.manifests)
        for name in plugins:
            if kernel.registry.manifests[name].plugin.per_server:
                await kernel.enable_plugin("g1", name)
        if "memory" in plugins:  # opt a channel in, so memory really ingests the canary
            await kernel.call_tool(
                "memory.enable",
                {"channel": "c1", "retention_days": 30},
                actor=_admin(),
                guild_id="g1",
                channel_id="c1",
            )
        now = datetime.now(UTC)
        for i in range(20):
            await kernel.publish(
                MessageCreated(
                    guild_id="g1",
                    message_id=f"m{i}",
                    channel_id="c1",
                    author_id="u1",
                    created_at=now - timedelta(seconds=20 - i),
                    text=f"{CANARY} {i}",
                )
            )
        await kernel.publish(
            MessageEdited(
                guild_id="g1", message_id="m1", channel_id="c1", text=CANARY, edited_at=now
            )
        )
        await kernel.publish(MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("m2",)))
        await kernel.publish(GuildLeft(guild_id="g1"))  # the kernel's own purge job
        await kernel.events.drain()
        async with kernel.db.session() as s:
            rows = (await s.scalars(select(JobRow))).all()
        assert any(r.name == "gigi.guild_purge" for r in rows)  # jobs were written
        stored = json.dumps([r.payload for r in rows])
        assert CANARY not in stored and "private words" not in stored


def _admin():
    from gigi_core import Actor

    return Actor(id="admin", is_admin=True)
