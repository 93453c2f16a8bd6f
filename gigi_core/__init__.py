"""Gigi's kernel: plugin system, manifests, policy engine, store and tool-call path."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gigi_core.hookspecs import hookimpl

__version__ = "0.1.0"

if TYPE_CHECKING:
    from gigi_core.errors import (
        ConfigError,
        ConfirmationRequired,
        GigiError,
        Hint,
        InvalidArguments,
        PluginError,
        PolicyDenied,
        ToolError,
        ToolExecutionError,
        UnknownAction,
    )
    from gigi_core.kernel import Kernel
    from gigi_core.policy.actor import Actor
    from gigi_core.policy.decision import Decision
    from gigi_core.store.audit_query import AuditFilter, AuditPage, query_audit
    from gigi_core.store.run_list import RunSummary, recent_runs
    from gigi_core.store.sealing import Sealed
    from gigi_core.store.usage_actor_fold import fold_usage_by_actor
    from gigi_core.store.usage_series import ActorUsage, UsagePoint, usage_by_actor, usage_by_day
    from gigi_core.tools.context import ToolContext

# Heavy parts load on first use so `gigi plugins list` and plugin imports stay fast.
_LAZY = {
    "Kernel": "gigi_core.kernel",
    "Actor": "gigi_core.policy.actor",
    "Decision": "gigi_core.policy.decision",
    "ToolContext": "gigi_core.tools.context",
    "GigiError": "gigi_core.errors",
    # A fix-it hint in each surface's syntax: Hint(default, shell=..., console=..., discord=...).
    "Hint": "gigi_core.errors",
    "ConfigError": "gigi_core.errors",
    "PluginError": "gigi_core.errors",
    "ToolError": "gigi_core.errors",
    "PolicyDenied": "gigi_core.errors",
    # The tool-call path's errors: a handler raises them, a plugin's tests expect them.
    "UnknownAction": "gigi_core.errors",
    "InvalidArguments": "gigi_core.errors",
    "ConfirmationRequired": "gigi_core.errors",
    "ToolExecutionError": "gigi_core.errors",
    # Read ports for admin surfaces (the CLI, the web dashboard): metadata only.
    "AuditFilter": "gigi_core.store.audit_query",
    "AuditPage": "gigi_core.store.audit_query",
    "query_audit": "gigi_core.store.audit_query",
    "RunSummary": "gigi_core.store.run_list",
    "recent_runs": "gigi_core.store.run_list",
    "UsagePoint": "gigi_core.store.usage_series",
    "usage_by_day": "gigi_core.store.usage_series",
    "ActorUsage": "gigi_core.store.usage_series",
    "usage_by_actor": "gigi_core.store.usage_series",
    # What the scheduled job gigi.usage_members_fold runs (usage_by_actor reads its rollup).
    "fold_usage_by_actor": "gigi_core.store.usage_actor_fold",
    # What kernel.state_sealer.seal returns and .open takes: a plugin stores its columns.
    "Sealed": "gigi_core.store.sealing",
}

__all__ = [
    "Actor",
    "ActorUsage",
    "AuditFilter",
    "AuditPage",
    "ConfigError",
    "ConfirmationRequired",
    "Decision",
    "GigiError",
    "Hint",
    "InvalidArguments",
    "Kernel",
    "PluginError",
    "PolicyDenied",
    "RunSummary",
    "Sealed",
    "ToolContext",
    "ToolError",
    "ToolExecutionError",
    "UnknownAction",
    "UsagePoint",
    "__version__",
    "fold_usage_by_actor",
    "hookimpl",
    "query_audit",
    "recent_runs",
    "usage_by_actor",
    "usage_by_day",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gigi_core' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
