"""What a recovered run does first: settle what its dead process left half done.

A call with effects marked in flight is reported to the model as interrupted, never run
again. A confirmation decided (approved or rejected) while the process that resumed the
run died before the call was marked in flight is settled here, so an approval is carried
out exactly once wherever the run's lease lands: the marker is written before a handler
starts, so a state still holding ``awaiting`` means the handler never started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gigi_core.agent.confirmations import ConfirmationError, claim_of
from gigi_core.agent.runs import StepRecord

if TYPE_CHECKING:
    from gigi_core.agent.runner import Runner

INTERRUPTED = "interrupted by a restart; it was not retried"


async def report_interrupted(runner: Runner) -> None:
    """The recovered run's prelude: the in-flight call, then a decided confirmation."""
    state = runner.state
    in_flight = state.in_flight
    if in_flight is not None:
        state.in_flight = None
        runner.calls.tool_result(in_flight, {"error": INTERRUPTED}, is_error=True)
        step = StepRecord("tool", "interrupted", tool=in_flight.get("action"))
        await runner.commit(runner.next_step(), step, "agent.tool")
    if state.awaiting is not None:
        await _settle_decided(runner)


async def _settle_decided(runner: Runner) -> None:
    awaiting = runner.state.awaiting or {}
    confirmations = runner.runtime.confirmations
    try:
        row = await confirmations.get(str(awaiting.get("confirmation_id")))
    except ConfirmationError:
        row = None
    owner = runner.journal.owner
    if row is not None and row.state == "executing":
        # The handler never started (no marker): the approval is still to be carried out.
        await confirmations.move(row.id, "executing", "approved", owner=owner)
        row = await confirmations.get(row.id)
    if row is not None and row.state == "approved":
        await runner.calls.settle_confirmation("approved", claim_of(row))
    elif row is not None and row.state == "rejected":
        await runner.calls.settle_confirmation("rejected")
    else:  # nothing decided it: to be safe it is reported, never run
        runner.state.awaiting = None
        runner.calls.tool_result(awaiting, {"error": INTERRUPTED}, is_error=True)
        step = StepRecord("confirmation", "interrupted", tool=awaiting.get("action"))
        await runner.commit(runner.next_step(), step, "agent.confirmation")
