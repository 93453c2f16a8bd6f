"""Run golden cases: a fresh kernel per case, the request, follow-ups, checks, canary scan."""

from __future__ import annotations

import functools
import inspect
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gigi_core.agent.contracts import Budgets, Reply, Request
from gigi_core.errors import GigiError
from gigi_core.evalharness.canary import (
    PLACEHOLDER,
    SEALED_COLUMNS,
    Canaries,
    capture_logs,
    scan_at_rest,
)
from gigi_core.evalharness.expect import Observation, check
from gigi_core.evalharness.isolation import isolated_database
from gigi_core.evalharness.loading import LoadedCase, load_cases
from gigi_core.evalharness.models import ActorSpec, Case, FollowUp, GuildChange
from gigi_core.evalharness.plugin import EvalKit
from gigi_core.evalharness.surface import run_setup
from gigi_core.evalharness.transport import WIRE_PLUGIN, Transport, make_transport
from gigi_core.evalharness.warm import Warm, open_case_kernel, warm
from gigi_core.policy.actor import Actor
from gigi_core.testing.scripted import ScriptExhausted

if TYPE_CHECKING:
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.kernel import Kernel

Progress = Callable[["CaseResult"], None]


@dataclass
class CaseResult:
    """One case's outcome: ``problems`` are expectation mismatches, ``leaks`` canary hits."""

    name: str
    path: str
    passed: bool
    duration_ms: float
    problems: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    run_id: str | None = None
    known_bug: str | None = None
    log: list[str] = field(default_factory=list)  # WARNING+ lines logged while it ran

    @property
    def ok(self) -> bool:
        """Passed, or failed as its ``known_bug`` says it will (a fixed bug is not ok: update it)."""
        return self.passed != bool(self.known_bug)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "passed": self.passed,
            "duration_ms": self.duration_ms,
            "problems": self.problems,
            "leaks": self.leaks,
            "run_id": self.run_id,
            "known_bug": self.known_bug,
            "ok": self.ok,
            "log": self.log,
        }


async def run_cases(
    paths: Iterable[str | Path],
    *,
    database_url: str | None = None,
    progress: Progress | None = None,
    sealed: frozenset[tuple[str, str]] = SEALED_COLUMNS,
) -> list[CaseResult]:
    """Load every case under ``paths`` and run each on its own fresh database, in order."""
    results = []
    cases = load_cases(paths)
    async with warm() as shared:
        for loaded in cases:
            result = await run_case(loaded, database_url=database_url, sealed=sealed, shared=shared)
            results.append(result)
            if progress is not None:
                progress(result)
    return results


async def run_case(
    loaded: LoadedCase,
    *,
    database_url: str | None = None,
    sealed: frozenset[tuple[str, str]] = SEALED_COLUMNS,
    shared: Warm | None = None,
) -> CaseResult:
    """Run one case; never raises for a failing case (a crash is reported as a problem)."""
    if shared is None:
        async with warm() as own:
            return await run_case(loaded, database_url=database_url, sealed=sealed, shared=own)
    started = time.perf_counter()
    canaries = Canaries()
    data = loaded.case.model_dump()
    # Each setup step with a placeholder gets a canary of its own: a leak names its step.
    data["setup"] = [
        canaries.expand(raw, canaries.new(step.label(i))) if PLACEHOLDER in str(raw) else raw
        for i, (step, raw) in enumerate(zip(loaded.case.setup, data["setup"], strict=True), 1)
    ]
    token = canaries.new("a ${canary} placeholder")
    case = Case.model_validate(canaries.expand(data, token))
    play = _Play(case, canaries, sealed)
    with (
        tempfile.TemporaryDirectory(prefix="gigi-eval-") as home,
        capture_logs(silence=True) as logs,
    ):
        try:
            async with isolated_database(database_url) as url:
                await play.run(shared, Path(home), url)
        except (Exception, ScriptExhausted) as exc:
            where = traceback.extract_tb(exc.__traceback__)[-1]
            play.problems.append(
                f"the case crashed: {type(exc).__name__}: {exc} "
                f"({Path(where.filename).name}:{where.lineno})"
            )
    leaks = play.leaks + [str(leak) for leak in logs.leaks(canaries)] if case.scan else []
    return CaseResult(
        name=case.name,
        path=loaded.where,
        passed=not play.problems and not leaks,
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
        problems=play.problems,
        leaks=leaks,
        run_id=play.run_id,
        known_bug=case.known_bug,
        log=logs.lines,
    )


class _Play:
    """The moving parts of one case run."""

    def __init__(self, case: Case, canaries: Canaries, sealed: frozenset[tuple[str, str]]) -> None:
        self.case, self.canaries, self.sealed = case, canaries, sealed
        self.problems: list[str] = []
        self.leaks: list[str] = []
        self.run_id: str | None = None
        self.executed: list[str] = []
        self.transport: Transport = make_transport(case.transport, self._planted_turns())

    def _planted_turns(self) -> list[Any]:
        """Text beside tool calls never reaches the user: plant a canary there for free."""
        turns = []
        for turn in self.case.model:
            if turn.tool_calls:
                planted = self.canaries.new("model text beside tool calls")
                turn = turn.model_copy(update={"text": f"{turn.text or ''} {planted}".strip()})
            turns.append(turn)
        return turns

    async def run(self, shared: Warm, home: Path, database_url: str | None) -> None:
        case = self.case
        plugins = list(case.plugins)
        if case.transport == "wire" and WIRE_PLUGIN not in plugins:
            plugins.append(WIRE_PLUGIN)
        extra: list[tuple[str, object]] = []
        if case.evalkit:
            extra.append(("evalkit", EvalKit(self.canaries)))
        for spec in case.test_plugins:
            extra.append((spec.name, make_plugin(spec.factory, home, self.canaries)))
        async with open_case_kernel(shared, home, plugins, extra, database_url) as kernel:
            url = kernel.db.engine.url
            self._count_handlers(kernel)
            await self._setup_guild(kernel)
            await self.transport.start(kernel, case.guild.id, self.canaries)
            try:
                self.problems.extend(await run_setup(kernel, case))
                self.executed.clear()  # expectations are about the request and what follows
                runtime = self.transport.runtime(kernel, self._budgets())
                await self._request(kernel, runtime)
                for index, step in enumerate(case.then, 1):
                    await self._follow_up(kernel, runtime, index, step)
                left = self.transport.remaining()
                if left and not case.allow_unused_turns:
                    self.problems.append(f"{left} scripted model turn(s) were never used")
            finally:
                await self.transport.stop()
        if case.scan:
            # At rest: the kernel and its plugins shut down, so everything written behind
            # replies and events (runs, a plugin's batching writer) is in the database.
            leaks = await scan_at_rest(url, self.canaries, sealed=self.sealed)
            self.leaks.extend(str(leak) for leak in leaks)

    # -- setup -----------------------------------------------------------------------

    def _count_handlers(self, kernel: Kernel) -> None:
        handlers = kernel.registry.handlers
        for name, handler in list(handlers.items()):
            handlers[name] = _counting(name, handler, self.executed)

    async def _setup_guild(self, kernel: Kernel, change: GuildChange | None = None) -> None:
        guild = change or self.case.guild
        gid = self.case.guild.id
        external = self.case.guild.allow_external
        for plugin, config in guild.enable.items():
            await kernel.enable_plugin(
                gid,
                plugin,
                config=config,
                allow_external=plugin in external or None,
                by="eval-admin",
            )
        for plugin in guild.disable:
            await kernel.disable_plugin(gid, plugin, by="eval-admin")
        for grant in guild.grants:
            subject = ("user", grant.user) if grant.user else ("role", grant.role or "")
            await kernel.add_grant(gid, grant.capability, *subject, by="eval-admin")
        for grant in getattr(guild, "revoke", []):
            subject = ("user", grant.user) if grant.user else ("role", grant.role or "")
            await kernel.remove_grant(gid, grant.capability, *subject, by="eval-admin")

    def _budgets(self) -> Budgets:
        values: dict[str, Any] = {}
        for name, value in self.case.budgets.items():
            values[name] = type(getattr(Budgets(), name))(value)
        return replace(Budgets(), **values)

    # -- actions ---------------------------------------------------------------------

    async def _request(self, kernel: Kernel, runtime: AgentRuntime) -> None:
        spec = self.case.request
        text = f"{spec.text} {self.canaries.new('the request text')}".strip()
        request = Request(
            actor=_actor(spec.actor),
            guild_id=self.case.guild.id,
            channel_id=spec.channel,
            kind=spec.kind,
            text=text,
            forced_tool=spec.forced_tool,
        )
        reply, error = None, None
        try:
            if spec.call is not None:
                reply = await runtime.direct(request, spec.call.action, spec.call.args)
            else:
                reply = await runtime.handle(request)
        except GigiError as exc:
            error = str(exc)
        self.run_id = reply.run_id if reply else await _last_run(runtime, self.case.guild.id)
        obs = await self._observe(kernel, runtime, reply=reply, error=error)
        self.problems.extend(f"request: {p}" for p in check(self.case.expect, obs))

    async def _follow_up(
        self, kernel: Kernel, runtime: AgentRuntime, index: int, step: FollowUp
    ) -> None:
        reply: Reply | None = None
        error, cancelled = None, None
        if step.guild is not None:
            await self._setup_guild(kernel, step.guild)
            obs = await self._observe(kernel, runtime)
            self.problems.extend(f"step {index} (guild): {p}" for p in check(step.expect, obs))
            return
        actor = _actor(self.case.actor(step.actor))
        label = f"step {index} ({step.verb} as {step.actor})"
        if self.run_id is None:
            self.problems.append(f"{label}: there is no run to act on")
            return
        try:
            if step.verb == "confirm":
                reply = await runtime.confirm(self.run_id, actor)
            elif step.verb == "reject":
                reply = await runtime.reject(self.run_id, actor)
            else:
                cancelled = await runtime.cancel(self.run_id, actor)
        except GigiError as exc:
            error = str(exc)
        obs = await self._observe(kernel, runtime, reply=reply, error=error, cancelled=cancelled)
        self.problems.extend(f"{label}: {p}" for p in check(step.expect, obs))

    async def _observe(self, kernel: Kernel, runtime: AgentRuntime, **found: Any) -> Observation:
        from sqlalchemy import select

        from gigi_core.store.tables import AuditEvent

        await kernel.db.writer.drain()  # runs written behind their replies
        trace = await runtime.trace(self.run_id) if self.run_id else None
        async with kernel.db.session() as s:
            rows = list(await s.scalars(select(AuditEvent).order_by(AuditEvent.id)))
        audit = [{k: v for k, v in vars(r).items() if not k.startswith("_")} for r in rows]
        seen = self.transport.seen()
        proposed = [c.name for t in self.case.model[: len(seen)] for c in t.tool_calls or []]
        return Observation(
            trace=trace,
            audit=audit,
            executed=list(self.executed),
            seen=seen,
            proposed=proposed,
            **found,
        )


def make_plugin(factory: str, home: Path, canaries: Canaries) -> object:
    """Import ``module:attr``; call it (with an EvalContext if it requires an argument)."""
    import importlib

    module_name, _, attr = factory.partition(":")
    if not module_name or not attr:
        raise GigiError(f"test plugin factory {factory!r} must look like module:attr")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        return target
    try:
        params = inspect.signature(target).parameters.values()
        wants = any(
            p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            for p in params
        )
    except (TypeError, ValueError):
        wants = False
    return target(EvalContext(home, canaries)) if wants else target()


@dataclass(frozen=True)
class EvalContext:
    """What a test plugin factory may use: a scratch folder and the run's canaries."""

    workdir: Path
    canaries: Canaries


def _actor(spec: ActorSpec) -> Actor:
    return Actor(spec.id, frozenset(spec.roles), spec.admin, spec.name)


async def _last_run(runtime: AgentRuntime, guild_id: str) -> str | None:
    from gigi_core.agent.runs import RunNotFound

    try:
        return (await runtime.runs.last(guild_id)).id
    except RunNotFound:
        return None


def _counting(name: str, handler: Callable[..., Any], ran: list[str]) -> Callable[..., Any]:
    """Wrap a handler so the case knows how many times it really ran."""
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
            ran.append(name)
            return await handler(*args, **kwargs)

        return wrapped_async

    @functools.wraps(handler)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        ran.append(name)
        return handler(*args, **kwargs)

    return wrapped
