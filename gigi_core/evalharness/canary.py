"""Canaries: unique strings planted where content enters Gigi, hunted for where it must not be.

Content (request text, model text, tool arguments, tool results, keys, messages a surface
saw) may live only in the reply and in sealed columns. After a case, every column of every
table is read back — found by reflection, so a plugin's tables and a table added tomorrow
are scanned too, with no list of names — plus the terms of every SQLite FTS5 index, and
every log record is checked. A canary is found by its random part too, so a copy that was
tokenised (``canary qzkw…`` in a search index, ``'qzkw…':2`` in a ``tsvector``) still counts.
The random part is letters only: a text-search parser would split hex such as ``12e4…`` as
a number and the copy would be missed.
"""

from __future__ import annotations

import json
import logging
import secrets
import string
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

PLACEHOLDER = "${canary}"

#: (table, column) pairs that hold ciphertext by design; everything else is scanned.
SEALED_COLUMNS: frozenset[tuple[str, str]] = frozenset(
    {
        ("sealed_secrets", "ciphertext"),
        ("sealed_secrets", "nonce"),
        ("llm_credentials", "ciphertext"),
        ("llm_credentials", "nonce"),
        ("agent_runs", "state_sealed"),
        ("agent_runs", "state_nonce"),
    }
)


@dataclass(frozen=True)
class Leak:
    """Where a canary turned up, and where it had been planted."""

    where: str  # "table.column" or "log logger.name"
    source: str

    def __str__(self) -> str:
        return f"canary planted in {self.source} found in {self.where}"


@dataclass
class Canaries:
    """The canaries of one case run; ``new`` plants another one and remembers its source."""

    planted: dict[str, str] = field(default_factory=dict)  # token -> source

    def new(self, source: str) -> str:
        token = "canary-" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(16))
        self.planted[token] = source
        return token

    def expand(self, data: Any, token: str) -> Any:
        """Replace ``${canary}`` in every string of ``data`` (dicts, lists, scalars)."""
        if isinstance(data, str):
            return data.replace(PLACEHOLDER, token)
        if isinstance(data, dict):
            return {k: self.expand(v, token) for k, v in data.items()}
        if isinstance(data, list):
            return [self.expand(v, token) for v in data]
        return data

    def find(self, text: str) -> list[str]:
        """The canaries in ``text``, whole or by their random part (a tokenised copy)."""
        return [token for token in self.planted if token.removeprefix("canary-") in text]


def as_text(value: Any) -> str:
    """A column value as text; bytes are decoded leniently so a plaintext copy cannot hide."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


async def scan_database(
    engine: AsyncEngine,
    canaries: Canaries,
    *,
    sealed: frozenset[tuple[str, str]] = SEALED_COLUMNS,
) -> list[Leak]:
    """Every (table, column) outside ``sealed`` holding a planted canary."""
    from sqlalchemy import inspect, text

    leaks: set[Leak] = set()
    async with engine.connect() as conn:
        tables = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
        for table in sorted(tables):
            result = await conn.execute(text(f'SELECT * FROM "{table}"'))
            columns = list(result.keys())
            for row in result:
                for column, value in zip(columns, row, strict=True):
                    if (table, column) in sealed:
                        continue
                    for token in canaries.find(as_text(value)):
                        leaks.add(Leak(f"{table}.{column}", canaries.planted[token]))
        for table, terms in await _fts5_terms(conn):
            for token in canaries.find(terms):
                leaks.add(Leak(f"{table} (index terms)", canaries.planted[token]))
    return sorted(leaks, key=str)


async def _fts5_terms(conn: Any) -> list[tuple[str, str]]:
    """Every term of every SQLite FTS5 index, read through ``fts5vocab``: the index's own
    blobs store terms prefix-compressed, so a raw read could miss a canary inside them."""
    from sqlalchemy import text

    if conn.dialect.name != "sqlite":
        return []
    found = await conn.execute(
        text(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND lower(sql) LIKE 'create virtual table%using fts5%'"
        )
    )
    out = []
    for (name,) in list(found):
        vocab = f"gigi_canary_vocab_{uuid.uuid4().hex[:8]}"
        quoted = name.replace('"', '""')
        await conn.execute(
            text(f'CREATE VIRTUAL TABLE temp."{vocab}" USING fts5vocab(main, "{quoted}", row)')
        )
        try:
            terms = [row[0] for row in await conn.execute(text(f'SELECT term FROM temp."{vocab}"'))]
        finally:
            await conn.execute(text(f'DROP TABLE temp."{vocab}"'))
        out.append((name, " ".join(str(t) for t in terms)))
    return out


async def scan_at_rest(
    url: Any, canaries: Canaries, *, sealed: frozenset[tuple[str, str]] = SEALED_COLUMNS
) -> list[Leak]:
    """``scan_database`` on a fresh engine, after the kernel that wrote there has closed."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(make_url(url))
    try:
        return await scan_database(engine, canaries, sealed=sealed)
    finally:
        await engine.dispose()


class LogCapture(logging.Handler):
    """Keeps the text of every record (message, arguments, exception) emitted during a case."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str]] = []
        self.lines: list[str] = []  # WARNING and above, one line each: shown for failing cases

    def emit(self, record: logging.LogRecord) -> None:
        try:
            parts = [record.getMessage()]
        except Exception:  # a broken format string still shows its raw parts
            parts = [str(record.msg), repr(record.args)]
        if record.levelno >= logging.WARNING:
            self.lines.append(f"{record.levelname} {record.name}: {parts[0]}")
        if record.exc_info and record.exc_info[1] is not None:
            parts.append(logging.Formatter().formatException(record.exc_info))
        parts.append(record.stack_info or "")
        self.records.append((record.name, "\n".join(parts)))

    def leaks(self, canaries: Canaries) -> list[Leak]:
        found = {
            Leak(f"log {name}", canaries.planted[token])
            for name, text in self.records
            for token in canaries.find(text)
        }
        return sorted(found, key=str)


QUIET = ("aiosqlite", "asyncio", "sqlalchemy")  # chatty below WARNING (SQL echo, I/O)


SILENT = logging.CRITICAL + 1


@contextmanager
def capture_logs(*, silence: bool = False) -> Iterator[LogCapture]:
    """Capture every logger at DEBUG for the duration, then restore the levels.

    Without ``silence`` the root's other handlers (a console) still show what they showed
    before, nothing more; with it they show nothing while the case runs: a case that makes
    Gigi log an error on purpose must not look like a failure, and a failing case's
    ``CaseResult.log`` keeps the lines.
    """
    root = logging.getLogger()
    handler = LogCapture()
    saved = root.level
    quiet = {name: logging.getLogger(name).level for name in QUIET}
    others = {h: h.level for h in root.handlers}
    for other in others:
        other.setLevel(SILENT if silence else max(other.level, saved))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)
        for other, level in others.items():
            other.setLevel(level)
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)
