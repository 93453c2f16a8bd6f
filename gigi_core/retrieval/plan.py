"""The query plan (``QueryPlan``): a proposal, validated and clipped to scope.

``deterministic_plan`` needs no model; ``parse_plan`` validates a routing model's JSON.
Either way ``clip`` keeps only paths the actor may use and channels the actor may see, so
a plan never decides permissions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

INTENTS = (
    "factual_recall",
    "temporal_context",
    "cross_channel",
    "accountability",
    "institutional",
    "dependency",
)
FORMATS = ("direct_answer", "summary", "list", "comparison")


@dataclass(frozen=True)
class PathPlan:
    """One retriever to ask, with the query text it should get."""

    path: str
    query: str


@dataclass(frozen=True)
class QueryPlan:
    intent: str
    entities: tuple[str, ...]
    since: datetime | None
    until: datetime | None
    channels: frozenset[str] | None  # None: every channel in scope
    paths: tuple[PathPlan, ...]
    response_format: str = "direct_answer"
    source: str = "deterministic"  # deterministic | model | fallback
    clipped: dict[str, int] = field(default_factory=dict)  # what clip() removed, counts only

    def trace(self) -> dict[str, Any]:
        """Ids and counts only: the entities and queries are the member's words, not shown."""
        return {
            "source": self.source,
            "intent": self.intent,
            "paths": [p.path for p in self.paths],
            "entities": len(self.entities),
            "time_range": self.since is not None or self.until is not None,
            "channels": None if self.channels is None else len(self.channels),
            "clipped": dict(self.clipped),
        }


_TIME_WORDS = re.compile(
    r"\b(today|yesterday|this week|last week|this month|last month|"
    r"(?:last|past) (\d{1,3}) (day|days|week|weeks))\b",
    re.I,
)
_INTENT_RULES = (
    ("accountability", re.compile(r"\b(who|owner|owns|assigned|responsible)\b", re.I)),
    ("temporal_context", re.compile(r"\b(when|since|until|ago|timeline|history of)\b", re.I)),
    ("institutional", re.compile(r"\b(decide[ds]?|decision|agreed|policy|why did we)\b", re.I)),
    ("dependency", re.compile(r"\b(depends?|blocked|blocking|waiting on)\b", re.I)),
    ("cross_channel", re.compile(r"\b(everywhere|across|all channels|other channels)\b", re.I)),
)
_ENTITY = re.compile(r"(?:#[\w-]{2,40}|@[\w.-]{2,40}|\"[^\"]{2,60}\"|\b[A-Z][\w-]{2,40}\b)")
_STOP = {"What", "When", "Who", "Why", "How", "Which", "Where", "Did", "Does", "The", "Can"}


def time_range(query: str, now: datetime) -> tuple[datetime | None, datetime | None]:
    """A time range named in the query (English phrases), or (None, None)."""
    match = _TIME_WORDS.search(query)
    if not match:
        return None, None
    phrase = match.group(1).lower()
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if phrase == "today":
        return day, None
    if phrase == "yesterday":
        return day - timedelta(days=1), day
    if phrase == "this week":
        return day - timedelta(days=day.weekday()), None
    if phrase == "last week":
        start = day - timedelta(days=day.weekday() + 7)
        return start, start + timedelta(days=7)
    if phrase == "this month":
        return day.replace(day=1), None
    if phrase == "last month":
        end = day.replace(day=1)
        return (end - timedelta(days=1)).replace(day=1), end
    n, unit = int(match.group(2)), match.group(3).lower()
    return now - timedelta(days=n * (7 if unit.startswith("week") else 1)), None


def entities(query: str) -> tuple[str, ...]:
    found: list[str] = []
    for m in _ENTITY.finditer(query):
        word = m.group(0).strip('"')
        if word not in _STOP and word not in found:
            found.append(word)
    return tuple(found[:10])


def deterministic_plan(query: str, paths: list[str], now: datetime) -> QueryPlan:
    """Intent, entities and time range from patterns; every permitted path, the raw query."""
    intent = next((name for name, rule in _INTENT_RULES if rule.search(query)), "factual_recall")
    since, until = time_range(query, now)
    return QueryPlan(
        intent=intent,
        entities=entities(query),
        since=since,
        until=until,
        channels=None,
        paths=tuple(PathPlan(p, query) for p in sorted(paths)),
    )


def fallback_plan(query: str, paths: list[str], now: datetime) -> QueryPlan:
    """What an invalid model plan becomes: all permitted paths with the raw query."""
    plan = deterministic_plan(query, paths, now)
    return QueryPlan(
        intent="factual_recall",
        entities=(),
        since=None,
        until=None,
        channels=None,
        paths=plan.paths,
        source="fallback",
    )


def plan_schema(paths: list[str]) -> dict[str, Any]:
    """The strict JSON schema the routing model must answer with."""
    nullable_time = {"type": ["string", "null"], "description": "ISO 8601 date-time or null"}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["intent", "entities", "since", "until", "channels", "paths", "format"],
        "properties": {
            "intent": {"type": "string", "enum": list(INTENTS)},
            "entities": {"type": "array", "items": {"type": "string", "maxLength": 80}},
            "since": nullable_time,
            "until": nullable_time,
            "channels": {"type": ["array", "null"], "items": {"type": "string"}},
            "paths": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["path", "query"],
                    "properties": {
                        "path": {"type": "string", "enum": sorted(paths) or [""]},
                        "query": {"type": "string", "maxLength": 1000},
                    },
                },
            },
            "format": {"type": "string", "enum": list(FORMATS)},
        },
    }


def parse_plan(data: Any, query: str) -> QueryPlan:
    """Validate a model's plan (pydantic, at the boundary); ValueError when it does not fit."""
    from pydantic import ValidationError

    from gigi_core.retrieval.plan_model import ModelPlan

    try:
        model = ModelPlan.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"invalid plan ({exc.error_count()} problems)") from None
    return QueryPlan(
        intent=model.intent,
        entities=tuple(model.entities[:10]),
        since=model.since,
        until=model.until,
        channels=frozenset(model.channels) if model.channels is not None else None,
        paths=tuple(PathPlan(p.path, p.query.strip() or query) for p in model.paths),
        response_format=model.format,
        source="model",
    )


def clip(plan: QueryPlan, permitted: list[str], visible: frozenset[str], query: str) -> QueryPlan:
    """Drop paths the actor may not use and channels the actor cannot see, counting both.

    A plan left with no path asks every permitted path with the raw query; a plan naming
    only invisible channels falls back to every visible channel (it never widens scope).
    """
    allowed = set(permitted)
    kept = []
    for p in plan.paths:
        if p.path in allowed and all(k.path != p.path for k in kept):
            kept.append(p)
    clipped = dict(plan.clipped)
    unknown = sum(1 for p in plan.paths if p.path not in allowed)
    if unknown:
        clipped["paths"] = unknown
    if not kept:
        kept = [PathPlan(p, query) for p in sorted(allowed)]
    channels = plan.channels
    if channels is not None:
        hidden = len(channels - visible)
        if hidden:
            clipped["channels"] = hidden
        channels = channels & visible or None
    return QueryPlan(
        intent=plan.intent,
        entities=plan.entities,
        since=plan.since,
        until=plan.until,
        channels=channels,
        paths=tuple(kept),
        response_format=plan.response_format,
        source=plan.source,
        clipped=clipped,
    )
