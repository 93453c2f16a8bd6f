"""Every retrieval and packing constant as a setting with a documented default.

A value comes from, in order: the guild's ``retrieval`` block in the ``gigi`` plugin config
(``gigi plugins config gigi --guild G '{"retrieval": {"rrf_k": 40}}'``), the environment
(``GIGI_RETRIEVAL_RRF_K=40``), then the default below. docs/retrieval.md lists them all.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from gigi_core.errors import ConfigError


@dataclass(frozen=True)
class RetrievalSettings:
    """The knobs of the engine, the merge and the pack, with their defaults."""

    rrf_k: float = 60.0  # reciprocal rank fusion constant: 1 / (k + rank)
    path_weights: Mapping[str, float] = field(default_factory=dict)  # retriever -> weight
    default_weight: float = 1.0  # weight of a retriever path_weights does not name
    multi_path_boost: float = 1.5  # multiplier for a hit found by >= multi_path_min paths
    multi_path_min: int = 2
    recency_half_life_days: float = 30.0  # a hit this old counts half as much; 0 = off
    recency_floor: float = 0.25  # recency never lowers a score below this share
    confidence_weight: float = 0.5  # 0 ignores confidence; 1: score x confidence
    path_timeout_seconds: float = 2.0  # per retriever; the others still answer
    per_path_limit: int = 20  # hits asked of each retriever
    max_hits: int = 30  # merged hits handed to the pack builder
    max_query_chars: int = 1000  # longer queries are cut before analysis and retrieval
    analysis_timeout_seconds: float = 5.0  # the routing model's plan; then deterministic
    freshness_days: float = 180.0  # older items are marked stale in a pack; 0 = off
    context_window_tokens: int = 12000  # what the answer call may use in all
    reserve_system_tokens: int = 1500
    reserve_tool_result_tokens: int = 2000
    reserve_citation_tokens: int = 300
    reserve_restore_tokens: int = 200
    reserve_answer_tokens: int = 1500
    channel_messages: int = 20  # recent messages in channel mode

    def weight(self, path: str) -> float:
        return float(self.path_weights.get(path, self.default_weight))

    @property
    def pack_budget_tokens(self) -> int:
        """The window less every reserve: what the pack's items may take (6,500 by default)."""
        reserves = (
            self.reserve_system_tokens
            + self.reserve_tool_result_tokens
            + self.reserve_citation_tokens
            + self.reserve_restore_tokens
            + self.reserve_answer_tokens
        )
        return max(0, self.context_window_tokens - reserves)


_FIELDS = {f.name: f for f in fields(RetrievalSettings)}
_INTS = {n for n, f in _FIELDS.items() if f.type == "int"}


def _number(name: str, raw: Any, where: str) -> float | int:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(raw, bool) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: retrieval setting {name} must be a number >= 0")
    if name in _INTS:
        if value != int(value):
            raise ConfigError(f"{where}: retrieval setting {name} must be a whole number")
        return int(value)
    return value


def _weights(raw: Any, where: str) -> dict[str, float]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: path_weights must map retriever names to numbers")
    return {str(k): float(_number("path_weights", v, where)) for k, v in raw.items()}


def apply(base: RetrievalSettings, values: Mapping[str, Any], where: str) -> RetrievalSettings:
    """``base`` with ``values`` applied; a ConfigError names the setting that is wrong."""
    changes: dict[str, Any] = {}
    for name, raw in values.items():
        if name not in _FIELDS:
            known = ", ".join(sorted(_FIELDS))
            raise ConfigError(f"{where}: unknown retrieval setting {name!r} (known: {known})")
        if name == "path_weights":
            changes[name] = {**base.path_weights, **_weights(raw, where)}
        else:
            changes[name] = _number(name, raw, where)
    return replace(base, **changes)


def from_env(environ: Mapping[str, str] | None = None) -> RetrievalSettings:
    """The process defaults: ``GIGI_RETRIEVAL_<SETTING>`` variables over the built-in ones."""
    env = os.environ if environ is None else environ
    values = {
        name: env[f"GIGI_RETRIEVAL_{name.upper()}"]
        for name in _FIELDS
        if f"GIGI_RETRIEVAL_{name.upper()}" in env
    }
    return apply(RetrievalSettings(), values, "environment")


def for_guild(guild_config: Mapping[str, Any] | None) -> RetrievalSettings:
    """Settings for a guild: its ``gigi`` plugin config's ``retrieval`` block over the env."""
    base = from_env()
    block = (guild_config or {}).get("retrieval") if guild_config else None
    if not block:
        return base
    if not isinstance(block, Mapping):
        raise ConfigError("gigi plugin config: retrieval must be an object of settings")
    return apply(base, block, "gigi plugin config")


def describe() -> list[tuple[str, Any]]:
    """``(name, default)`` for every setting, for docs and ``gigi retrieve --settings``."""
    defaults = RetrievalSettings()
    return [(name, getattr(defaults, name)) for name in _FIELDS]
