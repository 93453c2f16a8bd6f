"""A server's pinned definitions -> a Gigi manifest (plugin ``mcp_<server>``) and a catalogue.

The manifest is regenerated from the servers file and the pins every time plugins load, and
written to ``GIGI_HOME/mcp/manifests/mcp_<server>.yaml`` so the kernel loads it like any other
(and ``gigi mcp show`` prints it). Server text is untrusted: descriptions are cleaned and
capped (invisible characters removed; a tool whose names or enum values hold some is refused,
``gigi_mcp.invisible``), and ``x-gigi-*`` keys are stripped from schemas so a server cannot
steer the kernel.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from gigi_mcp.catalogue import ToolEntry
from gigi_mcp.config import DEFAULT_TIMEOUT, ServerConfig
from gigi_mcp.errors import McpConfigError
from gigi_mcp.invisible import clean_text, visible_definition
from gigi_mcp.pins import Pins, definition_hash
from gigi_mcp.safety import classify

log = logging.getLogger(__name__)
DESCRIPTION_MAX = int(os.environ.get("GIGI_MCP_DESCRIPTION_MAX_CHARS", "1024"))
SCHEMA_TEXT_MAX = 300  # a description or title inside a schema
SCHEMA_MAX = int(os.environ.get("GIGI_MCP_SCHEMA_MAX_CHARS", "20000"))  # one tool's schemas
MAX_TOOLS = int(os.environ.get("GIGI_MCP_MAX_TOOLS", "128"))  # per server


def plugin_name(server: str) -> str:
    return f"mcp_{server}"


def action_names(server: str, tools: list[str]) -> dict[str, str]:
    """Server tool name -> ``mcp_<server>.<verb>``, stable for a given set of names.

    A name that is already a valid verb keeps it; the others are slugged in sorted order and
    get a numeric suffix on a clash.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    exact = sorted(t for t in tools if re.fullmatch(r"[a-z][a-z0-9_]{0,47}", t))
    for tool in exact:
        taken.add(tool)
        out[tool] = f"{plugin_name(server)}.{tool}"
    for tool in sorted(set(tools) - set(exact)):
        verb = re.sub(r"[^a-z0-9_]", "_", re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", tool).lower())
        verb = re.sub(r"_+", "_", verb).strip("_") or "tool"
        if not verb[0].isalpha():
            verb = f"t_{verb}"
        verb = verb[:48]
        candidate, n = verb, 2
        while candidate in taken:
            candidate, n = f"{verb}_{n}", n + 1
        taken.add(candidate)
        out[tool] = f"{plugin_name(server)}.{candidate}"
    return out


def clean_description(text: str | None, server: str, tool: str) -> str:
    """Untrusted text shown as data: invisible characters dropped (``gigi_mcp.invisible``:
    controls, format and bidi characters, tags), capped, labelled."""
    body = clean_text(text or "").strip()
    if len(body) > DESCRIPTION_MAX:
        body = body[:DESCRIPTION_MAX].rstrip() + " [cut]"
    label = f"MCP tool {tool!r} of server {server!r}; its own description (untrusted):"
    return f"{label} {body}" if body else f"MCP tool {tool!r} of server {server!r}."


def strip_gigi_keys(schema: Any) -> Any:
    """Drop every ``x-gigi-*`` key at any depth (only Gigi's own manifests may mark fields),
    and clean and cap the text a model reads in a schema (``description``, ``title``)."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for k, v in schema.items():
            if isinstance(k, str) and k.lower().startswith("x-gigi"):
                continue
            if k in ("description", "title") and isinstance(v, str):
                v = clean_text(v)[:SCHEMA_TEXT_MAX]
            out[k] = strip_gigi_keys(v)
        return out
    if isinstance(schema, list):
        return [strip_gigi_keys(v) for v in schema]
    return schema


def schema_problem(schema: Any, *, args: bool) -> str | None:
    import jsonschema_rs

    if not isinstance(schema, dict):
        return "the schema is not an object"
    if args and schema.get("type") != "object":
        return 'the input schema is not {"type": "object"}'
    try:
        jsonschema_rs.meta.validate(schema)
        jsonschema_rs.Draft202012Validator(schema)
    except Exception as exc:
        return f"not a valid JSON Schema (Draft 2020-12): {str(exc)[:200]}"
    return None


def build(server: str, config: ServerConfig, pins: Pins) -> tuple[dict[str, Any], list[ToolEntry]]:
    """The manifest for one server and the catalogue of its actions.

    Every tool the server lists now is declared; quarantined ones (changed since approval, or
    new) keep their approved definition if any and are never offered to the model, and the
    bridge denies their calls. Tools with unusable schemas are left out, and said so.
    """
    plugin = plugin_name(server)
    use = f"{plugin}.use"
    names = action_names(server, list(pins.observed))
    actions: list[dict[str, Any]] = []
    entries: list[ToolEntry] = []
    capabilities = [
        {
            "name": use,
            "description": f"Use the tools of the MCP server {server}",
            "default": "admins",
        }
    ]
    declared_caps = {use}
    if len(names) > MAX_TOOLS:
        log.warning(
            "gigi-mcp: server %r lists %d tools; only the first %d (by name) are loaded "
            "(GIGI_MCP_MAX_TOOLS)",
            server,
            len(names),
            MAX_TOOLS,
        )
        names = dict(list(names.items())[:MAX_TOOLS])
    for tool, action in names.items():
        status = pins.status(tool)
        definition = pins.approved.get(tool) if status == "changed" else pins.observed[tool]
        if definition is None:
            continue
        override = config.tools.get(tool)
        # Cleaned before x-gigi keys are stripped: a key hiding "x-gigi" goes too. The
        # hidden characters of exact strings (names, enum values) refuse the tool instead.
        seen, found = visible_definition(definition)
        refused = found.reason()
        args = strip_gigi_keys(seen.get("inputSchema") or {"type": "object"})
        result = seen.get("outputSchema")
        result = strip_gigi_keys(result) if result is not None else None
        problem = schema_problem(args, args=True) or (
            schema_problem(result, args=False) if result is not None else None
        )
        if problem is None and len(json.dumps([args, result])) > SCHEMA_MAX:
            problem = f"its schemas are longer than {SCHEMA_MAX:,} characters"
        if problem is not None:
            log.warning("gigi-mcp: tool %r of server %r left out: %s", tool, server, problem)
            continue
        cls = classify(definition.get("annotations"), override, approved=status != "pending")
        capability = (override.capability if override else None) or use
        if not capability.startswith(f"{plugin}."):
            raise McpConfigError(
                f"servers.json: servers.{server}.tools.{tool}.capability: {capability!r} "
                f"must be under {plugin}. (it is declared in the generated manifest)"
            )
        if capability not in declared_caps:
            declared_caps.add(capability)
            capabilities.append(
                {"name": capability, "description": f"Use {tool} on {server}", "default": "admins"}
            )
        if refused is not None:
            log.warning("gigi-mcp: tool %r of server %r refused: %s", tool, server, refused)
        quarantined = status in ("changed", "new") or refused is not None
        timeout = (override.timeout_seconds if override else None) or config.timeout_seconds
        spec: dict[str, Any] = {
            "name": action,
            "description": clean_description(definition.get("description"), server, tool),
            "safety": cls.safety,
            "capability": capability,
            "confirm": cls.confirm,
            "args": args,
            "timeout_seconds": timeout or DEFAULT_TIMEOUT,
        }
        if result is not None:
            spec["result"] = result
        if quarantined:
            spec["offer_to_model"] = False
        actions.append(spec)
        basis = None if status == "new" or refused else definition_hash(definition)
        shown = "refused" if refused else status
        entries.append(
            ToolEntry(action, server, tool, shown, cls.safety, cls.confirm, cls.why, basis, refused)
        )
    where = " ".join(config.stdio or []) if config.stdio else config.url
    # The version changes with every definition or class: a confirmation asked for under one
    # manifest never runs under another (the kernel binds confirmations to the version).
    digest = hashlib.sha256(
        json.dumps([actions, capabilities], sort_keys=True).encode("utf-8")
    ).hexdigest()
    manifest = {
        "manifest_version": 1,
        "plugin": {
            "name": plugin,
            "version": f"1.0.0+{digest[:12]}",
            "description": f"Tools of the MCP server {server!r}, bridged by gigi-mcp.",
            "data_statement": (
                f"Sends each call's arguments to the MCP server {server!r} ({config.transport}: "
                f"{(where or '')[:80]}) and passes its answer on; Gigi keeps neither (the audit "
                "log holds metadata only)."
            ),
            "capabilities": capabilities,
        },
        "actions": actions,
    }
    return manifest, entries


def dump_yaml(manifest: dict[str, Any]) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[attr-defined]
    buf = io.StringIO()
    buf.write("# Generated by gigi-mcp from servers.json and the pins; edits are overwritten.\n")
    yaml.dump(manifest, buf)
    return buf.getvalue()


def manifest_path(root: Path, server: str) -> Path:
    return root / "manifests" / f"{plugin_name(server)}.yaml"


def write_manifest(root: Path, server: str, manifest: dict[str, Any]) -> Path:
    path = manifest_path(root, server)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = dump_yaml(manifest)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return path
