"""Gigi's MCP bridge: each configured MCP server becomes a plugin ``mcp_<server>``.

Hook implementations only. Manifests are generated from ``GIGI_HOME/mcp/servers.json`` and the
pinned definitions when plugins load (``generate``), calls go through one lazily started
session per server (``session``, ``bridge``), and ``gigi mcp ...`` manages servers (``cli``).
"""

from __future__ import annotations

from typing import Any

from gigi_core import hookimpl

_loaded: Any = None  # the Catalogue of the last plugin load; startup binds it to its kernel


@hookimpl
def register_manifests(register: Any) -> None:
    global _loaded
    from gigi_mcp.catalogue import load_catalogue, mcp_home

    _loaded = load_catalogue(mcp_home())
    for path in _loaded.manifests.values():
        register(path)


@hookimpl
def register_tools(register: Any) -> None:
    if _loaded is None:
        return
    for action in _loaded.entries:
        register(action, call_mcp_tool)


@hookimpl
def register_commands(cli: Any) -> None:
    from gigi_mcp.cli import add_commands

    add_commands(cli)


@hookimpl
def startup(kernel: Any) -> None:
    if _loaded is not None and _loaded.entries:
        from gigi_mcp.bridge import Bridge

        kernel.__dict__["gigi_mcp"] = Bridge(_loaded, kernel)


@hookimpl
async def shutdown(kernel: Any) -> None:
    bridge = kernel.__dict__.pop("gigi_mcp", None)
    if bridge is not None:
        await bridge.close()


@hookimpl
def check_tool_call(call: Any, action: Any, kernel: Any) -> Any:
    """Quarantined tools and servers inside their restart backoff are refused with a reason."""
    if not action.name.startswith("mcp_"):
        return None
    bridge = kernel.__dict__.get("gigi_mcp")
    if bridge is None:
        return None
    denial = bridge.denial(action.name)
    if denial is None:
        return None
    from gigi_core import Decision

    return Decision.deny(*denial)


async def call_mcp_tool(ctx: Any, /, **arguments: Any) -> Any:
    """The handler of every generated action: the kernel validated ``arguments`` already."""
    bridge = ctx.kernel.__dict__.get("gigi_mcp")
    if bridge is None:
        from gigi_core import ToolExecutionError

        raise ToolExecutionError("the MCP bridge is not running in this process")
    return await bridge.call(ctx.action.name, arguments)
