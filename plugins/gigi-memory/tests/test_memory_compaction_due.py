"""When SQLite's full-text compaction may run: spaced from the last one, and due at once when
there was none yet, however recently the machine booted."""

from __future__ import annotations

from types import SimpleNamespace

import gigi_memory.store as store_module
from gigi_memory.store import COMPACT_MIN_SECONDS, Store


def test_nothing_to_compact_is_never_due() -> None:
    assert Store(engine=None, dialect="sqlite").compact_due() is None  # type: ignore[arg-type]


def test_the_first_compaction_is_due_at_once_on_a_machine_booted_seconds_ago(monkeypatch) -> None:
    monkeypatch.setattr(store_module, "time", SimpleNamespace(monotonic=lambda: 3.0))
    store = Store(engine=None, dialect="sqlite", fts_dirty=True)  # type: ignore[arg-type]
    assert store.compact_due() == 0.0


def test_a_compaction_is_spaced_from_the_last(monkeypatch) -> None:
    monkeypatch.setattr(store_module, "time", SimpleNamespace(monotonic=lambda: 100.0))
    store = Store(engine=None, dialect="sqlite", fts_dirty=True)  # type: ignore[arg-type]
    store.last_compact_at, store.last_compact_seconds = 99.0, 1.0  # took 1 s: 20 s apart
    assert store.compact_due() == 19.0
    store.last_compact_seconds = 0.01
    assert store.compact_due() == COMPACT_MIN_SECONDS - 1.0
