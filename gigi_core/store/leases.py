"""Leases on the database's clock: who holds a run or a gateway shard, and until when.

A lease is an owner string and an expiry in epoch seconds, both set by the holder's own
writes. Expiries are computed by the database (``db_epoch()``), so processes on hosts with
skewed clocks still agree on when a lease has run out; the fence itself is the owner
string, which a takeover replaces, so a stale holder's conditional writes match nothing.
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import FunctionElement
from sqlalchemy.types import Float


class db_epoch(FunctionElement[float]):
    """The database's current time in epoch seconds (wall clock, not the transaction's)."""

    type = Float()
    inherit_cache = True


@compiles(db_epoch, "postgresql")
def _pg_epoch(element: Any, compiler: Any, **kw: Any) -> str:
    return "extract(epoch from clock_timestamp())"


@compiles(db_epoch, "sqlite")
def _sqlite_epoch(element: Any, compiler: Any, **kw: Any) -> str:
    return "((julianday('now') - 2440587.5) * 86400.0)"


def new_owner() -> str:
    """An owner string for one kernel: host, pid and a random part (a pid can be reused)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"


def lease_seconds(variable: str, default: float) -> float:
    """A lease length from the environment; the error names the variable to fix."""
    from gigi_core.errors import ConfigError

    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{variable}: {raw!r} is not a positive number of seconds")
    return value
