"""A thread inherits its parent channel's observation state (issue 28, item 3): knowledge
enabled in a thread posts no staleness nudge nor contradiction note there while the parent
channel is paused or secure, and posts them once the parent is resumed."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from knowledge_fakes import action, classify, decision, extraction
from knowledge_helpers import enable, message, publish, rows

from gigi_core.testing import RecordingPoster


def _cites_focus(**items: Any) -> Any:
    def build(request: Any) -> Any:
        mid = request.messages[-1].content.rsplit("[id=", 1)[1].split(" ")[0]
        return extraction(
            **{k: [v | {"message_ids": [mid]} for v in vs] for k, vs in items.items()}
        )

    return build


async def _run(kernel: Any, name: str) -> Any:
    from knowledge_helpers import JobCtx

    return await kernel.registry.jobs[name].fn(JobCtx(kernel))


def _in_thread(text: str) -> Any:
    return message(text, channel_id="t1", parent_channel_id="c1", channel_kind="thread")


@pytest.mark.parametrize("state", ["paused", "secure"])
async def test_no_nudge_in_a_thread_whose_parent_is_not_observed(
    kernel: Any, model: Any, state: str
) -> None:
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel, channel="t1")
    model.always("classify", classify())
    model.on(
        "extract",
        _cites_focus(actions=[action("Review the API", [], owner="u1", deadline="2020-01-03")]),
    )
    await publish(kernel, _in_thread("Tom reviews the API by Friday"))
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.channel_id == "t1"
    await kernel.channels.set("g1", "c1", state, by="admin")
    result = await _run(kernel, "knowledge.staleness")
    assert poster.posts == [] and result["nudged"] == 0 and result["skipped"] == 1
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.nudged_ms is None  # it waits, unmarked
    await kernel.channels.set("g1", "c1", "active", by="admin")
    assert (await _run(kernel, "knowledge.staleness"))["nudged"] == 1
    assert [p.channel_id for p in poster.posts] == ["t1"]


async def test_the_parent_is_known_after_a_restart(kernel: Any, model: Any) -> None:
    """The thread's parent is stored with its knowledge settings: another process (or this
    one after a restart) that never saw a message there still holds the nudge."""
    from gigi_knowledge.service import service_of

    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel, channel="t1")
    model.always("classify", classify())
    model.on(
        "extract",
        _cites_focus(actions=[action("Review the API", [], owner="u1", deadline="2020-01-03")]),
    )
    await publish(kernel, _in_thread("Tom reviews the API by Friday"))
    (row,) = await rows(kernel, "knowledge_channels", "channel_id = 't1'")
    assert row.parent_id == "c1"
    svc = service_of(kernel)
    svc.channels.clear()
    await svc.reload()  # as a fresh process reads it
    await kernel.channels.set("g1", "c1", "secure", by="admin")
    assert (await _run(kernel, "knowledge.staleness"))["nudged"] == 0
    assert poster.posts == []


async def test_no_contradiction_note_in_a_thread_whose_parent_is_secure(
    kernel: Any, model: Any
) -> None:
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel, channel="t1")
    model.always("classify", classify())
    model.on(
        "extract",
        _cites_focus(decisions=[decision("Deploys happen on friday afternoons", [])]),
        _cites_focus(decisions=[decision("Deploys never happen on friday afternoons", [])]),
    )
    model.on("contradiction", {"contradicts": True})
    await publish(kernel, _in_thread("first"), _in_thread("second"))
    (note,) = await rows(kernel, "knowledge_contradictions")
    async with kernel.db.engine.begin() as conn:
        await conn.execute(sa.text("UPDATE knowledge_decisions SET created_ms = created_ms - :d"),
                           {"d": 31 * 60_000})  # fmt: skip
    await kernel.channels.set("g1", "c1", "secure", by="admin")
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 0
    await kernel.channels.set("g1", "c1", "active", by="admin")
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 1
    assert [p.channel_id for p in poster.posts] == ["t1"]
