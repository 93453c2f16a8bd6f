"""The running bridge: the catalogue built at load time, live sessions, live quarantine.

The catalogue (which action is which server tool, and what its manifest says) is fixed when
plugins load. A listing seen at run time that differs from the approved definitions
quarantines the changed tools at once: the kernel withdraws them (no longer offered to the
model, calls denied with the reason) until the definition is back to the declared one.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from gigi_mcp.catalogue import Catalogue
from gigi_mcp.config import McpConfig, load_config
from gigi_mcp.errors import McpConfigError, ToolQuarantined
from gigi_mcp.generate import build, write_manifest
from gigi_mcp.invisible import clean_text
from gigi_mcp.pins import definition_hash, load_pins, save_pins
from gigi_mcp.results import convert
from gigi_mcp.sealed import opener
from gigi_mcp.session import ServerSession

log = logging.getLogger(__name__)


def build_catalogue(root: Path) -> Catalogue:
    """Generate every configured server's manifest; a broken servers file loads no server."""
    try:
        config = load_config(root)
    except McpConfigError as exc:
        log.error("gigi-mcp: %s", exc)
        return Catalogue(root, errors={"*": str(exc)})
    cat = Catalogue(root)
    for server, server_config in config.servers.items():
        pins = load_pins(root, server)
        if not pins.observed:
            cat.errors[server] = "no tools listed yet (run `gigi mcp refresh`)"
            continue
        try:
            manifest, entries = build(server, server_config, pins)
        except McpConfigError as exc:  # one server's mistake never takes the others down
            log.error("gigi-mcp: server %s not loaded: %s", server, exc)
            cat.errors[server] = str(exc)
            continue
        cat.manifests[server] = write_manifest(root, server, manifest)
        for entry in entries:
            cat.entries[entry.action] = entry
        cat.structured |= {a["name"] for a in manifest["actions"] if "result" in a}
    for stale in (root / "manifests").glob("mcp_*.yaml"):
        if stale.stem.removeprefix("mcp_") not in cat.manifests:
            stale.unlink(missing_ok=True)  # a removed server's manifest must not linger
    return cat


class Bridge:
    def __init__(self, catalogue: Catalogue, kernel: Any = None) -> None:
        """``kernel`` (None only in logic tests) opens sealed secrets and withdraws actions."""
        self.cat = catalogue
        self.kernel = kernel
        secrets = opener(kernel) if kernel is not None else None
        try:
            config = load_config(catalogue.root)
        except McpConfigError as exc:  # changed since plugins loaded: no server can start
            log.error("gigi-mcp: %s", exc)
            config = McpConfig()
        self.sessions = {
            name: ServerSession(
                name,
                cfg,
                on_listing=self.on_listing,
                log_dir=catalogue.root / "logs",
                secrets=secrets,
            )
            for name, cfg in config.servers.items()
            if name in catalogue.manifests
        }
        # action -> reason; starts from what the pins said when the manifests were generated
        self.quarantine: dict[str, str] = {
            e.action: _refused(e.server, e.tool, e.refused)
            if e.refused
            else _reason(e.server, e.tool, e.status)
            for e in catalogue.entries.values()
            if e.status in ("changed", "new") or e.refused
        }
        for action, reason in self.quarantine.items():
            self._withdraw(action, reason)

    def _withdraw(self, action: str, reason: str) -> None:
        self.quarantine[action] = reason
        if self.kernel is not None:
            self.kernel.withdraw_action(action, reason)

    def _reinstate(self, action: str) -> None:
        if self.quarantine.pop(action, None) is not None and self.kernel is not None:
            self.kernel.reinstate_action(action)

    def on_listing(self, server: str, definitions: dict[str, dict[str, Any]]) -> None:
        """A fresh listing: a tool whose definition is not the one its manifest declares is
        quarantined at once (whatever was approved on disk since Gigi started: this process
        validates and classifies with what it loaded). The listing is written to the pins."""
        try:
            pins = load_pins(self.cat.root, server)  # fresh: never overwrite a newer approval
            pins.observe(definitions)
            save_pins(self.cat.root, server, pins)
        except OSError as exc:
            log.warning("gigi-mcp: cannot save the pins of %s (%s)", server, exc)
        fresh = []
        for entry in self.cat.entries.values():
            if entry.server != server:
                continue
            seen = definitions.get(entry.tool)
            if seen is None:
                reason = _reason(server, entry.tool, "removed")
            elif entry.basis is None or definition_hash(seen) != entry.basis:
                status = "changed" if entry.status != "pending" else "changed_pending"
                reason = self.quarantine.get(entry.action) or _reason(server, entry.tool, status)
            else:  # back to the definition this process declares
                self._reinstate(entry.action)
                continue
            if entry.action not in self.quarantine:
                fresh.append(entry.tool)
            self._withdraw(entry.action, reason)
        if fresh:
            log.warning(
                "gigi-mcp: server %s changed %d tool definition(s); quarantined until "
                "`gigi mcp approve %s` and a restart",
                server,
                len(fresh),
                server,
            )

    def denial(self, action: str) -> tuple[str, str] | None:
        """(reason, code) when a call of ``action`` must not run now."""
        entry = self.cat.entries.get(action)
        if entry is None:
            return None
        if action in self.quarantine:
            return self.quarantine[action], "mcp_quarantined"
        session = self.sessions.get(entry.server)
        reason = session.down_reason() if session else "the server is not configured"
        return (reason, "mcp_server_down") if reason else None

    async def call(self, action: str, arguments: dict[str, Any]) -> Any:
        entry = self.cat.entries[action]
        session = self.sessions[entry.server]
        await session.client()  # a first start lists the tools and may quarantine this one
        if action in self.quarantine:
            raise ToolQuarantined(self.quarantine[action])
        result = await session.call(entry.tool, arguments)
        return convert(result, action=action, structured=action in self.cat.structured)

    async def close(self) -> None:
        """Stop every session at once: each stdio child gets its grace period in parallel."""
        await asyncio.gather(*(s.stop() for s in self.sessions.values()), return_exceptions=True)


def _refused(server: str, tool: str, why: str) -> str:
    return f"the MCP tool {clean_text(tool)!r} of server {server!r} is refused: {why}"


def _reason(server: str, tool: str, status: str) -> str:
    what = {
        "changed": "its definition changed since it was approved",
        "new": "it was not among the approved tools",
        "removed": "the server no longer lists it",
        "changed_pending": "its definition changed since Gigi loaded it (it was never approved)",
    }.get(status, status)
    return (
        f"the MCP tool {tool!r} of server {server!r} is quarantined: {what}; an operator must "
        f"review it with `gigi mcp approve {server}`"
    )
