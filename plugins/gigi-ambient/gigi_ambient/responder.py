"""One message through the persona: history, the agent run with the envelope, the decision.

The model proposes an envelope; this module (and ``envelope.decide``) decides what is
posted, where, and whether staff hear of it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gigi_ambient import prompt
from gigi_ambient.attempts import AmbientError, AttemptFailed
from gigi_ambient.budget import BudgetReached, most_of_run, prompt_tokens
from gigi_ambient.envelope import NAME, SCHEMA, Delivery, Envelope, decide, named_channel
from gigi_ambient.history import Entry, History

if TYPE_CHECKING:
    from gigi_ambient.service import AmbientService
    from gigi_core.events import MessageCreated

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settings:
    """The guild's plugin config with its defaults filled in."""

    staff_channel: str | None = None
    history_limit: int = 20
    history_per_channel: int = 3
    short_path: tuple[tuple[str, str], ...] = ()
    calls_per_minute: int = 6
    daily_token_budget: int = 200_000
    tool_rounds: int = 4
    name: str | None = None
    precheck: bool = False
    context: str = "none"
    tool_reasoning_effort: str = "none"
    picture_action: str | None = None
    picture_tokens: int = 5000
    answer_tokens: int = 1000  # output tokens reserved per model call (the budget's hold)
    persist_history: bool = False
    history_retention_days: int = 7

    @classmethod
    def from_config(cls, config: Any) -> Settings:
        data = dict(config or {})
        rules = tuple((str(a), str(b)) for a, b in data.pop("short_path", []) or [])
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(short_path=rules, **known)


def short_path_match(settings: Settings, channel_id: str, author_id: str) -> bool:
    """A ``[channel-regex, user-regex]`` pair matching both ids (a bad regex never does)."""
    for channel_rx, user_rx in settings.short_path:
        try:
            if re.search(channel_rx, channel_id) and re.search(user_rx, author_id):
                return True
        except re.error:
            log.warning("ambient: a short_path rule is not a valid regular expression")
    return False


def entry_of(event: MessageCreated) -> Entry:
    return Entry(
        event.channel_id, "user", event.author_id, event.text, event.message_id,
        at=event.created_at,
    )  # fmt: skip


class Responder:
    """Answers one message of an ambient channel; the service serialises calls per channel."""

    def __init__(self, service: AmbientService) -> None:
        self.service = service
        self.kernel = service.kernel

    def is_direct(self, event: MessageCreated, settings: Settings) -> bool:
        """A reply to one of the persona's answers, or a message naming the persona."""
        if event.reply_to_id and event.reply_to_id in self.service.answered(event.channel_id):
            return True
        name = (settings.name or "").strip()
        return bool(name) and re.search(rf"\b{re.escape(name)}\b", event.text, re.I) is not None

    async def respond(
        self, event: MessageCreated, persona_text: str, settings: Settings
    ) -> Delivery | None:
        """The decided delivery, or None when the pre-check said no answer is needed.

        Raises ``AmbientError`` after three failed attempts (or at once when no model is
        configured), with the history left as it was plus the question.
        """
        guild = event.guild_id or ""
        history = self.service.history(guild)
        history.trim(settings.history_limit, settings.history_per_channel)  # before
        direct = self.is_direct(event, settings)
        earlier = self._earlier(history, event.channel_id)
        history.append(entry_of(event))
        try:
            if settings.precheck and not direct and not await self._precheck(event, settings):
                self.service.count(guild, silences=1)
                return None
            envelope, run_id, actor = await self._envelope(
                event, persona_text, settings, earlier, direct
            )
        finally:
            history.trim(settings.history_limit, settings.history_per_channel)
        here = event.channel_id
        allowed = await self._allowed_channel(event, named_channel(envelope.channel))
        delivery = decide(envelope, direct=direct, here=here, allowed_channel=allowed)
        delivery = replace(delivery, run_id=run_id, actor=actor)
        if delivery.answer is not None:
            answer = Entry(
                delivery.channel_id, "assistant", "self", delivery.answer, at=self.service.clock()
            )
            history.append(answer)
        history.trim(settings.history_limit, settings.history_per_channel)  # after
        return delivery

    def _earlier(self, history: History, channel_id: str) -> tuple[Any, ...]:
        """This channel's turns only: another channel's messages never reach this answer."""
        from gigi_core.llm import AssistantMessage, UserMessage

        turns: list[Any] = []
        for e in history.of_channel(channel_id):
            if e.role == "assistant":
                turns.append(AssistantMessage(content=e.text))
            else:
                text = prompt.user_turn(e.author_id, e.channel_id, e.text, direct=False)
                turns.append(UserMessage(content=text))
        return tuple(turns)

    async def _envelope(
        self,
        event: MessageCreated,
        persona_text: str,
        settings: Settings,
        earlier: tuple[Any, ...],
        direct: bool,
    ) -> tuple[Envelope, str | None, Any]:
        """The validated envelope, the run that gave it, and the actor it ran as."""
        from gigi_core import Actor
        from gigi_core.llm import NothingToResolve, StructuredOutput
        from gigi_core.surfaces import Persona, Request

        guild = event.guild_id or ""
        try:
            # the profile the run's model call will use (``respond``, else ``chat``)
            resolution = await self.kernel.llm.resolve(guild, "respond", event.author_id)
        except NothingToResolve as exc:
            raise AmbientError(str(exc), reasons=("no_provider",)) from None
        provider = self.kernel.llm.provider(resolution.provider)
        on_wire = bool(provider.supports.structured_output)
        # the profile's effort, else the plugin's default ("none"; "omit": nothing)
        effort = (resolution.params or {}).get("reasoning_effort") or settings.tool_reasoning_effort
        if effort == "omit":
            effort = None
        now = self.service.clock()
        persona = Persona(
            system=prompt.system_message(persona_text, now, schema_in_prompt=not on_wire),
            history=earlier,
            output=StructuredOutput(schema=SCHEMA, name=NAME, strict=True),
            output_on_wire=on_wire,
            tool_rounds=settings.tool_rounds,
            tool_reasoning_effort=effort,
            offer_confirmable=False,  # nobody is there to confirm a call
        )
        text = prompt.user_turn(
            event.author_id, event.channel_id, event.text, direct=direct, reply_to=event.reply_to_id
        )
        # Who the author is now (roles, admin flag, what they may read) from the surface;
        # when no surface here can tell, the narrowest actor, who reads nothing.
        view = await self.kernel.outbox.member(guild, event.author_id, shown_in=event.channel_id)
        actor = view.actor if view is not None else Actor(id=event.author_id)
        request = Request(
            actor=actor,
            channel_visible=view.channel_visible if view is not None else None,
            visible_channels=view.visible_channels if view is not None else None,
            guild_id=guild,
            channel_id=event.channel_id,
            kind="ambient",
            text=text,
            message_ids=(event.message_id,),
            context=settings.context,  # the broker's blocks go in the user turn, never the prefix
            persona=persona,
        )

        # The most this run may cost, held against the day's budget before each attempt.
        most = most_of_run(
            settings, persona.system, json.dumps(SCHEMA), text, *(str(m.content) for m in earlier)
        )

        async def attempt(n: int) -> tuple[Envelope, str | None]:
            async with self.service.budget.spend(guild, settings.daily_token_budget, most) as s:
                reply = await self.service.runtime.handle(request)
                s.used = reply.tokens_in + reply.tokens_out
            if reply.termination_reason == "budget_exhausted":  # another try cannot fit
                raise BudgetReached(
                    reply.text or "a model budget is spent",
                    hint="`gigi llm budget show --guild G` shows which and when it resets",
                    reasons=("budget_exhausted",),
                )
            self.service.count(guild, calls=1)
            if reply.status == "done" and isinstance(reply.output, dict):
                return Envelope.from_output(reply.output), reply.run_id
            if reply.status == "awaiting_confirmation":
                raise await self._cancel_paused(reply.run_id, actor, guild)
            raise AttemptFailed(reply.termination_reason or reply.status, reply.text)

        envelope, run_id = await self.service.backoff.run(attempt)
        return envelope, run_id, actor

    async def _cancel_paused(self, run_id: str | None, actor: Any, guild: str) -> AmbientError:
        """A run paused for a confirmation nobody is shown (a plugin's policy asked for one)
        is cancelled now, which drops its sealed state; the error ends the message's
        attempts at once (another attempt would ask again)."""
        if run_id is not None:
            await self.service.runtime.cancel(run_id, actor, guild_id=guild)
        return AmbientError(
            "the persona's run asked for a confirmation, which nobody can give here; "
            "it was cancelled",
            hint="a plugin's policy (check_tool_call) asked to confirm a call the persona "
            "made; `gigi agent trace RUN` shows which",
            reasons=("needs_confirmation",),
        )

    async def _precheck(self, event: MessageCreated, settings: Settings) -> bool:
        """The ``routing`` profile's cheap yes/no; without one (or on any failure), yes."""
        from gigi_core.llm import ChatRequest, StructuredOutput, SystemMessage, UserMessage

        schema = {
            "type": "object",
            "properties": {"answer_needed": {"type": "boolean"}},
            "required": ["answer_needed"],
            "additionalProperties": False,
        }
        request = ChatRequest(
            model="routing",
            messages=[
                SystemMessage(content="Does this chat message need a reply from the bot?"),
                UserMessage(
                    content=prompt.user_turn(event.author_id, "", event.text, direct=False)
                ),
            ],
            structured_output=StructuredOutput(schema=schema, name="precheck"),
            max_output_tokens=20,
        )
        guild = event.guild_id or ""
        most = prompt_tokens(*(str(m.content) for m in request.messages), json.dumps(schema)) + 20
        async with self.service.budget.spend(guild, settings.daily_token_budget, most) as spend:
            try:
                reply = await self.kernel.llm.chat(
                    request, guild_id=event.guild_id, actor=event.author_id, purpose="routing"
                )
                spend.used = _tokens(reply)
                return bool(json.loads(reply.text or "{}").get("answer_needed", True))
            except Exception as exc:  # no routing profile, a provider failure, bad JSON: ask
                log.info("ambient pre-check skipped (%s)", type(exc).__name__)
                return True

    async def _allowed_channel(self, event: MessageCreated, named: str | None) -> str | None:
        """A channel the model names must be one the bot may post in and the asker
        may see, and whose readers may all read the message's channel (the answer comes
        from its history); otherwise (or when nobody can tell) the message's own channel."""
        if named is None or named == event.channel_id or event.guild_id is None:
            return None
        service = self.service
        may = await service.may_move(event.guild_id, event.channel_id, named, event.author_id)
        if may is not True:
            return None
        return named if await service.poster.can_post(event.guild_id, named) else None


def _tokens(reply: Any) -> int:
    usage = reply.usage
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


def utcnow() -> datetime:
    return datetime.now(UTC)
