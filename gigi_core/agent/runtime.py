"""The agent runtime facade surfaces talk to: handle, direct calls, confirm, reject, cancel, trace."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gigi_core.agent import billing, channels, context_step, followup, vision
from gigi_core.agent.confirmations import ConfirmationError, ConfirmationStore
from gigi_core.agent.contracts import Budgets, ChannelCheck, Reply, Request, new_id
from gigi_core.agent.journal import RunJournal, durability_from
from gigi_core.agent.leases import LeaseHeld, held_message, leases_for
from gigi_core.agent.place_policy import instructions, places_of, purpose_of
from gigi_core.agent.runner import SYSTEM_PROMPT, ModelCaller, Runner
from gigi_core.agent.runs import RunStore, new_run_row
from gigi_core.agent.state import RunState, request_from_json, request_to_json
from gigi_core.agent.toolset import Toolset
from gigi_core.policy.actor import Actor
from gigi_core.policy.view import guild_view
from gigi_core.store.audit import AuditRecord
from gigi_core.tools.context import ChannelLister

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.llm.types import ChatRequest, ChatResponse

log = logging.getLogger(__name__)
NATIVE_PLUGINS = frozenset({"plugins", "permissions", "llm"})
NOTE_CODE = re.compile(r"[a-z][a-z0-9_]{0,31}")  # fits agent_run_steps.status
NOTE_TOOL = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+")


class AgentRuntime:
    """One per kernel (``kernel.agent``); ``model`` replaces the provider call (tests, evals).

    ``durability`` is ``step``, ``turn`` or ``deferred`` (see ``gigi_core.agent.journal``);
    by default ``GIGI_RUN_DURABILITY``, else ``turn``.
    """

    flush_seconds = 0.2  # how long a run's unwritten read-only steps may wait at most

    def __init__(
        self,
        kernel: Kernel,
        *,
        model: ModelCaller | None = None,
        budgets: Budgets | None = None,
        durability: str | None = None,
        history_tokens: int = followup.HISTORY_TOKENS,
    ) -> None:
        self.kernel = kernel
        self.history_tokens = history_tokens  # a follow-up's earlier turns (docs/agent.md)
        self._saving: dict[str, asyncio.Future[Any]] = {}  # exchanges queued, not yet landed
        self.runs = RunStore(kernel)
        self.confirmations = ConfirmationStore(kernel)
        self.budgets = budgets or Budgets()
        self.durability = durability_from(durability or os.environ.get("GIGI_RUN_DURABILITY"))
        self._model = model
        self.leases = leases_for(kernel)  # the kernel's owner: every runtime of it shares it
        self.live: dict[str, RunJournal] = self.leases.live  # runs executing in this process
        self._toolsets: dict[tuple[str, ...], Toolset] = {}
        self._offers: dict[int, tuple[tuple[Any, ...], Toolset]] = {}
        self._unasked_offers: dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
        self._tool_kinds: dict[str | None, str | None] = {}

    async def model(self, request: ChatRequest, origin: Request, run_id: str) -> ChatResponse:
        if self._model is not None:
            return await self._model(request, origin, run_id)
        if origin.images:  # the pictures join this call only (``gigi_core.agent.vision``)
            return await vision.call(
                self, request, origin, dm=billing.is_dm(origin), places=places_of(origin)
            )
        return await self.kernel.llm.chat(
            request,
            guild_id=origin.guild_id,
            actor=origin.actor,
            channel_id=origin.channel_id,
            purpose=purpose_of(request, origin),  # reasoning plans, respond answers
            places=places_of(origin),  # the place policies of where it was asked
            dm=billing.is_dm(origin),
            billing=origin.billing or "auto",  # decided by ``billing.decide`` in ``handle``
            request_id=origin.request_id,
            durability=self.durability,  # the usage row rides with the run's own writes
        )

    # -- entry points --------------------------------------------------------------------

    async def handle(self, request: Request) -> Reply:
        """A conversational request: the model loop over the tools this actor may use."""
        view = await guild_view(self.kernel, request.actor, request.guild_id)
        actions = await self.kernel.policy.offerable(request.actor, request.guild_id, view)
        persona = request.persona
        if persona is not None and not persona.offer_confirmable:
            actions = self._unasked(actions)
        toolset = self._toolset(actions)
        paying = await billing.decide(self.kernel, request, places_of(request))
        request = replace(request, billing=paying.billing)
        conversation = await followup.load(self.kernel, request, self._saving)
        mode = request.context or context_step.default_mode(self.kernel, view.enabled)
        # Billed to a member's key that has not been cleared for this guild: no guild
        # context, and no earlier turns (they can hold other members' words and answers).
        voiced = persona.history if persona else ()  # the ambient voice's channel messages
        placed = await instructions(self.kernel, request)  # the admins' words for this place
        withheld = paying.withheld and (
            mode != "none"
            or conversation is not None
            or bool(toolset.by_wire)
            or bool(voiced)
            or bool(placed)
        )
        if withheld:  # the guild's tools return guild context (memory, knowledge, members)
            toolset = Toolset()
        pack = None if withheld else await context_step.gather(self.kernel, request, view.enabled)
        earlier = [] if withheld else followup.history(conversation, pack, self.history_tokens)
        messages = [
            {"role": "system", "content": persona.system if persona else SYSTEM_PROMPT},
            *(() if withheld else placed),  # the place's, below the rules
            *(m.model_dump(mode="json") for m in (() if withheld else voiced)),
            *earlier,
            {"role": "user", "content": context_step.prompt_text(request, pack)},
        ]
        exchange = followup.exchange(request, conversation)
        state, journal = await self._start(
            request, "agent", toolset, messages=messages, exchange=exchange
        )
        if pack is not None:
            await context_step.save(self.kernel, state.run_id, request, pack)
        runner = Runner(self, state, request, self.budgets, journal, view, toolset)
        if pack is not None and pack.answer is not None and not _structured(request):
            try:  # decided by code (a knowledge question with no record): no model call
                reply = await runner.finish("done", "no_record", pack.answer)
            finally:
                journal.stop()
            return self._remember(runner, reply)
        reply = await runner.run()
        if pack is not None:
            reply.sources = {str(n): c.url for n, c in pack.citations.items() if c.url}
        if withheld:
            reply.disclosure = billing.DISCLOSURE_NOTE
        return self._remember(runner, reply)

    async def direct(self, request: Request, action: str, args: Any) -> Reply:
        """An exact command (``/call``, a slash command, ``gigi tools call``): no model at all."""
        spec = self.kernel.registry.actions.get(action)
        toolset = Toolset.build([spec]) if spec else Toolset()
        call = {"id": new_id("call"), "name": action, "arguments": args, "parse_error": None}
        state, journal = await self._start(request, "direct", toolset, pending=[call])
        return await Runner(self, state, request, self._direct_budgets(), journal).run()

    async def confirm(
        self,
        run_id: str,
        actor: Actor,
        *,
        channel_visible: ChannelCheck | None = None,
        guild_id: str | None = None,
        visible_channels: ChannelLister | None = None,
    ) -> Reply:
        """Approve the run's pending call; exactly one approval ever executes it.

        When the requester approves, the policy decides again with who they are *now*
        (roles, admin flag) and with the surface's current channel check; the tool sees
        the channels the requester may view now.
        """
        await self._same_guild(run_id, guild_id)
        row = await self.confirmations.pending_for_run(run_id)
        try:
            claim = await self.confirmations.claim(row.id, actor)
        except ConfirmationError:
            await self._end_if_expired(row.id)
            raise
        try:
            runner = await self._runner(run_id, take=("awaiting_confirmation",))
        except ConfirmationError:  # nobody resumed it: the approval can be given again
            await self.confirmations.move(row.id, "approved", "pending")
            raise
        if actor.id == row.requester_id:
            runner.request = replace(
                runner.request,
                actor=actor,
                channel_visible=channel_visible,
                visible_channels=visible_channels,
            )
        elif channel_visible is not None:
            # Another approver's view is not the requester's: the rest of the run reads only
            # what the requester was checked for (its channel, the approved call's), and of
            # that only what the approver may read now; tools see no approver's channel list.
            assert runner.vouched is not None
            narrowed = channels.within(runner.vouched, channel_visible)
            runner.request = replace(runner.request, channel_visible=narrowed)
        return self._remember(runner, await runner.resume("approved", claim))

    async def _end_if_expired(self, confirmation_id: str) -> None:
        """An expired confirmation ends its run: nothing can resume it any more."""
        row = await self.confirmations.get(confirmation_id)
        if row.state != "expired":
            return
        run = await self.runs.get(row.run_id)
        if run.status == "awaiting_confirmation":
            audit = AuditRecord(
                kind="agent.answer",
                status="expired",
                actor_id=run.actor_id,
                guild_id=run.guild_id,
                channel_id=run.channel_id,
                run_id=run.id,
                termination_reason="confirmation_expired",
            )
            await self.runs.finish(run.id, "done", "confirmation_expired", audit)

    async def decide(
        self,
        confirmation_id: str,
        actor: Actor,
        *,
        approve: bool,
        channel_visible: ChannelCheck | None = None,
        guild_id: str | None = None,
        visible_channels: ChannelLister | None = None,
    ) -> Reply:
        """Confirm or reject by confirmation id (what a button carries in its custom id)."""
        row = await self.confirmations.get(confirmation_id)
        latest = await self.confirmations.pending_for_run(row.run_id)
        if latest.id != confirmation_id:
            raise ConfirmationError("this confirmation was replaced by a newer one")
        if approve:
            return await self.confirm(
                row.run_id,
                actor,
                channel_visible=channel_visible,
                guild_id=guild_id,
                visible_channels=visible_channels,
            )
        return await self.reject(row.run_id, actor, guild_id=guild_id)

    async def reject(self, run_id: str, actor: Actor, *, guild_id: str | None = None) -> Reply:
        await self._same_guild(run_id, guild_id)
        row = await self.confirmations.pending_for_run(run_id)
        run = await self.runs.get(run_id)
        if run.status != "awaiting_confirmation":
            raise ConfirmationError(f"run {run_id} is {run.status}, not waiting for a confirmation")
        try:
            await self.confirmations.reject(row.id, actor)
        except ConfirmationError:
            await self._end_if_expired(row.id)
            raise
        runner = await self._runner(run_id, take=("awaiting_confirmation",))
        return self._remember(runner, await runner.resume("rejected"))

    async def cancel(self, run_id: str, actor: Actor, *, guild_id: str | None = None) -> bool:
        await self._same_guild(run_id, guild_id)
        run = await self.runs.get(run_id)
        if actor.id != run.actor_id and not actor.is_admin:
            raise ConfirmationError(
                "only the person who started a run, or a server admin, can cancel it"
            )
        cancelled = await self.runs.cancel(run_id)
        if run_id in self.live:  # a run executing here stops at its next step
            self.live[run_id].cancelled = True
        if cancelled:
            await self.audit(
                request_from_json_minimal(run),
                run_id,
                "agent.answer",
                status="cancelled",
                termination_reason="cancelled",
            )
        return cancelled

    async def note(self, run_id: str, status: str, *, tool: str | None = None) -> None:
        """A plugin's metadata-only note on a run's trace (``gigi agent trace`` shows it as a
        ``note`` step): what code did after the run, e.g. ``no_implementation``."""
        bad_tool = tool is not None and (len(tool) > 128 or not NOTE_TOOL.fullmatch(tool))
        if not NOTE_CODE.fullmatch(status) or bad_tool:
            raise ValueError("a trace note is a short code (a-z, 0-9, _) and an action name")
        await self.runs.note(run_id, tool=tool, status=status)

    async def trace(self, run_id: str) -> dict[str, Any]:
        data = await self.runs.trace(run_id)
        context = await context_step.trace_of(self.kernel, run_id)
        if context is not None:
            data["context"] = context
        return data

    # -- internals -----------------------------------------------------------------------

    def _remember(self, runner: Runner, reply: Reply) -> Reply:
        """An answered conversational run keeps its exchange for a reply to it (followup);
        queued, so the reply does not wait for it."""
        run_id = reply.run_id
        if reply.status != "done" or runner.state.mode != "agent" or not run_id:
            return reply
        try:
            queued = followup.save(self.kernel, runner.state, runner.request, reply.text)
        except Exception:  # the answer stands; a reply to it starts a new conversation
            log.exception("run %s: its exchange could not be kept", run_id)
            return reply
        if queued is not None and not queued.done():
            self._saving[run_id] = queued
            queued.add_done_callback(lambda _: self._saving.pop(run_id, None))
        return reply

    async def _start(
        self, request: Request, mode: str, toolset: Toolset, **fields: Any
    ) -> tuple[RunState, RunJournal]:
        """A new run's state; its row is written when it first waits (at once with ``step``)."""
        state = RunState(
            run_id=new_id("run"),
            mode=mode,
            request=request_to_json(request),
            tools=toolset.names(),
            **fields,
        )
        row = new_run_row(
            state.run_id,
            request.request_id,
            request.kind if mode == "agent" else "direct",
            request.actor.id,
            request.guild_id,
            request.channel_id,
        )
        journal = self._journal(state.run_id, create=row)
        journal.record(state)
        if self.durability == "step":
            await journal.flush()
        return state, journal

    def _toolset(self, actions: tuple[Any, ...]) -> Toolset:
        """The same offer builds the same toolset (and its tool models) once. The policy's
        cached offer is found by identity first, so a turn never reads every tool name."""
        same = self._offers.get(id(actions))
        if same is not None and same[0] is actions:
            return same[1]
        key = tuple(a.name for a in actions)
        toolset = self._toolsets.get(key)
        if toolset is None:
            if len(self._toolsets) > 1024:
                self._toolsets.clear()
            toolset = self._toolsets[key] = Toolset.build(list(actions))
        if len(self._offers) > 1024:
            self._offers.clear()
        self._offers[id(actions)] = (actions, toolset)  # the tuple is kept: its id stays valid
        return toolset

    def _unasked(self, actions: tuple[Any, ...]) -> tuple[Any, ...]:
        """The offer without actions whose manifest asks for a confirmation; kept per offer,
        so ``_toolset`` still finds it by identity."""
        same = self._unasked_offers.get(id(actions))
        if same is not None and same[0] is actions:
            return same[1]
        if len(self._unasked_offers) > 1024:
            self._unasked_offers.clear()
        kept = tuple(a for a in actions if not a.needs_confirmation)
        self._unasked_offers[id(actions)] = (actions, kept)
        return kept

    def _journal(self, run_id: str, **kwargs: Any) -> RunJournal:
        self.leases.watch()  # the heartbeat keeps live runs' leases while they go on
        return RunJournal(
            self.kernel.db.writer,
            self.kernel.state_sealer,
            run_id,
            durability=self.durability,
            flush_seconds=self.flush_seconds,
            owner=self.leases.owner,
            lease_seconds=self.leases.lease_seconds,
            **kwargs,
        )

    async def _runner(self, run_id: str, *, take: tuple[str, ...]) -> Runner:
        """A runner for a stored run, once this process holds it (see ``leases.acquire``).

        The run is reserved before the first await and stays so until the caller starts the
        runner (which puts it in ``live`` before it awaits anything): two recoveries here at
        once must not both take a run ``acquire`` sees as this process's own.
        """
        if run_id in self.live or run_id in self.leases.taking:
            raise ConfirmationError(f"run {run_id} is still running here; nothing was done")
        self.leases.taking.add(run_id)
        try:
            await self.leases.acquire(run_id, take)
            stored, status = await self.runs.load(run_id)
        except LeaseHeld as held:
            raise ConfirmationError(held_message(run_id, held)) from None
        finally:
            self.leases.taking.discard(run_id)
        state = RunState.from_json(stored)
        request = request_from_json(state.request)
        budgets = self.budgets if state.mode == "agent" else self._direct_budgets()
        journal = self._journal(run_id, stored_status=status)
        runner = Runner(self, state, request, budgets, journal)
        runner.vouched = _vouched(self.kernel, state, request)
        return runner

    async def _same_guild(self, run_id: str, guild_id: str | None) -> None:
        """A surface passes its guild: an admin there is no admin of another guild's run."""
        if guild_id is not None and (await self.runs.get(run_id)).guild_id != guild_id:
            raise ConfirmationError(f"run {run_id} belongs to another server")

    def _direct_budgets(self) -> Budgets:
        """An exact command gets no second chances: bad input is the caller's error."""
        return replace(self.budgets, max_retries_per_tool=0, max_invalid_calls=0)

    def tool_kind_of(self, action: str | None) -> str | None:
        """``native`` for the kernel's default plugins, ``plugin`` for everything installed."""
        if action in self._tool_kinds:
            return self._tool_kinds[action]
        spec = self.kernel.registry.actions.get(action or "")
        kind = None
        if spec is not None:
            record = self.kernel.registry.owner_of(spec.plugin)
            kind = "native" if record is not None and record.source == "default" else "plugin"
        self._tool_kinds[action] = kind
        return kind

    async def recover(self, run_id: str, actor: Actor) -> Reply:
        """Continue a run left ``running`` by a crashed process (an operator's decision)."""
        run = await self.runs.get(run_id)
        if run.status != "running" or run_id in self.live:
            status = "still running here" if run_id in self.live else run.status
            raise ConfirmationError(
                f"run {run_id} is {status}; only an interrupted run can be recovered"
            )
        if actor.id != run.actor_id and not actor.is_admin:
            raise ConfirmationError(
                "only the person who started a run, or a server admin, can recover it"
            )
        runner = await self._runner(run_id, take=("running",))
        return self._remember(runner, await runner.recover())

    async def audit(self, request: Request, run_id: str, kind: str, **fields: Any) -> None:
        record = AuditRecord(
            kind=kind,
            actor_id=request.actor.id,
            guild_id=request.guild_id,
            channel_id=request.channel_id,
            run_id=run_id,
            **{"status": "ok", **fields},
        )
        await self.kernel.audit.record(record)
        await self.kernel.track(
            kind, run_id=run_id, status=record.status, guild_id=request.guild_id
        )


def request_from_json_minimal(run: Any) -> Request:
    return Request(
        actor=Actor(run.actor_id),
        guild_id=run.guild_id,
        channel_id=run.channel_id,
        kind="direct",
        text="",
    )


def _vouched(kernel: Kernel, state: RunState, request: Request) -> frozenset[str]:
    """The channels a stored run's asker was checked for: its own, and those its pending
    call named, which passed the asker's channel and audience checks when it was proposed."""
    own = request.channel_id
    found = {own} if own is not None else set()
    awaiting = state.awaiting or {}
    spec = kernel.registry.actions.get(str(awaiting.get("action") or ""))
    if spec is not None:
        named, implied = channels.of_call(spec, awaiting.get("arguments"), own)
        found.update(named, implied)
    return frozenset(found)


def _structured(request: Request) -> bool:
    """A persona that wants structured output gets it from the model, never a fixed text."""
    return request.persona is not None and request.persona.output is not None
