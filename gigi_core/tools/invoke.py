"""The deterministic call path: look up, validate, decide, execute, audit."""

from __future__ import annotations

import asyncio
import difflib
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from gigi_core.errors import (
    ConfirmationRequired,
    GigiError,
    Hint,
    InvalidArguments,
    PolicyDenied,
    ToolExecutionError,
    UnknownAction,
)
from gigi_core.manifest.models import ActionSpec, Safety
from gigi_core.policy.actor import Actor
from gigi_core.policy.decision import Decision, Outcome
from gigi_core.store.audit import AuditRecord
from gigi_core.tools import bounds
from gigi_core.tools.context import ChannelLister, ToolContext, ToolOutcome

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.llm.channel_policy import Place

log = logging.getLogger(__name__)
_LOAD: Any = object()  # sentinel: read the plugin's config from the store


def lookup(kernel: Kernel, action: str) -> ActionSpec:
    spec = kernel.registry.actions.get(action)
    if spec is None:
        close = difflib.get_close_matches(action, list(kernel.registry.actions), n=3)
        hint: str = (
            f"did you mean {', '.join(close)}?"
            if close
            else Hint(
                "`gigi tools list` shows them",
                console="/plugins lists every plugin's actions",
                discord="`/gigi plugins list` shows what is installed",
            )
        )
        raise UnknownAction(f"no loaded plugin declares the action {action!r}", hint=hint)
    return spec


def validate_args(
    kernel: Kernel,
    spec: ActionSpec,
    args: Any,
    *,
    limits: bounds.ArgumentLimits | None = None,
    bounded: bool = False,
) -> dict[str, Any]:
    """Check ``args`` against the depth and size limits and the compiled validator.

    Returns them with top-level defaults filled and integer-typed values as ``int``; every
    error detail is truncated (``gigi_core.tools.bounds``), since it may quote the value.
    ``bounded``: this very object already passed ``bounds.problem`` under ``limits`` (the
    runner checks a model's calls as they arrive), so the walk is not repeated.
    """
    if not isinstance(args, dict):
        raise InvalidArguments(spec.name, "", f"expected a JSON object, got {type(args).__name__}")
    if limits is None:
        limits, bounded = bounds.limits(), False
    if not bounded:
        too_big = bounds.problem(args, limits)
        if too_big is not None:
            raise InvalidArguments(spec.name, "", too_big)
    validator = kernel.registry.validator(spec.name)
    if not validator.is_valid(args):
        error = min(validator.iter_errors(args), key=lambda e: list(map(str, e.instance_path)))
        field = ".".join(str(p) for p in error.instance_path)
        if not field and error.kind.__class__.__name__.endswith("Required"):
            field = str(getattr(error.kind, "property", "") or "")
        raise InvalidArguments(
            spec.name,
            bounds.truncate(field, limits.error_chars // 4),
            bounds.truncate(error.message, limits.error_chars),
        )
    filled = dict(bounds.integers_as_int(spec.args, args) if _has_integers(spec) else args)
    for name, prop in (spec.args.get("properties") or {}).items():
        if name not in filled and isinstance(prop, dict) and "default" in prop:
            filled[name] = prop["default"]
    return filled


_INTEGERS: dict[str, tuple[Any, bool]] = {}  # action -> (its args schema, mentions integer)


def _has_integers(spec: ActionSpec) -> bool:
    """Whether the args schema says ``integer`` anywhere (else no ``2.0`` becomes ``2``).

    Kept per action with the schema object it was computed from, so a reloaded manifest
    is looked at afresh.
    """
    found = _INTEGERS.get(spec.name)
    if found is None or found[0] is not spec.args:
        found = _INTEGERS[spec.name] = (spec.args, "integer" in json.dumps(spec.args))
    return found[1]


async def call_tool(
    kernel: Kernel,
    action: str,
    args: Any,
    *,
    actor: Actor,
    guild_id: str,
    channel_id: str | None = None,
    channel_visible: bool | None = None,
    run_id: str | None = None,
    call_id: str | None = None,
    channel_lister: ChannelLister | None = None,
) -> ToolOutcome:
    """Run one call through policy; raises a ToolError subclass for every non-ok outcome."""
    spec = lookup(kernel, action)
    audit = AuditRecord(
        kind="tool.call",
        status="pending",
        actor_id=actor.id,
        guild_id=guild_id,
        channel_id=channel_id,
        action=spec.name,
        capability=spec.capability,
        run_id=run_id,
    )
    # The kernel's own rules first: a caller who may not use the action here learns nothing
    # of its arguments' schema. Vetoes need the validated arguments, so they come after.
    # The cached policy facts (as agent runs use them: cleared by every change made through
    # the kernel, and on PostgreSQL by other processes' changes too): one read, not three.
    view = None
    try:
        from gigi_core.policy.engine import cached_base_decision
        from gigi_core.policy.view import guild_view

        view = await guild_view(kernel, actor, guild_id)
        early = cached_base_decision(view, kernel, actor, spec, None)
    except Exception:  # decide() below fails closed with its own reason
        early = None
    if early is not None and early.outcome is Outcome.deny:
        await _audit(kernel, _with(audit, status="denied", decision=early))
        raise PolicyDenied(spec.name, early.reason)
    try:
        filled = validate_args(kernel, spec, args)
    except InvalidArguments:
        await _audit(kernel, _with(audit, status="invalid"))
        raise
    decision = await kernel.policy.decide(
        actor,
        spec,
        guild_id,
        call={"action": spec.name, "args": filled, "guild_id": guild_id, "channel_id": channel_id},
        channel_visible=channel_visible,
        view=view,
    )
    if decision.outcome is Outcome.deny:
        await _audit(kernel, _with(audit, status="denied", decision=decision))
        raise PolicyDenied(spec.name, decision.reason)
    if decision.outcome is Outcome.confirm:
        await _audit(kernel, _with(audit, status="needs_confirmation", decision=decision))
        raise ConfirmationRequired(spec.name, decision.reason)
    config = _LOAD
    if view is not None:
        config = await kernel.plugin_config(
            guild_id, spec.plugin, plain=view.configs.get(spec.plugin, {})
        )
    return await execute(
        kernel,
        spec,
        filled,
        actor=actor,
        guild_id=guild_id,
        channel_id=channel_id,
        decision=decision,
        audit=audit,
        run_id=run_id,
        call_id=call_id,
        config=config,
        channel_lister=channel_lister,
    )


async def execute(
    kernel: Kernel,
    spec: ActionSpec,
    args: dict[str, Any],
    *,
    actor: Actor,
    guild_id: str,
    channel_id: str | None,
    decision: Decision,
    audit: AuditRecord,
    run_id: str | None = None,
    call_id: str | None = None,
    config: Any = _LOAD,
    write_audit: bool = True,
    on_outcome: Callable[[AuditRecord, Any, ToolExecutionError | None, str | None], Awaitable[None]]
    | None = None,
    channel_lister: ChannelLister | None = None,
    billing: str | None = None,
    places: tuple[Place, ...] = (),
) -> ToolOutcome:
    """Run an already-allowed call with a timeout; failures are masked for the caller,
    except a ``GigiError`` (a spent budget, a refusal), whose message and hint are for them.

    A caller that stores the audit row itself (the agent runner, in its checkpoint
    transaction) passes ``write_audit=False`` and reads ``ToolOutcome.audit``; on failure
    the row rides on the raised error's ``audit`` attribute. ``on_outcome(record, result,
    failure, text)`` is awaited once the outcome is known and before ``after_tool_call``
    observers run, so a caller can make the outcome durable first: a crash inside an
    observer then never makes a completed call look interrupted. ``text`` is the result
    as JSON with sorted keys (what a model is shown), when producing it was free.
    """
    ctx = ToolContext(
        actor=actor,
        guild_id=guild_id,
        channel_id=channel_id,
        config=await kernel.plugin_config(guild_id, spec.plugin) if config is _LOAD else config,
        kernel=kernel,
        action=spec,
        run_id=run_id,
        call_id=call_id,
        channel_lister=channel_lister,
        billing=billing,
        places=places,
    )
    handler = kernel.registry.handlers[spec.name]
    allowed = kernel.registry.handler_args(spec.name)
    if allowed is not None:  # a schema open to extra properties must not reach hidden kwargs
        args = {k: v for k, v in args.items() if k in allowed}
    started = time.perf_counter()
    status = "ok"
    failure: ToolExecutionError | None = None
    result: Any = None
    text: str | None = None
    try:
        result = await _run(handler, ctx, args, spec.timeout_seconds)
        result, text = _as_json(kernel, spec, result)
    except TimeoutError:
        status = "timeout"
        failure = ToolExecutionError(f"{spec.name} did not finish within {spec.timeout_seconds:g}s")
    except ToolExecutionError as exc:
        status, failure = "error", exc
    except GigiError as exc:  # written for the member (a spent budget, a refusal): shown
        status = "error"
        log.info("tool %s refused: %s", spec.name, type(exc).__name__)
        failure = ToolExecutionError(f"{spec.name}: {exc.message}", hint=exc.hint)
        failure.__cause__ = exc
    except Exception as exc:
        status = "error"
        log.exception("tool %s raised", spec.name)
        failure = ToolExecutionError(f"{spec.name} failed ({type(exc).__name__})")
        failure.__cause__ = exc
    elapsed = (time.perf_counter() - started) * 1000
    record = _with(audit, status=status, decision=decision, duration_ms=round(elapsed, 3))
    if failure is not None:
        failure.audit = record  # type: ignore[attr-defined]
    if write_audit:
        if spec.safety is Safety.read_only:  # it changed nothing: the row rides the next batch
            await kernel.audit.queue(record)
        else:  # a change is not reported done before its row is committed
            await kernel.audit.record(record)
    try:
        if on_outcome is not None:
            await on_outcome(record, None if failure else result, failure, text)
    finally:  # observers hear of every call that ran, even when recording it stopped the run
        await _track(kernel, record)
        if kernel.hooks.implemented("after_tool_call"):
            call = {"action": spec.name, "run_id": run_id, "call_id": call_id}
            # Each observer has its deadline (GIGI_HOOK_TIMEOUT_AFTER_TOOL_CALL_SECONDS): the
            # call's effect already happened, so a hanging observer is cut off, not waited for.
            await kernel.hooks.notify(
                "after_tool_call", call=call, actor=actor, outcome=record, kernel=kernel
            )
    if failure is not None:
        raise failure
    return ToolOutcome(spec.name, "ok", result, decision.outcome.value, elapsed, record)


async def _run(handler: Any, ctx: ToolContext, args: dict[str, Any], seconds: float) -> Any:
    """Await in place (no extra task per call); sync handlers run in a worker thread."""
    async with asyncio.timeout(seconds):
        if inspect.iscoroutinefunction(handler):
            return await handler(ctx, **args)
        result = await asyncio.to_thread(handler, ctx, **args)
        if inspect.isawaitable(result):
            result = await result
        return result


def _as_json(kernel: Kernel, spec: ActionSpec, result: Any) -> tuple[Any, str | None]:
    """The result as plain JSON data (a copy the handler cannot change afterwards), and its
    text with sorted keys when every key is a string (then that text is exactly the plain
    copy's: one dump serves both; keys of other types sort and collide differently)."""
    try:
        if _string_keys(result):
            text: str | None = json.dumps(
                result, allow_nan=False, ensure_ascii=False, sort_keys=True
            )
            plain = json.loads(text)  # type: ignore[arg-type]
        else:
            text, plain = None, json.loads(json.dumps(result, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ToolExecutionError(f"{spec.name} returned data that is not JSON ({exc})") from None
    if spec.result is not None:
        error = next(
            iter(kernel.registry.validator(spec.name, result=True).iter_errors(plain)), None
        )
        if error is not None:
            log.error("tool %s result violates its schema: %s", spec.name, error.message)
            raise ToolExecutionError(
                f"{spec.name} returned a result that does not match its manifest"
            )
    return plain, text


def _string_keys(value: Any) -> bool:
    """Whether every mapping key in ``value`` is a ``str`` (iterative: results are unbounded)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return False
                if isinstance(inner, dict | list | tuple):
                    stack.append(inner)
        elif isinstance(item, list | tuple):
            stack.extend(v for v in item if isinstance(v, dict | list | tuple))
    return True


async def _audit(kernel: Kernel, record: AuditRecord) -> None:
    """Every refusal is audited and tracked; both carry metadata only. Nothing ran, so the
    row is queued for the writer's next batch rather than waited for."""
    await kernel.audit.queue(record)
    await _track(kernel, record)


async def _track(kernel: Kernel, record: AuditRecord) -> None:
    if not kernel.hooks.implemented("track_event"):
        return
    await kernel.track(
        record.kind,
        action=record.action,
        status=record.status,
        decision=record.decision,
        guild_id=record.guild_id,
        duration_ms=record.duration_ms,
    )


def _with(
    audit: AuditRecord, *, status: str, decision: Decision | None = None, **extra: Any
) -> AuditRecord:
    if decision is not None:
        extra.update(decision=decision.outcome.value, reason_code=decision.code)
    return AuditRecord(**{**vars(audit), "status": status, **extra})  # flat: cheaper than replace
