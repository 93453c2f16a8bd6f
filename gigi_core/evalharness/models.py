"""The golden-case format, validated with pydantic so a typo is a ``file:line`` error, not a pass.

One YAML document is one case. Every field is documented in docs/evals.md; strings may hold
``${canary}``, replaced by a unique per-run canary before the case runs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gigi_core.agent.contracts import Budgets


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ActorSpec(Strict):
    """Who acts; ``admin`` is what the surface reports (e.g. Manage Server on Discord)."""

    id: str
    roles: list[str] = Field(default_factory=list)
    admin: bool = False
    name: str | None = None


class TestPlugin(Strict):
    """An in-process plugin: ``factory`` is ``module:attr`` (a class or function making one)."""

    name: str
    factory: str


class Grant(Strict):
    capability: str
    user: str | None = None
    role: str | None = None

    @model_validator(mode="after")
    def _one_subject(self) -> Grant:
        if (self.user is None) == (self.role is None):
            raise ValueError("a grant names exactly one of user or role")
        return self


class Guild(Strict):
    """The server the case runs in: plugins enabled (with config), disabled, grants."""

    id: str = "g1"
    enable: dict[str, dict[str, Any]] = Field(default_factory=dict)
    disable: list[str] = Field(default_factory=list)
    allow_external: list[str] = Field(default_factory=list)
    grants: list[Grant] = Field(default_factory=list)


class DirectCall(Strict):
    action: str
    args: Any = Field(default_factory=dict)


class RequestSpec(Strict):
    """The request a surface would make; ``call`` makes it a deterministic direct call."""

    actor: ActorSpec = Field(default_factory=lambda: ActorSpec(id="u1"))
    channel: str | None = "c1"
    kind: Literal["mention", "slash", "dm", "console"] = "mention"
    text: str = ""
    forced_tool: str | None = None
    call: DirectCall | None = None


class ToolCallSpec(Strict):
    """One proposed call: ``args`` (encoded as JSON) or ``raw`` (sent verbatim, may be broken)."""

    name: str
    args: Any = None
    raw: str | None = None

    @model_validator(mode="after")
    def _args_or_raw(self) -> ToolCallSpec:
        if self.args is not None and self.raw is not None:
            raise ValueError("give args or raw, not both")
        return self

    def arguments_text(self) -> str:
        import json

        return self.raw if self.raw is not None else json.dumps(self.args or {})


class ErrorSpec(Strict):
    status: int = 500
    message: str = "upstream exploded"


class Usage(Strict):
    input_tokens: int = 10
    output_tokens: int = 5


class Turn(Strict):
    """One scripted model reply: text, tool calls (optionally with text), or a provider error."""

    text: str | None = None
    tool_calls: list[ToolCallSpec] | None = None
    error: ErrorSpec | None = None
    usage: Usage = Field(default_factory=Usage)

    @model_validator(mode="after")
    def _shape(self) -> Turn:
        if self.error is not None and (self.text is not None or self.tool_calls):
            raise ValueError("an error turn has no text or tool_calls")
        if self.error is None and self.text is None and not self.tool_calls:
            raise ValueError("a turn needs text, tool_calls or error")
        return self


class AuditMatch(Strict):
    """Fields an audit row must have (only the ones given are compared)."""

    kind: str
    status: str | None = None
    action: str | None = None
    capability: str | None = None
    decision: str | None = None
    reason_code: str | None = None
    termination_reason: str | None = None
    tool_kind: str | None = None


class StepMatch(Strict):
    """A tool step of the run trace (only the given fields are compared)."""

    tool: str | None = None
    decision: str | None = None
    status: str | None = None
    capability: str | None = None


class Offered(Strict):
    includes: list[str] = Field(default_factory=list)
    excludes: list[str] = Field(default_factory=list)


class Expect(Strict):
    """What must hold after the request (or a follow-up step); every field is optional.

    ``reply`` is exact unless it starts with ``pattern:`` (a regex searched in the text).
    """

    error: str | None = None
    status: str | None = None
    termination_reason: str | None = None
    reply_status: str | None = None
    reply: str | None = None
    reply_contains: list[str] = Field(default_factory=list)
    citations: list[str] | None = None
    cancelled: bool | None = None
    offered: Offered | None = None
    proposed: list[str] | None = None
    executed: list[str] | None = None
    executed_count: dict[str, int] = Field(default_factory=dict)
    model_calls: int | None = None
    decisions: list[StepMatch] | None = None
    step_kinds: list[str] | None = None
    confirmations: list[str] | None = None
    audit: list[AuditMatch] = Field(default_factory=list)
    audit_absent: list[AuditMatch] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)
    feedback_absent: list[str] = Field(default_factory=list)
    tool_choice: list[str | None] | None = None
    budgets_used: dict[str, int] = Field(default_factory=dict)


class GuildChange(Strict):
    """An admin changing the server between steps (``id`` is the case's guild)."""

    enable: dict[str, dict[str, Any]] = Field(default_factory=dict)
    disable: list[str] = Field(default_factory=list)
    grants: list[Grant] = Field(default_factory=list)
    revoke: list[Grant] = Field(default_factory=list)


class FollowUp(Strict):
    """A later action on the same run as one of the named actors, or a server change."""

    confirm: str | None = None
    reject: str | None = None
    cancel: str | None = None
    guild: GuildChange | None = None
    expect: Expect = Field(default_factory=Expect)

    @model_validator(mode="after")
    def _one(self) -> FollowUp:
        if sum(x is not None for x in (self.confirm, self.reject, self.cancel, self.guild)) != 1:
            raise ValueError(
                "a step is exactly one of confirm, reject, cancel (an actor name) or guild"
            )
        return self

    @property
    def verb(self) -> str:
        if self.guild is not None:
            return "guild"
        return "confirm" if self.confirm else "reject" if self.reject else "cancel"

    @property
    def actor(self) -> str:
        return self.confirm or self.reject or self.cancel or ""


class MessageSpec(Strict):
    """A message a surface saw (``MessageCreated``); ``dm``/``group_dm`` carry no guild."""

    id: str
    channel: str = "c1"
    parent: str | None = None  # the channel of a thread
    kind: Literal[
        "text", "thread", "private_thread", "forum_post", "voice_text", "dm", "group_dm"
    ] = "text"
    author: str = "u1"
    bot: bool = False
    text: str = ""
    mentions: list[str] = Field(default_factory=list)
    ago: str | None = Field(default=None, pattern=r"^\d+[smhd]$")  # written that long ago


class EditSpec(Strict):
    """A message's new text (``MessageEdited``)."""

    id: str
    channel: str = "c1"
    parent: str | None = None
    text: str


class DeleteSpec(Strict):
    """Deleted messages, one or a bulk delete (``MessageDeleted``)."""

    ids: list[str]
    channel: str = "c1"
    parent: str | None = None


class SetupCall(Strict):
    """A direct tool call before the request (``kernel.call_tool``, no model), e.g. an admin
    enabling something; ``result`` lists keys the result must have with these values."""

    action: str
    args: dict[str, Any] = Field(default_factory=dict)
    actor: str = "admin"
    channel: str | None = "c1"
    result: dict[str, Any] = Field(default_factory=dict)


class JobsSpec(Strict):
    """Queue ``defer`` (job names, no arguments), then run jobs until idle; ``clock_ahead``
    runs them with the wall clock (``time.time``) that far ahead: retention, expiry."""

    defer: list[str] = Field(default_factory=list)
    clock_ahead: str | None = Field(default=None, pattern=r"^\d+[smhd]$")


class SetupStep(Strict):
    """One thing that happens before the request: a surface event, a call or running jobs.

    ``${canary}`` in a step is its own canary, so a leak names the step it came from.
    """

    message: MessageSpec | None = None
    edit: EditSpec | None = None
    delete: DeleteSpec | None = None
    call: SetupCall | None = None
    jobs: JobsSpec | None = None

    @model_validator(mode="after")
    def _one(self) -> SetupStep:
        given = [self.message, self.edit, self.delete, self.call, self.jobs]
        if sum(x is not None for x in given) != 1:
            raise ValueError("a setup step is exactly one of message, edit, delete, call or jobs")
        return self

    def label(self, index: int) -> str:
        if self.message is not None:
            where = "a DM" if self.message.kind in ("dm", "group_dm") else self.message.channel
            return f"setup {index} (message {self.message.id} in {where})"
        if self.edit is not None:
            return f"setup {index} (edit of {self.edit.id})"
        if self.delete is not None:
            return f"setup {index} (delete of {', '.join(self.delete.ids)})"
        if self.call is not None:
            return f"setup {index} (call {self.call.action})"
        return f"setup {index} (jobs)"


BUDGET_FIELDS = frozenset(Budgets.__dataclass_fields__)


class Case(Strict):
    """One golden case."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    description: str = ""
    plugins: list[str] = Field(default_factory=list)
    test_plugins: list[TestPlugin] = Field(default_factory=list)
    evalkit: bool = True
    guild: Guild = Field(default_factory=Guild)
    actors: dict[str, ActorSpec] = Field(default_factory=dict)
    setup: list[SetupStep] = Field(default_factory=list)
    request: RequestSpec = Field(default_factory=RequestSpec)
    transport: Literal["scripted", "wire", "none"] = "scripted"
    model: list[Turn] = Field(default_factory=list)
    allow_unused_turns: bool = False
    budgets: dict[str, float] = Field(default_factory=dict)
    then: list[FollowUp] = Field(default_factory=list)
    expect: Expect = Field(default_factory=Expect)
    scan: bool = True
    known_bug: str | None = None  # the case shows a runtime bug: expected to fail until fixed

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        unknown = sorted(set(self.budgets) - BUDGET_FIELDS)
        if unknown:
            raise ValueError(
                f"unknown budget {', '.join(unknown)}; known: {', '.join(sorted(BUDGET_FIELDS))}"
            )
        if self.transport == "none" and self.model:
            raise ValueError("transport none means no provider: drop the model turns")
        names = {"requester", "admin", "stranger", *self.actors}
        for step in self.then:
            if step.guild is None and step.actor not in names:
                raise ValueError(f"unknown actor {step.actor!r}; known: {', '.join(sorted(names))}")
        for setup in self.setup:
            if setup.call is not None and setup.call.actor not in names:
                raise ValueError(
                    f"unknown actor {setup.call.actor!r}; known: {', '.join(sorted(names))}"
                )
        return self

    def actor(self, name: str) -> ActorSpec:
        builtin = {
            "requester": self.request.actor,
            "admin": ActorSpec(id="eval-admin", admin=True),
            "stranger": ActorSpec(id="eval-stranger"),
        }
        return self.actors.get(name) or builtin[name]
