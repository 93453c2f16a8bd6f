"""Step 1: tables on both backends, /knowledge enable|disable|status|context, and the gate
(only enabled, active channels reach the pipeline)."""

from __future__ import annotations

from typing import Any

import pytest
from knowledge_fakes import classify
from knowledge_helpers import ALICE, call, enable, message, publish, rows

from gigi_core import ToolError


async def test_no_table_has_a_text_column_for_messages(kernel: Any) -> None:
    from gigi_knowledge import tables

    for table in tables.ALL:  # summaries cite decisions and actions, not messages
        names = {c.name for c in table.columns}
        assert not names & {"text", "content", "raw_message", "message_text", "raw"}, table.name
        if {"summary", "description"} & names and table.name != "knowledge_summaries":
            assert "source_ref" in names, table.name


async def test_enable_status_disable(kernel: Any, model: Any) -> None:
    model.always("classify", classify(high=False, categories=["routine"]))
    before = await call(kernel, "status")
    assert before["knowledge"] == "off" and before["state"] == "active"
    out = await enable(kernel, timezone="Europe/Paris")
    assert out["knowledge"] == "on" and out["timezone"] == "Europe/Paris"
    status = await call(kernel, "status")
    assert status["knowledge"] == "on" and status["counts"]["decisions"] == 0
    await publish(kernel, message("hello there"))
    assert len(model.calls("classify")) == 1
    await call(kernel, "disable", channel="c1")
    await publish(kernel, message("hello again"))
    assert len(model.calls("classify")) == 1  # off: never reaches the pipeline
    assert (await call(kernel, "status"))["knowledge"] == "off"


async def test_bad_timezone_is_refused_naming_the_field(kernel: Any) -> None:
    with pytest.raises(ToolError, match="timezone"):
        await enable(kernel, timezone="Mars/Olympus")


async def test_members_cannot_enable(kernel: Any) -> None:
    with pytest.raises(ToolError):
        await call(kernel, "enable", actor=ALICE, channel="c1")


async def test_paused_and_secure_channels_reach_nothing(kernel: Any, model: Any) -> None:
    from gigi_core.events import ChannelSecured

    model.always("classify", classify(high=False))
    await enable(kernel)
    await kernel.set_channel_state("g1", "c1", "paused", by="admin")
    await publish(kernel, message("during the pause"))
    assert model.calls("classify") == []
    await kernel.set_channel_state("g1", "c1", "active", by="admin")
    await publish(kernel, message("after the pause"))
    assert len(model.calls("classify")) == 1
    svc = kernel.gigi_knowledge
    assert len(svc.windows.snapshot("g1", "c1")) == 2 - 1  # the paused message never arrived
    await kernel.publish(ChannelSecured(guild_id="g1", channel_id="c1", by="admin"))
    await kernel.events.drain()
    assert svc.windows.snapshot("g1", "c1") == ()  # secure drops the window at once


async def test_context_is_set_and_shown(kernel: Any) -> None:
    await enable(kernel)
    out = await call(
        kernel, "context", purpose="Billing migration", type="project", tags="billing, q1"
    )
    assert out["context"]["purpose"] == "Billing migration"
    assert out["context"]["tags"] == ["billing", "q1"]
    shown = await call(kernel, "context")
    assert shown["context"]["type"] == "project"
    (row,) = await rows(kernel, "knowledge_channels")
    assert row.context_updated_by == "admin"
    assert "purpose: Billing migration" in kernel.gigi_knowledge.channel("g1", "c1").context
