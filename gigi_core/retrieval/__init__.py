"""The retrieval port for plugins: ``Hit``, ``Scope``, ``Citation``, the ``Retriever`` protocol.

A plugin registers retrieval paths with the ``register_retrievers`` hook::

    @hookimpl
    def register_retrievers(register):
        register("notes", NotesRetriever())   # name, capability, paths, async retrieve()

Import from here, never from ``gigi_core.retrieval.<module>`` (internal). Importing this
package is cheap: each name loads its module on first use. docs/retrieval.md explains the
engine, the merge and every setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gigi_core.llm.lazy import lazy_exports

if TYPE_CHECKING:
    from gigi_core.retrieval.catalog import match_actions
    from gigi_core.retrieval.config import RetrievalSettings
    from gigi_core.retrieval.engine import RetrievalResult, retrieve
    from gigi_core.retrieval.fusion import asks_for_time, merge
    from gigi_core.retrieval.plan import PathPlan, QueryPlan
    from gigi_core.retrieval.port import (
        Citation,
        Hit,
        PathReport,
        Ranked,
        RetrievalError,
        Retriever,
        Scope,
    )

_PORT = "gigi_core.retrieval.port"
_LAZY = {
    "Citation": _PORT,
    "Hit": _PORT,
    "PathReport": _PORT,
    "Ranked": _PORT,
    "RetrievalError": _PORT,
    "Retriever": _PORT,
    "Scope": _PORT,
    "PathPlan": "gigi_core.retrieval.plan",
    "QueryPlan": "gigi_core.retrieval.plan",
    "RetrievalSettings": "gigi_core.retrieval.config",
    "RetrievalResult": "gigi_core.retrieval.engine",
    "retrieve": "gigi_core.retrieval.engine",
    "merge": "gigi_core.retrieval.fusion",
    "asks_for_time": "gigi_core.retrieval.fusion",
    "match_actions": "gigi_core.retrieval.catalog",
}

__all__ = [
    "Citation",
    "Hit",
    "PathPlan",
    "PathReport",
    "QueryPlan",
    "Ranked",
    "RetrievalError",
    "RetrievalResult",
    "RetrievalSettings",
    "Retriever",
    "Scope",
    "asks_for_time",
    "match_actions",
    "merge",
    "retrieve",
]

__getattr__ = lazy_exports("gigi_core.retrieval", _LAZY)
