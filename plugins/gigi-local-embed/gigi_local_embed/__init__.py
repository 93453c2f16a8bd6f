"""Gigi's offline embedder: provider ``local`` serving the ``embedding`` purpose with no key.

The hook only; the model (wordllama's 256-d static embeddings, inside its wheel) loads on
the first ``embed()`` call, off the event loop, and never touches the network.
"""

from __future__ import annotations

from typing import Any

from gigi_core import hookimpl
from gigi_core.llm import LazyProvider, lazy_exports

_EXPORTS = {
    "LocalEmbedProvider": "gigi_local_embed.provider",
    "MODEL_ID": "gigi_local_embed.provider",
    "DIMENSIONS": "gigi_local_embed.provider",
}

__all__ = [*sorted(_EXPORTS), "register_providers"]

__getattr__ = lazy_exports(__name__, _EXPORTS)


@hookimpl
def register_providers(register: Any) -> None:
    """Register ``local`` (its module, and the model, load only when first used)."""
    register(LazyProvider("local", "gigi_local_embed.provider:LocalEmbedProvider"))
