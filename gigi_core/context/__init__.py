"""The context broker and pack builder (kernel-internal; the agent runner calls it).

``build_context(kernel, actor=..., guild_id=..., channel_id=..., visible_channels=...,
text=..., mode="auto", previous=None) -> ContextPack``; see docs/retrieval.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gigi_core.llm.lazy import lazy_exports

if TYPE_CHECKING:
    from gigi_core.context.broker import MODES, build_context, decide
    from gigi_core.context.pack import ContextPack, PackItem, PackState, assemble
    from gigi_core.context.tokens import count_tokens

_LAZY = {
    "MODES": "gigi_core.context.broker",
    "build_context": "gigi_core.context.broker",
    "decide": "gigi_core.context.broker",
    "ContextPack": "gigi_core.context.pack",
    "PackItem": "gigi_core.context.pack",
    "PackState": "gigi_core.context.pack",
    "assemble": "gigi_core.context.pack",
    "count_tokens": "gigi_core.context.tokens",
}
__all__ = [
    "MODES",
    "ContextPack",
    "PackItem",
    "PackState",
    "assemble",
    "build_context",
    "count_tokens",
    "decide",
]
__getattr__ = lazy_exports("gigi_core.context", _LAZY)
