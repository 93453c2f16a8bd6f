"""Surface-independent request and reply. Surfaces render replies; the runtime imports no surface."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from gigi_core.policy.actor import Actor
from gigi_core.tools.context import ChannelLister

if TYPE_CHECKING:
    from gigi_core.agent.vision import AttachedImage
    from gigi_core.llm.channel_policy import Place
    from gigi_core.llm.types import Message, ReasoningEffort, StructuredOutput

RequestKind = Literal["mention", "slash", "dm", "console", "ambient", "direct"]
ChannelCheck = Callable[[str], Awaitable[bool]]


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


@dataclass(frozen=True)
class Persona:
    """A plugin's own voice for one run (the ambient responder): its system text instead of
    Gigi's, earlier turns before the user's, and a structured output every model call asks
    for (tool follow-ups included) and the runner validates before the reply carries it.

    ``output_on_wire`` False: the provider has no strict schema support, so the schema is in
    ``system`` and only validated here. ``tool_rounds``: model calls that may use tools;
    the next one is made without tools, so the run ends with an answer.
    ``tool_reasoning_effort`` is sent on calls that offer tools (tool-less calls keep the
    profile's own settings). ``offer_confirmable`` False: actions whose manifest asks for a
    confirmation are not offered (nobody is there to give one).
    """

    system: str
    history: tuple[Message, ...] = ()
    output: StructuredOutput | None = None
    output_on_wire: bool = True
    tool_rounds: int | None = None
    tool_reasoning_effort: ReasoningEffort | None = None
    offer_confirmable: bool = True


@dataclass(frozen=True)
class Request:
    """What a surface saw: who, where, what. ``text`` is untrusted input for the model only."""

    actor: Actor
    guild_id: str
    channel_id: str | None
    kind: RequestKind
    text: str
    message_ids: tuple[str, ...] = ()
    channel_visible: ChannelCheck | None = None  # may this actor view a given channel?
    visible_channels: ChannelLister | None = None  # every channel this actor may view now
    forced_tool: str | None = None  # an action the first model call must use
    # What context the broker adds (none|channel|memory|knowledge|catalog|auto); None: the
    # guild's default (auto once a plugin with a retrieval path is enabled there, else none).
    context: str | None = None
    follows_run: str | None = None  # the run this request follows up in one conversation
    persona: Persona | None = None  # a plugin's system text and structured output
    request_id: str = field(default_factory=lambda: new_id("req"))
    # Pictures the member attached, checked by the surface: memory only, never persisted
    # (``gigi_core.agent.vision``); a run resumed after a restart continues without them.
    images: tuple[AttachedImage, ...] = field(default=(), repr=False)
    # Where it was asked, nearest first (thread, its channel or forum, that one's category),
    # as the surface knows it: the place's LLM policies apply (``llm.channel_policy``).
    places: tuple[Place, ...] = ()
    # Who pays: server|me (the member's own key) for this request; None: the member's
    # remembered choice in this guild, else auto (``gigi_core.agent.billing``).
    billing: str | None = None
    # Where the reply is shown (shell|console|discord): error hints speak its syntax
    # (``gigi_core.errors.Hint``); None: their default form.
    surface: str | None = None


@dataclass(frozen=True)
class Budgets:
    """Per-run limits; reaching one ends the run with a named termination reason."""

    max_steps: int = 16
    max_tool_calls: int = 8
    max_llm_calls: int = 6
    max_tokens: int = 60_000
    max_retries_per_tool: int = 2
    max_invalid_calls: int = 4
    tool_timeout_cap: float = 60.0
    confirmation_ttl_seconds: int = 15 * 60


@dataclass(frozen=True)
class ConfirmationPrompt:
    """A button pair a surface shows; the id goes into the custom id of the buttons."""

    confirmation_id: str
    run_id: str
    action: str
    summary: str
    expires_at: datetime
    # The validated arguments being approved, ``name: value`` lines of plain text: secrets
    # masked, control characters escaped, capped (``render.confirmation_arguments``).
    arguments: str = ""


@dataclass(frozen=True)
class Citation:
    """A fact a tool returned, passed through verbatim (the model never restates it)."""

    tool: str
    result: Any


@dataclass
class Reply:
    """What the surface shows: text chunks, tool facts, confirmation prompts, the run id."""

    text: str
    run_id: str | None = None
    status: str = "done"
    termination_reason: str | None = None
    citations: list[Citation] = field(default_factory=list)
    components: list[ConfirmationPrompt] = field(default_factory=list)
    ephemeral: bool = False
    sources: dict[str, str] = field(default_factory=dict)  # context label "1" -> jump URL
    output: Any = None  # the validated structured output (``Request.persona.output``)
    tokens_in: int = 0  # the run's input and output tokens, all model calls
    tokens_out: int = 0
    # proposed calls Gigi refused (and the model did not then make): "name (why)", shown
    # after the answer by every surface, whatever the model's text claims
    refused: list[str] = field(default_factory=list)
    # Guild context was left out of a run billed to the member's own key: the notice (and,
    # on Discord, a button to confirm the disclosure once for this guild).
    disclosure: str | None = None

    def chunks(self, limit: int = 2000) -> list[str]:
        """Split for surfaces with a message limit, on paragraph, line, then word boundaries."""
        from gigi_core.agent.chunking import split_text

        return split_text(self.full_text(), limit)

    def full_text(self) -> str:
        parts = [self.text.strip()] if self.text.strip() else []
        for c in self.citations:
            from json import dumps

            parts.append(f"{c.tool} → {dumps(c.result, ensure_ascii=False, sort_keys=True)}")
        note = self.refusal_note()
        if note:
            parts.append(note)
        if self.disclosure:
            parts.append(self.disclosure)
        for p in self.components:
            shown = "".join(f"\n  {line}" for line in p.arguments.splitlines())
            parts.append(
                f"{p.summary}{shown}\n— confirm with `/confirm {p.run_id}` "
                f"or reject with `/reject {p.run_id}`."
            )
        return "\n\n".join(parts)

    def refusal_note(self) -> str | None:
        """Gigi's own line on what was proposed but not done (the model's text may not say)."""
        if not self.refused:
            return None
        return "Not done — Gigi refused: " + "; ".join(self.refused) + "."
