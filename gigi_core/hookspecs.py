"""Every hook a Gigi plugin can implement. Read this module as the reference.

Registration hooks run once while the kernel starts and receive a ``register``
callback. Runtime hooks run per event; async implementations are awaited.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("gigi")
hookimpl = pluggy.HookimplMarker("gigi")


@hookspec
def register_manifests(register: Any) -> None:
    """Call ``register(path)`` for each manifest file (a Path or importlib Traversable)."""


@hookspec
def register_tools(register: Any) -> None:
    """Call ``register(action_name, handler)`` for each action declared in your manifests."""


@hookspec
def register_providers(register: Any) -> None:
    """Call ``register(provider)`` for each LLM provider (a ``gigi_core.llm.Provider``)."""


@hookspec
def register_surfaces(register: Any) -> None:
    """Call ``register(name, factory)``; ``factory(kernel)`` returns an object with async ``run()``."""


@hookspec
def register_retrievers(register: Any) -> None:
    """Call ``register(name, retriever)``: a ``gigi_core.retrieval.Retriever`` (docs/retrieval.md)."""


@hookspec
def register_config_models(register: Any) -> None:
    """Call ``register(plugin_name, model)``: a pydantic model validating the per-guild config."""


@hookspec
def register_migrations(register: Any) -> None:
    """Call ``register(plugin_name, versions_dir)``: an alembic versions folder for your tables."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add click commands or groups to the ``gigi`` command group ``cli``."""


@hookspec
def startup(kernel: Any) -> None:
    """Run once after the kernel opened its store; return nothing (may be async)."""


@hookspec
def shutdown(kernel: Any) -> None:
    """Run once before the kernel closes its store; return nothing (may be async)."""


@hookspec(firstresult=True)
def actor_from_event(event: Any, surface: str) -> Any:
    """Return a ``gigi_core.Actor`` for a surface event, or None to let the next plugin decide."""


@hookspec
def capabilities_for(actor: Any, guild_id: str, kernel: Any) -> Any:
    """Return an iterable of capability names this actor holds in the guild (results are unioned)."""


@hookspec
def check_tool_call(call: Any, actor: Any, action: Any, kernel: Any) -> Any:
    """Return None (no opinion), ``"confirm"``, ``"deny"`` or ``Decision``; any deny wins, then confirm."""


@hookspec
def after_tool_call(call: Any, actor: Any, outcome: Any, kernel: Any) -> None:
    """Observe a finished tool call (metadata in ``outcome``); return nothing."""


@hookspec
def track_event(name: str, properties: dict[str, Any], kernel: Any) -> None:
    """Observe a metadata-only event (never message text or secrets); return nothing."""


@hookspec
def register_jobs(register: Any) -> None:
    """Call ``register(name, async_fn, *, schedule=None, concurrency=1, retries=3, timeout=...)``."""


@hookspec
def observe_event(event: Any, kernel: Any) -> None:
    """Observe a ``gigi_core.events`` event of a guild where you are enabled (your own queue)."""


@hookspec
def export_user_data(user_id: str, guild_id: Any, kernel: Any) -> Any:
    """Return JSON-serialisable data you hold about the user (in one guild, or all when None)."""


@hookspec
def delete_user_data(user_id: str, guild_id: Any, kernel: Any) -> Any:
    """Delete what you hold about the user; return counts, e.g. ``{"messages": 12}``."""


@hookspec
def purge_guild_data(guild_id: str, kernel: Any) -> Any:
    """Delete everything you hold for a guild Gigi left; return counts."""


@hookspec
def channel_retention(guild_id: str, channel_id: str, kernel: Any) -> Any:
    """Days you keep this channel's messages (an admin opted it in), or None: you keep none."""
