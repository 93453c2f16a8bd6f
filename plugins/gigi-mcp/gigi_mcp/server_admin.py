"""What ``gigi mcp`` does to the server list: add, remove, refresh, approve and describe.

Plain functions: the CLI prints their results, tests call them directly.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gigi_mcp.config import (
    McpConfig,
    ServerConfig,
    check_server_name,
    config_path,
    load_config,
    save_config,
)
from gigi_mcp.errors import McpConfigError
from gigi_mcp.generate import build, manifest_path, write_manifest
from gigi_mcp.pins import Pins, load_pins, pins_path, save_pins
from gigi_mcp.sealed import Opener
from gigi_mcp.session import ServerSession


@dataclass
class Refreshed:
    server: str
    pins: Pins
    quarantined: list[str]
    manifest: Path


def parse_pairs(
    pairs: tuple[str, ...], what: str, right: str = "ENVVAR", *, quiet: bool = False
) -> dict[str, str]:
    """``NAME=VALUE`` options; the right side is always a name (of a variable or a key).
    ``quiet``: a wrong one is not echoed (it may be a secret typed in the wrong place)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, var = pair.partition("=")
        if not sep or not key or not var:
            shown = "" if quiet else f" {pair!r}"
            raise McpConfigError(f"--{what}{shown}: expected NAME={right}")
        out[key] = var
    return out


def add_server(
    root: Path,
    name: str,
    *,
    stdio: str | None,
    url: str | None,
    env: dict[str, str],
    headers: dict[str, str],
    timeout: float | None = None,
    replace: bool = False,
    secrets: list[str] | None = None,
    secret_headers: dict[str, str] | None = None,
) -> ServerConfig:
    """Validate and save in one step (tests, and `gigi mcp add` without sealed secrets)."""
    server = new_server(
        root,
        name,
        stdio=stdio,
        url=url,
        env=env,
        headers=headers,
        timeout=timeout,
        replace=replace,
        secrets=secrets,
        secret_headers=secret_headers,
    )
    save_server(root, name, server)
    return server


def new_server(
    root: Path,
    name: str,
    *,
    stdio: str | None,
    url: str | None,
    env: dict[str, str],
    headers: dict[str, str],
    timeout: float | None = None,
    replace: bool = False,
    secrets: list[str] | None = None,
    secret_headers: dict[str, str] | None = None,
) -> ServerConfig:
    """A validated server, not saved yet: its secrets are sealed before the file names them."""
    check_server_name(name)
    config = load_config(root)
    if name in config.servers and not replace:
        raise McpConfigError(
            f"server {name!r} is already in {config_path(root)}", hint="use --replace"
        )
    raw: dict[str, Any] = {
        "env": env,
        "headers": headers,
        "secrets": list(secrets or []),
        "secret_headers": dict(secret_headers or {}),
    }
    if stdio is not None:
        raw["stdio"] = shlex.split(stdio)
    if url is not None:
        raw["url"] = url
    if timeout is not None:
        raw["timeout_seconds"] = timeout
    try:
        server = ServerConfig.model_validate(raw)
    except Exception as exc:
        raise McpConfigError(f"server {name!r}: {_first_error(exc)}") from None
    return server


def save_server(root: Path, name: str, server: ServerConfig) -> None:
    servers = dict(load_config(root).servers)
    servers[name] = server
    save_config(root, McpConfig(servers=servers))


def remove_server(root: Path, name: str) -> bool:
    config = load_config(root)
    if name not in config.servers:
        return False
    servers = {k: v for k, v in config.servers.items() if k != name}
    save_config(root, McpConfig(servers=servers))
    for path in (pins_path(root, name), manifest_path(root, name)):
        path.unlink(missing_ok=True)
    return True


def server_config(root: Path, name: str) -> ServerConfig:
    config = load_config(root)
    if name not in config.servers:
        raise McpConfigError(
            f"no MCP server {name!r} in {config_path(root)}", hint="`gigi mcp list` shows them"
        )
    return config.servers[name]


async def refresh(root: Path, name: str, secrets: Opener | None = None) -> Refreshed:
    """Connect once, list the tools, record them and regenerate the manifest (``secrets``
    opens the server's sealed values; the CLI passes the store's)."""
    config = server_config(root, name)
    pins = load_pins(root, name)
    seen: dict[str, dict[str, Any]] = {}

    def on_listing(_server: str, definitions: dict[str, dict[str, Any]]) -> None:
        seen.update(definitions)

    session = ServerSession(
        name, config, on_listing=on_listing, log_dir=root / "logs", secrets=secrets
    )
    try:
        await session.client()
    finally:
        await session.stop()
    fresh = pins.observe(seen)
    save_pins(root, name, pins)
    manifest, _ = build(name, config, pins)
    return Refreshed(name, pins, fresh, write_manifest(root, name, manifest))


def approve(root: Path, name: str) -> Pins:
    """Accept the observed definitions (the CLI refreshes and shows the diff first)."""
    config = server_config(root, name)
    pins = load_pins(root, name)
    if not pins.observed:
        raise McpConfigError(
            f"server {name!r} has no listed tools yet", hint="run `gigi mcp refresh`"
        )
    pins.approve()
    save_pins(root, name, pins)
    manifest, _ = build(name, config, pins)
    write_manifest(root, name, manifest)
    return pins


def describe(
    root: Path, fingerprints: dict[str, dict[str, str]] | None = None
) -> list[dict[str, Any]]:
    """One row per server for ``gigi mcp list``: never a value, only names and, for sealed
    secrets, fingerprints (None: not in the store, or the store was not opened)."""
    config = load_config(root)
    fingerprints = fingerprints or {}
    rows = []
    for name, server in sorted(config.servers.items()):
        pins = load_pins(root, name)
        error = None if pins.observed else "no tools listed yet (gigi mcp refresh)"
        entries: list[Any] = []
        if pins.observed:
            try:
                _, entries = build(name, server, pins)
            except McpConfigError as exc:
                error = str(exc)
        rows.append(
            {
                "name": name,
                "plugin": f"mcp_{name}",
                "transport": server.transport,
                "target": shlex.join(server.stdio) if server.stdio else server.url,
                "env": sorted(server.env),
                "headers": sorted(server.headers),
                "secrets": {k: fingerprints.get(name, {}).get(k) for k in server.secrets},
                "secret_headers": dict(server.secret_headers),
                "approved": pins.is_approved,
                "approved_at": pins.approved_at,
                "observed_at": pins.observed_at,
                "tools": [
                    {
                        "tool": e.tool,
                        "action": e.action,
                        "status": e.status,
                        "safety": e.safety,
                        "confirm": e.confirm,
                        "why": e.why,
                        "refused": e.refused,
                    }
                    for e in entries
                ],
                "quarantined": pins.quarantined(),
                "error": error,
            }
        )
    return rows


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(exc)
