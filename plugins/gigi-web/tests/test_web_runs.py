"""The agent runs page and one run's trace: this server's runs only, metadata only, for
holders of audit.read, decided by the policy engine."""

from __future__ import annotations

from web_world import ADMIN, ALPHA, BETA, EVIL_CHANNEL, MEMBER

from gigi_core import Actor, recent_runs
from gigi_core.surfaces import Request
from gigi_core.testing import AgentRuntime
from gigi_core.testing.scripted import ScriptedModel, say

PROMPT = "what is the launch code <b>hush</b>"
ANSWER = "the answer nobody may read on the dashboard"


async def _run(kernel, guild_id: str, channel_id: str) -> str:
    runtime = AgentRuntime(kernel, model=ScriptedModel([say(ANSWER)]))
    reply = await runtime.handle(
        Request(actor=Actor(id=MEMBER), guild_id=guild_id, channel_id=channel_id,
                kind="mention", text=PROMPT)
    )  # fmt: skip
    assert reply.run_id
    return reply.run_id


async def test_runs_list_and_trace_metadata_only(dashboard) -> None:
    kernel = dashboard.kernel
    mine = await _run(kernel, ALPHA, "8001")
    theirs = await _run(kernel, BETA, "8101")
    [summary] = await recent_runs(kernel.db, ALPHA)
    assert (summary.id, summary.status, summary.actor_id) == (mine, "done", MEMBER)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/runs")
    assert page.status_code == 200 and mine in page.text and theirs not in page.text
    assert f'href="/g/{ALPHA}/runs"' in page.text  # in the navigation
    assert "#&lt;script&gt;" in page.text and EVIL_CHANNEL not in page.text
    assert PROMPT not in page.text and ANSWER not in page.text
    assert "<td>bob</td>" in page.text  # the member by their name in the server
    failed = await ada.client.get(f"/g/{ALPHA}/runs", params={"status": "failed"})
    assert mine not in failed.text and "No runs with this status" in failed.text

    trace = await ada.client.get(f"/g/{ALPHA}/runs/{mine}")
    assert trace.status_code == 200
    assert f"run {mine} [mention] done" in trace.text and "steps," in trace.text
    assert "hush" not in trace.text and ANSWER not in trace.text
    other = await ada.client.get(f"/g/{ALPHA}/runs/{theirs}")  # Beta's run, through Alpha
    assert other.status_code == 404 and theirs not in other.text
    assert (await ada.client.get(f"/g/{ALPHA}/runs/no-such-run")).status_code == 404
    assert (await ada.client.get(f"/g/{ALPHA}/runs/%3Cx%3E")).status_code == 404


async def test_runs_need_audit_read(dashboard) -> None:
    run_id = await _run(dashboard.kernel, ALPHA, "8001")
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    for path in ("runs", f"runs/{run_id}"):
        refused = await bob.client.get(f"/g/{ALPHA}/{path}")
        assert refused.status_code == 403 and "audit.read" in refused.text, path
    await dashboard.kernel.add_grant(ALPHA, "audit.read", "user", MEMBER, by=ADMIN)
    assert (await bob.client.get(f"/g/{ALPHA}/runs/{run_id}")).status_code == 200
