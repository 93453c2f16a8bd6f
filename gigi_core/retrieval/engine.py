"""The engine: ask the retrievers this actor may use here, each under its own deadline,
check every hit, merge. One failing, hanging or lying retriever never costs the others."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gigi_core.retrieval import config as retrieval_config
from gigi_core.retrieval.fusion import asks_for_time, merge
from gigi_core.retrieval.plan import QueryPlan, clip, deterministic_plan
from gigi_core.retrieval.port import (
    Hit,
    PathReport,
    Ranked,
    RetrievalError,
    Scope,
    as_hit,
    clip_text,
)

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.policy.actor import Actor
    from gigi_core.policy.view import GuildView

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Path:
    """A registered retriever the actor may use in this guild."""

    name: str
    retriever: Any
    plugin: str
    source: str  # memory | knowledge: which broker mode asks it


@dataclass
class RetrievalResult:
    """Merged hits plus what happened on the way; ``trace()`` is ids and counts only."""

    ranked: list[Ranked]
    plan: QueryPlan | None
    reports: dict[str, PathReport] = field(default_factory=dict)
    query_chars: int = 0
    query_truncated: bool = False
    ms: int = 0

    def trace(self) -> dict[str, Any]:
        return {
            "query_chars": self.query_chars,
            "query_truncated": self.query_truncated,
            "plan": self.plan.trace() if self.plan else None,
            "paths": {n: r.as_dict() for n, r in sorted(self.reports.items())},
            "merged": [
                {"id": r.hit.source_id, "score": round(r.score, 6), "paths": list(r.paths)}
                for r in self.ranked
            ],
            "ms": self.ms,
        }


def owner_plugin(kernel: Kernel, name: str, retriever: Any) -> str | None:
    """The manifest plugin a retriever belongs to: its ``plugin`` attribute, or the only
    plugin its package declares; None when that is ambiguous (then it is never asked)."""
    declared = getattr(retriever, "plugin", None)
    for record in kernel.registry.records.values():
        if record.status != "ok" or name not in record.contributions.retrievers:
            continue
        plugins = [m.plugin.name for m in record.manifests]
        if declared in plugins:
            return str(declared)
        if declared is None and len(plugins) == 1:
            return plugins[0]
    return None


def retrievers_of(kernel: Kernel) -> dict[str, Any]:
    """The registered retrievers, with factories built once per kernel: ``register(name,
    factory)`` where ``factory(kernel)`` returns the retriever, for one that needs the kernel
    (its store, its service) to answer."""
    built: dict[str, Any] | None = kernel.__dict__.get("_gigi_retrievers")
    if built is None:
        built = {}
        for name, value in kernel.registry.retrievers.items():
            factory = isinstance(value, type) or (
                callable(value) and not hasattr(value, "retrieve")
            )
            if not factory:
                built[name] = value
                continue
            try:
                built[name] = value(kernel)
            except Exception:  # reported as not permitted below, never asked
                log.exception("retriever factory %s failed", name)
        kernel.__dict__["_gigi_retrievers"] = built
    return built


def permitted_paths(
    kernel: Kernel, actor: Actor, view: GuildView
) -> tuple[list[Path], dict[str, PathReport]]:
    """Retrievers of plugins enabled in the guild whose capability the actor holds there,
    decided by the policy engine's own rules (as if each were a read-only action)."""
    from gigi_core.manifest.models import ActionSpec
    from gigi_core.policy.decision import Outcome
    from gigi_core.policy.engine import base_decision, facts_from

    paths, refused = [], {}
    built = retrievers_of(kernel)
    for name in sorted(kernel.registry.retrievers):
        retriever = built.get(name)
        plugin = owner_plugin(kernel, name, retriever)
        capability = getattr(retriever, "capability", None)
        if plugin is None or not isinstance(capability, str) or not capability:
            why = "no capability declared" if plugin else "its plugin is ambiguous"
            refused[name] = PathReport(name, "not_permitted", reason=why)
            continue
        action = ActionSpec(
            name=f"{plugin}.retrieve:{name}",
            description="retrieval path",
            safety="read_only",  # type: ignore[arg-type]
            capability=capability,
            args={},
        )
        decision = base_decision(actor, facts_from(view, kernel, action, None))
        if decision.outcome is Outcome.deny:
            refused[name] = PathReport(name, "not_permitted", reason=decision.code)
            continue
        source = getattr(retriever, "source", "memory")
        paths.append(Path(name, retriever, plugin, source if isinstance(source, str) else "memory"))
    return paths, refused


async def guild_settings(kernel: Kernel, view: GuildView) -> retrieval_config.RetrievalSettings:
    return retrieval_config.for_guild(view.configs.get("gigi"))


async def ask(
    path: Path, query: str, scope: Scope, limit: int, seconds: float
) -> tuple[list[Hit], PathReport]:
    """One retriever under its deadline; every hit checked against the port and the scope."""
    started = time.perf_counter()

    def report(status: str, **kw: Any) -> PathReport:
        return PathReport(path.name, status, ms=int((time.perf_counter() - started) * 1000), **kw)

    try:
        raw = await asyncio.wait_for(path.retriever.retrieve(query, scope, limit), seconds)
    except TimeoutError:
        log.warning("retriever %s did not answer within %gs; skipped", path.name, seconds)
        return [], report("timeout", reason=f"no answer within {seconds:g}s")
    except Exception as exc:
        log.error("retriever %s raised %s; skipped", path.name, type(exc).__name__)
        return [], report("error", reason=type(exc).__name__)
    if not isinstance(raw, list | tuple):
        log.error("retriever %s returned %s, not a list; skipped", path.name, type(raw).__name__)
        return [], report("malformed", reason="did not return a list")
    hits: list[Hit] = []
    malformed = outside = 0
    for item in raw[: max(limit, 0)]:
        try:
            hit = as_hit(item)
        except ValueError as exc:
            malformed += 1
            log.warning("retriever %s returned a malformed hit: %s", path.name, exc)
            continue
        if not scope.admits(hit):
            outside += 1  # a bug in the retriever: never shown, always counted
            continue
        if len(hit.text) > 4000:
            from dataclasses import replace

            hit = replace(hit, text=clip_text(hit.text))
        hits.append(hit)
    if outside:
        log.error("retriever %s returned %d hit(s) outside the scope; dropped", path.name, outside)
    status = "malformed" if malformed and not hits else "ok"
    return hits, report(status, hits=len(hits), out_of_scope=outside, malformed=malformed)


async def retrieve(
    kernel: Kernel,
    *,
    actor: Actor,
    guild_id: str,
    visible_channels: frozenset[str],
    query: str,
    personal_user: str | None = None,
    sources: Sequence[str] | None = None,
    use_model: bool = True,
    now: datetime | None = None,
    view: GuildView | None = None,
) -> RetrievalResult:
    """Plan, fan out, check, merge: the whole engine for one question.

    ``visible_channels`` must come from the surface (the channels the actor may view now).
    ``sources`` limits the paths to those of a broker mode (``("memory",)``); None: all.
    """
    from gigi_core.policy.view import guild_view

    if not isinstance(visible_channels, frozenset):
        raise RetrievalError("visible_channels must be a frozenset of channel ids")
    started = time.perf_counter()
    now = now or datetime.now(UTC)
    view = view or await guild_view(kernel, actor, guild_id)
    settings = await guild_settings(kernel, view)
    text = " ".join(query.split())
    truncated = len(text) > settings.max_query_chars
    text = text[: settings.max_query_chars]
    paths, reports = permitted_paths(kernel, actor, view)
    if sources is not None:
        for p in paths:
            if p.source not in sources:
                reports[p.name] = PathReport(p.name, "not_asked", reason=f"source {p.source}")
        paths = [p for p in paths if p.source in sources]
    result = RetrievalResult([], None, reports, len(query), truncated)
    if not text or not paths:
        result.ms = int((time.perf_counter() - started) * 1000)
        return result
    names = [p.name for p in paths]
    if use_model:
        from gigi_core.retrieval.analysis import analyse

        plan = await analyse(
            kernel, actor=actor, guild_id=guild_id, query=text, paths=names, now=now, s=settings
        )
    else:
        plan = deterministic_plan(text, names, now)
    plan = clip(plan, names, visible_channels, text)
    scope = Scope(
        guild_id=guild_id,
        channel_ids=plan.channels if plan.channels is not None else visible_channels,
        user_id=personal_user,
        since=plan.since,
        until=plan.until,
    )
    by_name = {p.name: p for p in paths}
    asked = [(by_name[p.path], p.query) for p in plan.paths]
    answers = await asyncio.gather(
        *(
            ask(path, q, scope, settings.per_path_limit, settings.path_timeout_seconds)
            for path, q in asked
        )
    )
    per_path = {}
    for (path, _), (hits, report) in zip(asked, answers, strict=True):
        per_path[path.name] = hits
        reports[path.name] = report
    for p in paths:
        reports.setdefault(p.name, PathReport(p.name, "not_asked", reason="not in the plan"))
    timed = plan.since is not None or plan.until is not None
    recency = timed or asks_for_time(re.findall(r"\w+", text.lower()))
    result.ranked = merge(per_path, settings, now, recency=recency)
    result.plan = plan
    result.ms = int((time.perf_counter() - started) * 1000)
    return result
