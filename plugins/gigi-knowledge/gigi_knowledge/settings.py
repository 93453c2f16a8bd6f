"""Thresholds and limits, each overridable as ``GIGI_KNOWLEDGE_<NAME>``.

Read once per service start; an invalid value fails the start naming the variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields


class KnowledgeSettingsError(ValueError):
    """An environment override that is not a number in range (names the variable)."""


@dataclass(frozen=True)
class Settings:
    window_size: int = 30
    queue_depth: int = 500
    concurrency: int = 5
    extract_confidence_min: float = 0.6
    fallback_confidence: float = 0.3
    entity_dedup_threshold: float = 0.92
    contradiction_threshold: float = 0.78
    contradiction_days: int = 90
    contradiction_quiet_minutes: int = 30
    classify_timeout_seconds: float = 20.0
    extract_timeout_seconds: float = 60.0
    summarise_timeout_seconds: float = 60.0
    max_items: int = 20  # per kind, per extraction; more are dropped and counted
    staleness_days: int = 7  # an action without a deadline is checked after this long
    catchup_hours: int = 24
    complexity_threshold: float = 0.7  # above it extraction asks the ``complex`` slot first


def load() -> Settings:
    values: dict[str, object] = {}
    for f in fields(Settings):
        var = f"GIGI_KNOWLEDGE_{f.name.upper()}"
        raw = os.environ.get(var)
        if raw is None:
            continue
        kind = int if f.type in ("int", int) else float
        try:
            value = kind(raw)
        except ValueError:
            raise KnowledgeSettingsError(f"{var} must be a {kind.__name__}, not {raw!r}") from None
        if value < 0:
            raise KnowledgeSettingsError(f"{var} must not be negative")
        values[f.name] = value
    return Settings(**values)  # type: ignore[arg-type]
