"""Test helpers for retrieval paths and context packs: a scripted retriever, a plugin that
registers it, and ``assert_pack`` to check a pack's labels, sections and restore handles.

    from gigi_core.testing import FakeRetriever, RetrieverPlugin, assert_pack
    notes = FakeRetriever("notes", [hit("notes:n:1", "channel c1 text", "c1")])
    async with open_test_kernel(tmp_path, extra_plugins=[("notes", RetrieverPlugin(tmp_path, notes))]) as k:
        ...
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gigi_core import hookimpl
from gigi_core.retrieval import Citation, Hit, Scope


def hit(
    source_id: str,
    text: str,
    channel_id: str | None,
    *,
    kind: str = "message",
    when: datetime | None = None,
    confidence: float = 1.0,
    paths: Sequence[str] = (),
    **extra: Any,
) -> Hit:
    """A ``Hit`` with a citation label made from the channel and date."""
    label = f"#{channel_id} · {when.date().isoformat() if when else 'undated'}"
    return Hit(
        source_id=source_id,
        kind=kind,
        text=text,
        channel_id=channel_id,
        timestamp=when,
        confidence=confidence,
        citation=Citation(label),
        paths=tuple(paths),
        **extra,
    )


@dataclass
class FakeRetriever:
    """Returns its ``hits`` (those in scope unless ``respect_scope=False``), best first.

    ``delay`` makes it slow (a hang past the engine's deadline), ``raises`` makes it fail,
    ``returns`` replaces the answer with anything (malformed output); ``calls`` records
    ``(query, scope, limit)``. ``delete(source_id)`` removes a hit, as a deleted message.
    """

    name: str
    hits: list[Any] = field(default_factory=list)
    capability: str = "notes.read"
    paths: tuple[str, ...] = ()
    source: str = "memory"
    plugin: str | None = None
    delay: float = 0.0
    raises: BaseException | None = None
    returns: Any = None
    respect_scope: bool = True
    match_words: bool = False  # keep only hits sharing a word with the query
    calls: list[tuple[str, Scope, int]] = field(default_factory=list)

    async def retrieve(self, query: str, scope: Scope, limit: int) -> list[Any]:
        self.calls.append((query, scope, limit))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.raises is not None:
            raise self.raises
        if self.returns is not None:
            return self.returns  # type: ignore[no-any-return]
        out = [h for h in self.hits if not self.respect_scope or _in(h, scope)]
        if self.match_words:
            wanted = set(query.lower().split())
            out = [h for h in out if wanted & set(h.text.lower().split())]
        return out[:limit]

    async def lookup(self, source_ids: Sequence[str], scope: Scope) -> list[Hit]:
        wanted = set(source_ids)
        return [h for h in self.hits if h.source_id in wanted and _in(h, scope)]

    def delete(self, source_id: str) -> None:
        self.hits = [h for h in self.hits if getattr(h, "source_id", None) != source_id]

    def replace(self, new: Hit) -> None:
        self.hits = [new if h.source_id == new.source_id else h for h in self.hits]


def _in(h: Any, scope: Scope) -> bool:
    return not isinstance(h, Hit) or scope.admits(h)


class RetrieverPlugin:
    """A plugin named ``plugin`` declaring each retriever's capability and registering them.

    ``capabilities`` maps a capability to its default (``everyone`` or ``admins``); a
    retriever's own capability defaults to ``everyone`` when not listed.
    """

    def __init__(
        self,
        folder: Path,
        *retrievers: Any,
        plugin: str = "notes",
        capabilities: dict[str, str] | None = None,
    ) -> None:
        self.retrievers = retrievers
        caps = dict(capabilities or {})
        for r in retrievers:
            caps.setdefault(r.capability, "everyone")
        lines = "".join(
            f"    - {{name: {name}, description: Read it, default: {default}}}\n"
            for name, default in sorted(caps.items())
        )
        self.manifest = Path(folder) / f"{plugin}-retrievers.yaml"
        self.manifest.write_text(
            "manifest_version: 1\nplugin:\n"
            f"  name: {plugin}\n  version: 0.1.0\n  description: Test retrieval paths.\n"
            "  data_statement: Stores nothing.\n  capabilities:\n" + lines
        )

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.manifest)

    @hookimpl
    def register_retrievers(self, register: Any) -> None:
        for r in self.retrievers:
            register(r.name, r)


def assert_pack(
    pack: Any,
    *,
    kept: Iterable[str] | None = None,
    order: Sequence[str] | None = None,
    unchanged: Iterable[str] | None = None,
    withdrawn: Iterable[str] | None = None,
    dropped: Iterable[str] | None = None,
    sections: Sequence[str] | None = None,
    labels: dict[str, int] | None = None,
    absent_text: Iterable[str] = (),
) -> None:
    """Check a ``ContextPack``; each failing check names what differed.

    ``kept`` the source ids shown with text (any order), ``order`` them in render order,
    ``unchanged``/``withdrawn``/``dropped`` by source id, ``sections`` the section titles in
    render order, ``labels`` source id -> label, ``absent_text`` strings render() must not
    contain (deleted or hidden content) and that ``trace()`` never contains.
    """
    trace = pack.trace()
    shown = [i.source_id for i in pack.items]
    if kept is not None:
        assert sorted(shown) == sorted(kept), f"kept {sorted(shown)}, expected {sorted(kept)}"
    if order is not None:
        assert shown == list(order), f"order {shown}, expected {list(order)}"
    if unchanged is not None:
        got = sorted(trace["unchanged"])
        assert got == sorted(unchanged), f"unchanged {got}, expected {sorted(unchanged)}"
    if withdrawn is not None:
        got = sorted(trace["withdrawn"])
        assert got == sorted(withdrawn), f"withdrawn {got}, expected {sorted(withdrawn)}"
    if dropped is not None:
        got = sorted(trace["dropped"])
        assert got == sorted(dropped), f"dropped {got}, expected {sorted(dropped)}"
    text = pack.render()
    if sections is not None:
        titles = [line[3:] for line in text.splitlines() if line.startswith("## ")]
        assert titles == list(sections), f"sections {titles}, expected {list(sections)}"
    if labels is not None:
        all_items = {i.source_id: i.label for i in [*pack.items, *pack.unchanged]}
        got_labels = {sid: all_items.get(sid) for sid in labels}
        assert got_labels == labels, f"labels {got_labels}, expected {labels}"
    import json

    dumped = json.dumps(trace, default=str)
    for needle in absent_text:
        assert needle not in text, f"render() contains {needle!r}"
        assert needle not in dumped, f"trace() contains {needle!r}"
