"""A test plugin whose manifest declares commands, and helpers to load it as the kernel would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gigi_core import Actor, hookimpl
from gigi_core.plugins import LoadOptions, load_plugins

BOB = Actor(id="bob")  # a plain member (not an admin)


def action(
    name: str,
    command: str | None,
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One manifest action dict; ``properties`` (and ``required``) become its args schema."""
    spec: dict[str, Any] = {
        "name": name,
        "description": f"The {name} action.",
        "safety": "read_only",
        "capability": name.split(".")[0] + ".use",
        "confirm": "never",
        "args": {
            "type": "object",
            "properties": properties or {},
            "additionalProperties": False,
            **({"required": required} if required else {}),
        },
    }
    if command is not None:
        spec["command"] = command
    spec.update(extra)
    return spec


class CommandPlugin:
    """An in-process plugin whose every action records its arguments and echoes them back."""

    def __init__(self, tmp_path: Path, name: str, actions: list[dict[str, Any]]) -> None:
        self.name = name
        self.path = tmp_path / f"{name}-gigi.yaml"
        self.path.write_text(yaml.safe_dump(manifest(name, actions), sort_keys=False))
        self.actions = [a["name"] for a in actions]
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        for name in self.actions:
            register(name, self._handler(name))

    def _handler(self, name: str):
        async def handler(ctx, **args):
            self.calls.append((name, args))
            return {"got": args}

        return handler


def manifest(name: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "manifest_version": 1,
        "plugin": {
            "name": name,
            "version": "0.0.1",
            "description": f"Test commands of {name}.",
            "data_statement": "Stores nothing.",
            "capabilities": [
                {"name": f"{name}.use", "description": "Use it", "default": "everyone"},
                {"name": f"{name}.admin", "description": "Admins only"},
            ],
        },
        "actions": actions,
    }


BOX_ACTIONS = [
    action(
        "box.put",
        "box put",
        {
            "key": {"type": "string", "description": "The key"},
            "value": {"type": "integer", "minimum": 1, "maximum": 100},
            "flag": {"type": "boolean"},
            "max-age": {"type": "integer"},
        },
        required=["key", "value"],
    ),
    action("box.clear", "box clear", capability="box.admin"),
    action("box.hidden", "box hidden", offer_to_model=False),
    action("box.plain", None),  # no command: a tool only
]


def box(tmp_path: Path, actions: list[dict[str, Any]] | None = None) -> CommandPlugin:
    return CommandPlugin(tmp_path, "box", actions or BOX_ACTIONS)


def load(*plugins: CommandPlugin) -> Any:
    """Load the plugins (not strict) as the kernel would; returns LoadedPlugins."""
    return load_plugins(LoadOptions(load=frozenset()), extra=[(p.name, p) for p in plugins])


def failure(loaded: Any, name: str) -> str:
    record = loaded.registry.records[name]
    assert record.status == "failed", f"{name} loaded: {record}"
    assert not loaded.registry.plugin_loaded(name)
    return record.error
