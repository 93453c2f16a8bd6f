"""A case's ``setup``: what a surface saw before the request (messages, edits, deletes),
direct calls and job runs — so cases can prove what observing plugins keep and drop.

Events go through ``kernel.publish`` exactly as a surface's would, and every step waits
until the observers handled them, so the next step (and the canary scan) sees their effect.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from unittest import mock

from gigi_core.errors import GigiError
from gigi_core.evalharness.models import Case, SetupCall, SetupStep
from gigi_core.events import MessageCreated, MessageDeleted, MessageEdited
from gigi_core.policy.actor import Actor

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``2h`` or ``40d`` (validated by the case model)."""
    return timedelta(**{_UNITS[text[-1]]: int(text[:-1])})


def _created(step: SetupStep, guild_id: str) -> MessageCreated:
    spec = step.message
    assert spec is not None
    direct = spec.kind in ("dm", "group_dm")
    when = datetime.now(UTC) - (duration(spec.ago) if spec.ago else timedelta(0))
    return MessageCreated(
        guild_id=None if direct else guild_id,
        message_id=spec.id,
        channel_id=spec.channel,
        parent_channel_id=spec.parent,
        channel_kind=spec.kind,
        author_id=spec.author,
        author_is_bot=spec.bot,
        created_at=when,
        text=spec.text,
        mentioned_user_ids=tuple(spec.mentions),
    )


def event_of(step: SetupStep, guild_id: str) -> Any:
    """The surface event a message, edit or delete step stands for (None for the others)."""
    if step.message is not None:
        return _created(step, guild_id)
    if step.edit is not None:
        return MessageEdited(
            guild_id=guild_id,
            message_id=step.edit.id,
            channel_id=step.edit.channel,
            parent_channel_id=step.edit.parent,
            text=step.edit.text,
            edited_at=datetime.now(UTC),
        )
    if step.delete is not None:
        return MessageDeleted(
            guild_id=guild_id,
            channel_id=step.delete.channel,
            parent_channel_id=step.delete.parent,
            message_ids=tuple(step.delete.ids),
        )
    return None


@contextmanager
def clock_ahead(delta: timedelta) -> Iterator[None]:
    """``time.time`` runs ``delta`` ahead meanwhile (``datetime.now`` and the monotonic
    clock do not: job scheduling and timeouts keep real time)."""
    real = time.time
    seconds = delta.total_seconds()
    with mock.patch("time.time", lambda: real() + seconds):
        yield


async def run_setup(kernel: Kernel, case: Case) -> list[str]:
    """Run every setup step in order; the problems found (a failing step stops the rest)."""
    for index, step in enumerate(case.setup, 1):
        label = step.label(index)
        try:
            event = event_of(step, case.guild.id)
            if event is not None:
                await kernel.publish(event)
                await kernel.events.drain()
            elif step.call is not None:
                problems = await _call(kernel, case, step.call)
                if problems:
                    return [f"{label}: {p}" for p in problems]
            elif step.jobs is not None:
                for name in step.jobs.defer:
                    await kernel.jobs.defer(name, {})
                if step.jobs.clock_ahead:
                    with clock_ahead(duration(step.jobs.clock_ahead)):
                        await kernel.jobs.run_until_idle()
                else:
                    await kernel.jobs.run_until_idle()
        except GigiError as exc:
            return [f"{label}: {type(exc).__name__}: {exc}"]
    return []


async def _call(kernel: Kernel, case: Case, call: SetupCall) -> list[str]:
    spec = case.actor(call.actor)
    actor = Actor(spec.id, frozenset(spec.roles), spec.admin, spec.name)
    outcome = await kernel.call_tool(
        call.action, call.args, actor=actor, guild_id=case.guild.id, channel_id=call.channel
    )
    result = outcome.result if isinstance(outcome.result, dict) else {}
    return [
        f"result {key}: expected {want!r}, got {result.get(key)!r}"
        for key, want in call.result.items()
        if result.get(key) != want
    ]
