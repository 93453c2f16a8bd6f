"""Plain DML straight to sqlite3 on the writer thread: each statement compiled once, rows bound.

Each ``Connection.execute`` of a Core ``INSERT``/``UPDATE``/``DELETE`` costs SQLAlchemy an
execution context, a ``construct_params`` per row and a result object: on the writer thread
that was about half the time of a turn's write (seven statements). The writer hands its
write functions a ``FastConnection``. A statement object it sees a second time and can run
exactly as SQLAlchemy would (no RETURNING, no Python-side defaults, no literal-rendered
parameters; expanding IN lists are fine) is compiled once per set of parameter keys (and
IN-list lengths) and run with the driver's cursor in the same transaction. Everything
else, a statement built per call, and everything while an event listener watches the
engine (``--count``, tests) goes through SQLAlchemy unchanged. The result of a fast
statement has ``rowcount`` and ``lastrowid`` only; driver errors are raised as
SQLAlchemy's (``IntegrityError`` ...).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.dml import UpdateBase

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

log = logging.getLogger(__name__)
_PLANS_KEPT = 256


@dataclass(frozen=True)
class _Plan:
    """A compiled statement and, per positional parameter, where its value comes from."""

    sql: str
    keys: frozenset[str]  # the parameter keys every row must have, exactly
    # Per ``?``: the row's key (None: a constant in the statement), the constant, the
    # type's bind processor, and the length of an expanded IN list (None: one value).
    slots: tuple[tuple[str | None, Any, Callable[[Any], Any] | None, int | None], ...]
    # The common case, no constants and no IN lists: the values in order at C speed.
    getter: Callable[[Mapping[str, Any]], Any] | None
    processed: tuple[tuple[int, Callable[[Any], Any]], ...]  # (position, processor)

    def bind(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        if self.getter is not None:
            values = self.getter(row)
            if len(self.slots) == 1:
                values = (values,)
            if not self.processed:
                return values  # type: ignore[no-any-return]
            values = list(values)
            for position, processor in self.processed:
                values[position] = processor(values[position])
            return tuple(values)
        bound: list[Any] = []
        for key, constant, processor, expanded in self.slots:
            value = row[key] if key is not None else constant
            if expanded is None:
                bound.append(value if processor is None else processor(value))
            else:
                bound.extend(v if processor is None else processor(v) for v in value)
        return tuple(bound)


@dataclass(frozen=True)
class FastResult:
    """What a DML statement without RETURNING tells its caller."""

    rowcount: int
    lastrowid: int | None = None


_NOT_FAST = object()  # a plan cache entry: this statement always goes through SQLAlchemy


@dataclass
class Plans:
    """A writer's compiled statements, shared by its batches: each is compiled once."""

    compiled: dict[Any, Any] = field(default_factory=dict)  # (statement, keys) -> family
    seen: set[int] = field(default_factory=set)  # statements run once, by id: not compiled


class FastConnection:
    """Wraps the writer thread's ``Connection``; everything but plain DML is passed on."""

    def __init__(self, conn: Connection, plans: Plans) -> None:
        self._conn = conn
        self._plans = plans
        dispatch = conn.dispatch  # a listener (statement counts, tests) sees every statement
        self._watched = bool(dispatch.before_cursor_execute or dispatch.after_cursor_execute)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, statement: Any, parameters: Any = None, **kwargs: Any) -> Any:
        rows = _rows(parameters)
        if kwargs or rows is None or self._watched or not isinstance(statement, UpdateBase):
            return self._conn.execute(statement, parameters, **kwargs)
        plan = self._plan(statement, rows)
        if plan is None:
            return self._conn.execute(statement, parameters, **kwargs)
        bound = [plan.bind(row) for row in rows]
        cursor = self._conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            if len(bound) == 1:
                cursor.execute(plan.sql, bound[0])
            else:
                cursor.executemany(plan.sql, bound)
            return FastResult(cursor.rowcount, cursor.lastrowid)
        except self._conn.dialect.loaded_dbapi.Error as exc:
            raise DBAPIError.instance(
                plan.sql, bound, exc, self._conn.dialect.loaded_dbapi.Error
            ) from exc
        finally:
            cursor.close()

    def _plan(self, statement: UpdateBase, rows: list[Mapping[str, Any]]) -> _Plan | None:
        """The plan for these rows (compiled on first use), or None: SQLAlchemy runs them."""
        first = rows[0]
        key = (statement, tuple(sorted(first)))
        compiled, seen = self._plans.compiled, self._plans.seen
        family = compiled.get(key)
        if family is None:
            if id(statement) not in seen:  # a statement built per call is never run again:
                if len(seen) >= _PLANS_KEPT:  # compiling it would only cost
                    seen.clear()
                seen.add(id(statement))
                return None
            family = _guarded(_family, self._conn, statement, first)
            if len(compiled) >= _PLANS_KEPT:
                compiled.clear()
            compiled[key] = family
        if family is _NOT_FAST:
            return None
        expanding, plans = family
        lengths = tuple(len(first[k]) for k in expanding)  # an IN list's marks follow it
        plan = plans.get(lengths)
        if plan is None:
            plan = plans[lengths] = _guarded(_compile, self._conn, statement, first)
        if plan is _NOT_FAST or any(
            row.keys() != plan.keys or tuple(len(row[k]) for k in expanding) != lengths
            for row in rows[1:]
        ):
            return None
        return plan  # type: ignore[no-any-return]


def _rows(parameters: Any) -> list[Mapping[str, Any]] | None:
    """The parameter sets as a non-empty list of dicts, or None (SQLAlchemy decides)."""
    if isinstance(parameters, Mapping):
        return [parameters] if parameters else None
    if (
        isinstance(parameters, Sequence)
        and parameters
        and all(isinstance(p, dict) for p in parameters)
    ):
        return list(parameters)
    return None


def _guarded(make: Callable[..., Any], *args: Any) -> Any:
    """A plan, or ``_NOT_FAST`` when planning fails: the compiler attributes read here are
    SQLAlchemy's, and a version that changed them must cost speed, never a write."""
    try:
        return make(*args)
    except Exception:
        log.debug("statement left to SQLAlchemy: planning it failed", exc_info=True)
        return _NOT_FAST


def _family(conn: Connection, statement: UpdateBase, row: Mapping[str, Any]) -> Any:
    """The keys of the statement's expanding IN parameters and its plans per their lengths."""
    compiled: Any = statement.compile(dialect=conn.dialect, column_keys=sorted(row))
    if any(not b.expanding for b in compiled.post_compile_params):
        return _NOT_FAST  # literal_execute parameters are rendered into the SQL
    expanding = tuple(sorted({b.key for b in compiled.post_compile_params}))
    if any(not isinstance(row.get(k), list | tuple) for k in expanding):
        return _NOT_FAST
    return expanding, {}


def _compile(conn: Connection, statement: UpdateBase, row: Mapping[str, Any]) -> Any:
    """Compile ``statement`` for ``row``'s keys, or ``_NOT_FAST`` if SQLAlchemy must run it."""
    compiled: Any = statement.compile(dialect=conn.dialect, column_keys=sorted(row))
    if (
        compiled.positiontup is None
        or compiled.returning
        or compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.literal_execute_params
        or compiled.escaped_bind_names
    ):
        return _NOT_FAST
    processors = compiled._bind_processors
    sql = compiled.string
    slots: list[tuple[str | None, Any, Callable[[Any], Any] | None, int | None]] = []
    for name in compiled.positiontup:
        bind = compiled.binds[name]
        processor = processors.get(name)
        if bind.expanding:
            values = row.get(bind.key)
            if not isinstance(values, list | tuple) or not values:
                return _NOT_FAST  # an empty IN renders differently; SQLAlchemy knows how
            marks = ", ".join("?" * len(values))
            token = f"__[POSTCOMPILE_{name}]"
            if sql.count(token) != 1:
                return _NOT_FAST
            sql = sql.replace(token, marks)
            slots.append((bind.key, None, processor, len(values)))
        elif bind.key in row:
            slots.append((bind.key, None, processor, None))
        elif bind.callable is not None or bind.required:
            return _NOT_FAST  # a value SQLAlchemy computes per execution, or a missing one
        else:
            slots.append((None, bind.effective_value, processor, None))
    if "__[POSTCOMPILE_" in sql:
        return _NOT_FAST
    simple = all(key is not None and expanded is None for key, _, _, expanded in slots)
    getter = operator.itemgetter(*(key for key, _, _, _ in slots)) if simple and slots else None
    processed = tuple((i, slot[2]) for i, slot in enumerate(slots) if slot[2] is not None)
    return _Plan(sql, frozenset(row), tuple(slots), getter, processed)
