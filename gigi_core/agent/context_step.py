"""The context a conversational run starts with: the broker's pack, kept for trace and follow-up.

The pack goes to the model inside the user's turn (it is data quoted from the guild, never
part of the system prompt); its trace (ids and counts only) and restore state are stored
per run, so ``/agent trace`` shows what was kept and dropped and a follow-up run in the same
conversation sends unchanged items as one ``unchanged:`` line.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from gigi_core.store.agent_tables import AgentRun, AgentRunContext

if TYPE_CHECKING:
    from gigi_core.agent.contracts import Request
    from gigi_core.context.pack import ContextPack
    from gigi_core.kernel import Kernel

log = logging.getLogger(__name__)


def default_mode(kernel: Kernel, enabled: frozenset[str]) -> str:
    """``auto`` once a plugin with a retrieval path (memory, knowledge) is enabled in the
    guild, else ``none``: a guild that opted into nothing gets no context it did not ask for."""
    from gigi_core.retrieval.engine import owner_plugin, retrievers_of

    for name, retriever in retrievers_of(kernel).items():
        if owner_plugin(kernel, name, retriever) in enabled:
            return "auto"
    return "none"


async def gather(kernel: Kernel, request: Request, enabled: frozenset[str]) -> ContextPack | None:
    """The pack for ``request.context`` (None there: the guild's default, ``default_mode``)."""
    mode = request.context or default_mode(kernel, enabled)
    if mode == "none":
        return None
    from gigi_core.context import build_context

    listed = await request.visible_channels() if request.visible_channels else None
    if listed is None:  # the surface cannot tell: only the channel the request came from
        here = request.channel_id
        readable = here is not None and (
            request.channel_visible is None or await request.channel_visible(here)
        )
        listed = frozenset({here}) if readable and here else frozenset()
    previous = await previous_state(kernel, request)
    try:
        return await build_context(
            kernel,
            actor=request.actor,
            guild_id=request.guild_id,
            channel_id=request.channel_id,
            visible_channels=frozenset(listed),
            text=request.text,
            mode=mode,
            previous=previous,
        )
    except Exception:  # the question is still answered, without context
        log.exception("context broker failed; answering without context")
        return None


def prompt_text(request: Request, pack: ContextPack | None) -> str:
    """The user's turn: the pack's quoted context first, then the question (its heading
    is the pack's ``## User's Question``)."""
    return pack.prompt(request.text) if pack is not None else request.text


async def save(kernel: Kernel, run_id: str, request: Request, pack: ContextPack) -> None:
    async with kernel.db.session() as s:
        s.add(
            AgentRunContext(
                run_id=run_id,
                guild_id=request.guild_id,
                actor_id=request.actor.id,
                trace_json=json.dumps(pack.trace(), default=str),
                state_json=json.dumps(pack.state.to_dict()),
            )
        )


async def previous_state(kernel: Kernel, request: Request) -> dict[str, Any] | None:
    """The earlier run's pack state, only for the same member in the same guild and channel."""
    if not request.follows_run:
        return None
    async with kernel.db.session() as s:
        row = await s.get(AgentRunContext, request.follows_run)
        run = await s.scalar(select(AgentRun).where(AgentRun.id == request.follows_run))
    if row is None or row.guild_id != request.guild_id or row.actor_id != request.actor.id:
        return None
    if run is not None and run.channel_id != request.channel_id:
        return None
    return json.loads(row.state_json)


async def trace_of(kernel: Kernel, run_id: str) -> dict[str, Any] | None:
    async with kernel.db.session() as s:
        row = await s.get(AgentRunContext, run_id)
    return json.loads(row.trace_json) if row is not None else None
