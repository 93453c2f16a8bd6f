"""A real browser through the pages that need other plugins or activity to show anything:
Memory (a remembered channel, a history sync queued), Knowledge (a channel's decisions and
actions), Budgets (two budgets with spend from real calls), Agent runs and a run's trace,
Jobs (one with progress, one failed, the queued sync) and Usage per member.

Seeded through the kernel as the other dashboard tests seed it; the model calls go to the
fake OpenAI on loopback. Set DASHBOARD_SCREENSHOTS=docs/web to refresh these pages' shots.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import gigi_memory
from gigi_knowledge import tables
from gigi_knowledge.service import ready
from test_web_browser import browsing
from web_world import ADMIN, ALPHA, MEMBER

from gigi_core import Actor
from gigi_core.events import MessageCreated
from gigi_core.llm.types import ChatRequest
from gigi_core.llm.usage import UsageLog, UsageRecord
from gigi_core.surfaces import Request
from gigi_core.testing import AgentRuntime
from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.scripted import ScriptedModel, call, say

ADMIN_ACTOR = Actor(id=ADMIN, is_admin=True)
#: Other members of the server, known to the usage log only (the page shows no one's id).
OTHERS = ("1004", "1005", "1006")
BOB = Actor(id=MEMBER, roles=frozenset({"7002"}))  # a Members role holder
EVE = Actor(id=OTHERS[1])  # a member without a role
GENERAL, RANDOM = "8001", "8002"


async def _memory(kernel) -> None:
    """#general remembered for 30 days with a few messages kept; #random not remembered."""
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    await kernel.call_tool(
        "memory.enable", {"channel": GENERAL, "retention_days": 30}, actor=ADMIN_ACTOR,
        guild_id=ALPHA, channel_id=GENERAL,
    )  # fmt: skip
    for i, text in enumerate(["Standup moved to 10:00", "Release notes drafted", "Ship Friday"]):
        await kernel.publish(
            MessageCreated(
                guild_id=ALPHA, channel_id=GENERAL, message_id=f"6000{i}", author_id=MEMBER,
                created_at=datetime.now(UTC), text=text,
            )
        )  # fmt: skip
    await kernel.events.drain()
    assert await gigi_memory.flush(kernel, 30)


async def _knowledge(kernel) -> None:
    """Extraction on in #general, and two decisions and two actions recorded there as the
    extraction pipeline records them."""
    await kernel.enable_plugin(ALPHA, "knowledge", by=ADMIN)
    await kernel.call_tool(
        "knowledge.enable", {"channel": GENERAL, "timezone": "Europe/Paris"}, actor=ADMIN_ACTOR,
        guild_id=ALPHA, channel_id=GENERAL,
    )  # fmt: skip
    svc = await ready(kernel)
    now = int(time.time() * 1000)
    async with svc.engine.begin() as conn:
        for summary, by, ago in (
            ("Release 2.4 ships on Friday", MEMBER, 3_600_000),
            ("Keep the changelog in the repository", ADMIN, 86_400_000),
        ):
            await conn.execute(
                tables.decisions.insert().values(
                    id=str(uuid.uuid4()), guild_id=ALPHA, channel_id=GENERAL, summary=summary,
                    rationale=None, decided_by=[by], asserted_by=[by], decided_ms=now - ago,
                    confidence=0.9, status="active", superseded_by=None, tags=[], source_ref={},
                    created_ms=now - ago,
                )
            )  # fmt: skip
        for description, owner, name in (
            ("Write the release notes", MEMBER, "bob"),
            ("Update the install guide", ADMIN, "ada"),
        ):
            await conn.execute(
                tables.actions.insert().values(
                    id=str(uuid.uuid4()), guild_id=ALPHA, channel_id=GENERAL,
                    description=description, owner_id=owner, owner_name=name,
                    deadline_ms=now + 3 * 86_400_000, status="open", staleness_ms=None,
                    confidence=0.8, tags=[], source_ref={}, related_decision=None,
                    asserted_by=[owner], created_ms=now,
                )
            )  # fmt: skip


async def _budgets_and_calls(kernel, openai: FakeOpenAI) -> None:
    """A daily server budget and a weekly one for the Members role, then real chat calls
    (through the fake OpenAI) by bob (a Members holder) and another member that spend from
    them."""
    owner = f"guild:{ALPHA}"
    await kernel.llm.add_credential(owner, "openai-compatible", "main", "sk-pages-key-0123456789",
                                    base_url=openai.base_url)  # fmt: skip
    await kernel.llm.set_profile(owner, "chat", "main", "gpt-4o-mini")
    await kernel.llm.set_budget(ALPHA, "guild", None, limit="200000", window="daily", by=ADMIN)
    await kernel.llm.set_budget(ALPHA, "role", "7002", limit="50000", window="weekly", by=ADMIN)
    usage = {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500}
    openai.reply_text("Done.", usage=usage, times=5)
    asked = [{"role": "user", "content": "summarise #general"}]
    for actor in (BOB, BOB, BOB, EVE, EVE):
        request = ChatRequest(model="gpt-4o-mini", messages=asked, max_output_tokens=400)
        await kernel.llm.chat(request, guild_id=ALPHA, actor=actor, channel_id=GENERAL)


async def _other_members_usage(kernel) -> None:
    """More calls over the last days: by members (ada's one, the role budget's exempt
    admin) and a plugin's own (no member)."""
    log = UsageLog(kernel.db)
    now = datetime.now(UTC)
    n = 0
    for actor, calls, tokens in ((OTHERS[0], 9, 2400), (OTHERS[1], 2, 800),
                                 (OTHERS[2], 1, 300), (ADMIN, 1, 500), (None, 4, 600)):  # fmt: skip
        for i in range(calls):
            n += 1
            await log.record(
                UsageRecord(
                    request_id=f"m{n}", provider="openai", model="gpt-4o-mini", purpose="chat",
                    billing_owner_type="guild", billing_owner_id=ALPHA, status="ok",
                    guild_id=ALPHA, actor_id=actor, input_tokens=tokens, output_tokens=150,
                    created_at=now - timedelta(days=i % 5),
                )
            )  # fmt: skip


async def _runs(kernel) -> str:
    """Two agent runs by bob in #general: one answered at once, one after a tool call."""
    await kernel.enable_plugin(ALPHA, "webnotes", by=ADMIN)
    run_ids = []
    for turns in ([say("Hello!")], [call(("webnotes__count", {})), say("There are no notes.")]):
        runtime = AgentRuntime(kernel, model=ScriptedModel(turns))
        reply = await runtime.handle(
            Request(actor=BOB, guild_id=ALPHA, channel_id=GENERAL, kind="mention",
                    text="how many notes are there?")
        )  # fmt: skip
        assert reply.run_id
        run_ids.append(reply.run_id)
    return run_ids[-1]


async def _jobs(kernel) -> None:
    """A reindex that reported progress and one that failed (webnotes' test job)."""
    await kernel.jobs.defer(
        "webnotes.reindex", {"guild_id": ALPHA, "total": 8, "note": "notes of #general"}
    )
    await kernel.jobs.defer("webnotes.reindex", {"guild_id": ALPHA, "total": -1})
    await kernel.jobs.run_until_idle()


async def test_the_activity_pages_in_a_real_browser(database_url, tmp_path) -> None:
    from playwright.async_api import expect

    async with (
        browsing(database_url, tmp_path, plugins=["memory", "knowledge"]) as walk,
        FakeOpenAI() as openai,
    ):
        kernel, page, shot = walk.kernel, walk.page, walk.shot
        walk.fake.guilds[ALPHA].channels[RANDOM] = "random"
        await _memory(kernel)
        await _knowledge(kernel)
        await _budgets_and_calls(kernel, openai)
        await _other_members_usage(kernel)
        tool_run = await _runs(kernel)
        await _jobs(kernel)
        await walk.sign_in()
        await page.get_by_role("link", name="Alpha").click()

        await page.get_by_role("link", name="Memory").click()
        await expect(page.get_by_role("heading", name="Memory", exact=True)).to_be_visible()
        general = page.get_by_role("row", name="#general")
        await expect(general).to_contain_text("30 days")
        await expect(general.get_by_role("cell").nth(2)).to_have_text("3")  # messages kept
        await expect(
            page.get_by_role("row", name="#random").get_by_role("cell").first
        ).to_have_text("no")
        await page.get_by_label("Only the last (days)").fill("14")
        await page.get_by_role("button", name="Sync", exact=True).click()
        await expect(page.get_by_text("A sync of #general started")).to_be_visible()
        await page.evaluate("window.scrollTo(0, 0)")
        await shot("memory")

        await page.get_by_role("link", name="Knowledge").click()
        await expect(page.get_by_role("heading", name="Knowledge", exact=True)).to_be_visible()
        await page.get_by_label("Channel", exact=True).select_option(label="#general")
        await page.get_by_role("button", name="Show").click()
        await expect(page.get_by_text("2 decisions, 2 actions (2 open)")).to_be_visible()
        await expect(page.get_by_text("Extraction is on here")).to_be_visible()
        await page.get_by_label("Purpose").fill("Release planning for the 2.x line")
        await page.get_by_label("Type").select_option("project")
        await page.get_by_label("Tags (comma-separated)").fill("release, docs")
        await page.get_by_role("button", name="Save context").click()
        await expect(page.get_by_text("Context saved: purpose, tags, type.")).to_be_visible()
        await expect(
            page.get_by_text("Release planning for the 2.x line (project)")
        ).to_be_visible()
        await expect(page.get_by_text("Tags: release, docs")).to_be_visible()
        await expect(page.get_by_role("cell", name="Release 2.4 ships on Friday")).to_be_visible()
        await expect(page.get_by_role("cell", name="Write the release notes")).to_be_visible()
        await shot("knowledge", full_page=True)

        await page.get_by_role("link", name="Budgets").click()
        await expect(page.get_by_role("heading", name="Model budgets")).to_be_visible()
        server = page.get_by_role("row", name="The whole server")
        await expect(server).to_contain_text("200,000 tokens")
        await expect(server.get_by_role("cell").nth(2)).to_have_text("7,500")  # 5 calls
        members = page.get_by_role("row", name="Role @Members")
        await expect(members).to_contain_text("50,000 tokens")
        await expect(members.get_by_role("cell").nth(2)).to_have_text("4,500")  # bob's 3
        await shot("budgets")

        await page.get_by_role("link", name="Agent runs").click()
        await expect(page.get_by_role("heading", name="Agent runs")).to_be_visible()
        rows = page.get_by_role("row").filter(has_text="#general")
        await expect(rows).to_have_count(2)
        with_tool = rows.filter(has_text=tool_run)
        await expect(with_tool.get_by_role("cell").nth(1)).to_have_text("done")
        await expect(with_tool.get_by_role("cell").nth(4)).to_have_text("1")  # tool calls
        await shot("runs")
        await page.get_by_role("link", name=tool_run).click()
        await expect(page.get_by_role("heading", name=f"Run {tool_run}")).to_be_visible()
        await expect(page.locator("pre.trace")).to_contain_text("webnotes.count")
        await shot("run-trace")

        await page.get_by_role("link", name="Jobs").click()
        await expect(page.get_by_role("heading", name="Background jobs")).to_be_visible()
        await expect(page.get_by_role("row", name="memory.sync")).to_contain_text("queued")
        reindex = page.get_by_role("row").filter(has_text="webnotes.reindex")
        await expect(reindex.filter(has_text="failed")).to_contain_text("ValueError")
        await expect(reindex.filter(has_text="4 of 8")).to_contain_text("notes of #general")
        await shot("jobs")

        await page.get_by_role("link", name="Usage").click()
        await page.get_by_role("link", name="The members who spent the most").click()
        await expect(page.get_by_role("heading", name="LLM usage per member")).to_be_visible()
        top = page.get_by_role("row", name="member #1")
        await expect(top).to_contain_text("21,600")  # 9 calls of 2,400 input tokens
        await expect(page.get_by_role("rowheader", name="member #5")).to_be_visible()
        await expect(page.get_by_role("rowheader", name="no member", exact=False)).to_be_visible()
        text = await page.content()
        for secret in (MEMBER, ADMIN, *OTHERS, "bob"):  # ranks only: no id, no name
            assert secret not in text.split("Top members by tokens", 1)[1]
        await shot("usage-members")
