"""The public API for testing Gigi plugins: a real kernel, a scripted model, fake providers.

    from gigi_core.testing import open_test_kernel, ScriptedModel
    from gigi_core.testing.scripted import call, say          # scripted model turns
    from gigi_core.testing import start_event_router          # before simcord.run(bot)
    from gigi_core.testing.fake_providers import FakeOpenAI   # wire-level fake servers

``gigi_core.testing`` and its submodules (``scripted``, ``fake_providers``, ``kernel``)
are public: a plugin's tests may import them. Importing this package is cheap; each name
loads its module on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.manifest.models import wire_name
    from gigi_core.plugins import LoadedPlugins
    from gigi_core.testing.events import start_event_router
    from gigi_core.testing.fake_providers import (
        FakeAnthropic,
        FakeGemini,
        FakeOpenAI,
        FakeOpenRouter,
        FakeProviderServer,
        FakeToolCall,
        RecordedRequest,
        RecordingSleep,
        fake_vector,
    )
    from gigi_core.testing.kernel import open_test_kernel
    from gigi_core.testing.outbox import RecordingPoster
    from gigi_core.testing.retrieval import FakeRetriever, RetrieverPlugin, assert_pack
    from gigi_core.testing.scripted import ScriptedModel, ScriptExhausted

_FAKES = "gigi_core.testing.fake_providers"
_LAZY = {
    "open_test_kernel": "gigi_core.testing.kernel",
    # Before simcord.run(bot): the event router starts outside the bot, so the run settles.
    "start_event_router": "gigi_core.testing.events",
    "ScriptedModel": "gigi_core.testing.scripted",
    "ScriptExhausted": "gigi_core.testing.scripted",
    # The agent runtime with a model of your choice: AgentRuntime(kernel, model=ScriptedModel(...)).
    "AgentRuntime": "gigi_core.agent.runtime",
    # The provider-safe tool name the model sees for an action: wire_name("notes.count").
    "wire_name": "gigi_core.manifest.models",
    # Retrieval paths and context packs: a scripted retriever, its plugin, a pack check.
    # Posts a plugin makes through kernel.outbox, and pressing their buttons as a member.
    "RecordingPoster": "gigi_core.testing.outbox",
    "FakeRetriever": "gigi_core.testing.retrieval",
    "RetrieverPlugin": "gigi_core.testing.retrieval",
    "assert_pack": "gigi_core.testing.retrieval",
    "FakeAnthropic": _FAKES,
    "FakeGemini": _FAKES,
    "FakeOpenAI": _FAKES,
    "FakeOpenRouter": _FAKES,
    "FakeProviderServer": _FAKES,
    "FakeToolCall": _FAKES,
    "RecordedRequest": _FAKES,
    "RecordingSleep": _FAKES,
    "fake_vector": _FAKES,
}

__all__ = [
    "AgentRuntime",
    "FakeAnthropic",
    "FakeGemini",
    "FakeOpenAI",
    "FakeOpenRouter",
    "FakeProviderServer",
    "FakeRetriever",
    "FakeToolCall",
    "RecordedRequest",
    "RecordingPoster",
    "RecordingSleep",
    "RetrieverPlugin",
    "ScriptExhausted",
    "ScriptedModel",
    "assert_pack",
    "fake_vector",
    "load_test_plugins",
    "open_test_kernel",
    "start_event_router",
    "wire_name",
]


def load_test_plugins(
    plugins: Iterable[str] | None = None,
    *,
    extra: Iterable[tuple[str, object]] = (),
    strict: bool = True,
) -> LoadedPlugins:
    """Load plugins as the kernel does, without a database or a kernel.

    Only the entry-point plugins named in ``plugins`` (all when None) plus the in-process
    ``extra`` ``(name, module_or_object)`` pairs; the kernel's defaults always load.
    ``.registry`` holds each plugin's record, manifests, tools and providers. Strict by
    default, so a broken plugin fails the test instead of being recorded quietly.
    """
    from gigi_core.plugins import LoadOptions, load_plugins

    wanted = frozenset(plugins) if plugins is not None else None
    return load_plugins(LoadOptions(load=wanted, strict=strict), extra=list(extra))


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gigi_core.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
