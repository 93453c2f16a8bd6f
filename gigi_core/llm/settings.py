"""Limits of the owned client, from the environment, checked with errors naming the variable.

| variable | default | what it bounds |
|---|---|---|
| ``GIGI_LLM_ATTEMPT_TIMEOUT`` | 300 s | one HTTP attempt, start to last body byte |
| ``GIGI_LLM_CALL_TIMEOUT`` | 600 s | one call: every attempt and every retry wait |
| ``GIGI_LLM_MAX_RESPONSE_BYTES`` | 8 MiB | one reply body (decompressed) |
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from gigi_core.errors import ConfigError

ATTEMPT_TIMEOUT_ENV = "GIGI_LLM_ATTEMPT_TIMEOUT"
CALL_TIMEOUT_ENV = "GIGI_LLM_CALL_TIMEOUT"
MAX_RESPONSE_BYTES_ENV = "GIGI_LLM_MAX_RESPONSE_BYTES"


def env_number(name: str, default: float, *, whole: bool = False) -> float:
    """A positive finite number from ``name`` (``default`` when unset or blank)."""
    raw = os.environ.get(name) or ""
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0) or (whole and value != int(value)):
        kind = "a whole number above 0" if whole else "a number of seconds above 0"
        raise ConfigError(f"{name}: {raw!r} is not {kind}", hint=f"unset {name} or fix it")
    return value


@dataclass(frozen=True)
class LlmSettings:
    """Deadlines and the body cap every provider call gets (see the table above)."""

    attempt_timeout: float = 300.0
    call_timeout: float = 600.0
    max_response_bytes: int = 8 * 1024 * 1024

    def __post_init__(self) -> None:
        for name, value in (
            ("attempt_timeout", self.attempt_timeout),
            ("call_timeout", self.call_timeout),
            ("max_response_bytes", self.max_response_bytes),
        ):
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"LlmSettings.{name} must be above 0, got {value!r}")

    @classmethod
    def from_env(cls) -> LlmSettings:
        """Read the three variables; an invalid value raises ``ConfigError`` naming it."""
        return cls(
            attempt_timeout=env_number(ATTEMPT_TIMEOUT_ENV, cls.attempt_timeout),
            call_timeout=env_number(CALL_TIMEOUT_ENV, cls.call_timeout),
            max_response_bytes=int(
                env_number(MAX_RESPONSE_BYTES_ENV, cls.max_response_bytes, whole=True)
            ),
        )
