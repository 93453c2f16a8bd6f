"""Checks that need more than one field: namespaces, duplicates, schemas, capabilities."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gigi_core.manifest.models import Manifest

Loc = tuple[str | int, ...]


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Return why ``schema`` is not a valid Draft 2020-12 schema, or None."""
    import jsonschema_rs

    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        path = "/".join(str(p) for p in exc.instance_path)
        return f"not a valid JSON Schema (Draft 2020-12){' at ' + path if path else ''}: " + (
            exc.message
        )
    except Exception as exc:
        return f"not a valid JSON Schema (Draft 2020-12): {exc}"
    try:
        jsonschema_rs.Draft202012Validator(schema)
    except Exception as exc:
        return f"JSON Schema does not compile: {exc}"
    return None


def semantic_problems(
    manifest: Manifest, known_capabilities: Iterable[str], kernel_version: str
) -> list[tuple[Loc, str]]:
    """Every cross-field problem with the location of the field it belongs to."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    problems: list[tuple[Loc, str]] = []
    plugin = manifest.plugin
    if Version(kernel_version) not in SpecifierSet(plugin.kernel, prereleases=True):
        problems.append(
            (
                ("plugin", "kernel"),
                f"needs kernel {plugin.kernel!r} but this is Gigi {kernel_version}",
            )
        )
    if problem := schema_problem(plugin.config_schema):
        problems.append((("plugin", "config_schema"), problem))
    elif plugin.config_schema.get("type") != "object":
        problems.append((("plugin", "config_schema"), 'must have "type": "object"'))

    declared: set[str] = set()
    kernel_caps = set(known_capabilities)
    for index, cap in enumerate(plugin.capabilities):
        loc_cap: Loc = ("plugin", "capabilities", index, "name")
        if cap.name in declared:
            problems.append((loc_cap, f"duplicate {cap.name!r}"))
        elif not cap.name.startswith(plugin.name + "."):
            problems.append((loc_cap, f"capability {cap.name!r} must start with '{plugin.name}.'"))
        elif cap.name in kernel_caps:
            problems.append(
                (loc_cap, f"{cap.name!r} is a kernel capability; require it, do not declare it")
            )
        declared.add(cap.name)
    known = declared | set(known_capabilities)

    seen: set[str] = set()
    for index, action in enumerate(manifest.actions):
        loc: Loc = ("actions", index)
        if action.plugin != plugin.name:
            problems.append(
                (
                    (*loc, "name"),
                    f"action {action.name!r} is outside the plugin's namespace '{plugin.name}.'",
                )
            )
        if action.name in seen:
            problems.append(((*loc, "name"), f"duplicate action {action.name!r}"))
        seen.add(action.name)
        if action.capability not in known:
            problems.append(
                (
                    (*loc, "capability"),
                    f"capability {action.capability!r} is neither declared under "
                    "plugin.capabilities nor known to the kernel",
                )
            )
        if problem := schema_problem(action.args):
            problems.append(((*loc, "args"), problem))
        elif misplaced := _misplaced_channel_marks(action.args):
            problems.append(
                (
                    (*loc, "args"),
                    "x-gigi-channel is only checked on top-level properties; found it at "
                    + ", ".join(misplaced),
                )
            )
        if action.result is not None and (problem := schema_problem(action.result)):
            problems.append(((*loc, "result"), problem))
        if action.command:
            problems += _command_problems(action, loc, plugin.name)
    return problems + _control_problems(manifest)


def _control_problems(manifest: Manifest) -> list[tuple[Loc, str]]:
    """Free text with terminal control characters (ESC and the like), which a review
    printed in a terminal would obey: they could hide or rewrite what it shows."""
    plugin = manifest.plugin
    texts: list[tuple[Loc, str | None]] = [
        (("plugin", "version"), plugin.version),
        (("plugin", "description"), plugin.description),
        (("plugin", "data_statement"), plugin.data_statement),
        (("plugin", "homepage"), plugin.homepage),
    ]
    texts += [(("plugin", "intents", i), t) for i, t in enumerate(plugin.intents)]
    texts += [
        (("plugin", "discord_permissions", i), t) for i, t in enumerate(plugin.discord_permissions)
    ]
    texts += [
        (("plugin", "capabilities", i, "description"), c.description)
        for i, c in enumerate(plugin.capabilities)
    ]
    texts += [
        (("actions", i, "description"), a.description) for i, a in enumerate(manifest.actions)
    ]
    found = []
    for loc, text in texts:
        bad = sorted({ch for ch in text or "" if _is_control(ch)})
        if bad:
            shown = ", ".join(f"U+{ord(ch):04X}" for ch in bad)
            found.append((loc, f"holds control characters ({shown}); write plain text"))
    return found


def _is_control(ch: str) -> bool:
    """C0 but newline and tab, DEL and C1 (ESC is C0); bidirectional overrides too."""
    code = ord(ch)
    return (
        (code < 0x20 and ch not in "\n\t")
        or 0x7F <= code < 0xA0
        or 0x202A <= code <= 0x202E
        or 0x2066 <= code <= 0x2069
    )


def _command_problems(action: Any, loc: Loc, plugin: str) -> list[tuple[Loc, str]]:
    """A command whose options a chat surface cannot express is named with its field."""
    from gigi_core.manifest.command_options import CommandShapeError, command_options

    try:
        command_options(action.args)
    except CommandShapeError as exc:
        where: Loc = (*loc, "args", "properties", exc.field) if exc.field else (*loc, "args")
        return [(where, f"action {action.name}, command /{action.command}: {exc}")]
    return []


def _misplaced_channel_marks(schema: Any, path: str = "") -> list[str]:
    """Where ``x-gigi-channel`` appears anywhere but on a top-level property."""
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "x-gigi-channel" and path.count("/") != 2:
                found.append(path or "/")
            found += _misplaced_channel_marks(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _misplaced_channel_marks(value, f"{path}/{index}")
    return found
