"""A rejection whose process died before settling it is settled by recovery: the call
never runs, the model hears it was rejected, the reply names it (was a TypeError:
``settle_confirmation`` had no default for the claim recovery does not pass)."""

from __future__ import annotations

import pytest

from gigi_core.agent.calls import CallHandler
from gigi_core.agent.runtime import AgentRuntime
from tests.agent.fenced import USER, Adaptive
from tests.agent.test_run_leases import expire, pair, paused_run

__all__ = ["pair"]  # the fixture, shared with the lease tests


async def test_a_process_dying_after_a_rejection_leaves_it_to_recovery(pair, monkeypatch) -> None:
    (a, fx), (b, _) = pair
    run_id = await paused_run(a)

    async def dies(self, outcome, claim=None):
        raise SystemExit("process B died")

    monkeypatch.setattr(CallHandler, "settle_confirmation", dies)
    with pytest.raises(SystemExit):
        await AgentRuntime(b, model=Adaptive("fx__pay")).reject(run_id, USER)
    monkeypatch.undo()
    await expire(a, run_id)
    reply = await AgentRuntime(a, model=Adaptive("fx__pay")).recover(run_id, USER)
    assert reply.status == "done" and reply.termination_reason == "completed"
    assert fx.calls("pay") == []
    assert reply.refused == ["fx.pay (it was rejected)"]
