"""Every loaded plugin's commands in one table, checked against chat-surface limits.

A plugin whose commands clash with another's root, or that would push the table past
Discord's limits (100 top-level commands, 25 subcommands per group), fails to load with
a sentence naming it; the others keep working.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gigi_core.commands.spec import CommandShapeError, CommandSpec, build_command

if TYPE_CHECKING:
    from gigi_core.registry import Registry

# Top-level commands the Discord surface adds itself; they count against Discord's limit.
SURFACE_ROOTS = frozenset({"gigi", "llm", "ask", "agent"})
# Roots the kernel and its surfaces own (the console's own commands among them).
RESERVED_ROOTS = SURFACE_ROOTS | frozenset(
    {"help", "call", "quit", "exit", "confirm", "reject", "cancel", "trace", "plugins"}
    | {"enable", "disable", "commands", "status", "json"}
)
MAX_ROOTS = 100
MAX_SUBCOMMANDS = 25


@dataclass
class CommandTable:
    """Commands by their words; ``roots`` maps each slash root to its plugin."""

    commands: dict[tuple[str, ...], CommandSpec] = field(default_factory=dict)
    roots: dict[str, str] = field(default_factory=dict)

    def find(self, words: list[str]) -> tuple[CommandSpec | None, list[str]]:
        """The longest command that ``words`` start with, and the words after it."""
        for size in (3, 2, 1):
            spec = self.commands.get(tuple(words[:size]))
            if spec is not None:
                return spec, words[size:]
        return None, words

    def for_plugin(self, plugin: str) -> list[CommandSpec]:
        return [c for c in self.sorted() if c.plugin == plugin]

    def sorted(self) -> list[CommandSpec]:
        return [self.commands[k] for k in sorted(self.commands)]

    def digest(self) -> str:
        """A hash of the whole table: a surface re-syncs commands only when it changes."""
        from dataclasses import asdict  # every field: a changed bound must re-sync too

        data = json.dumps([asdict(c) for c in self.sorted()], sort_keys=True, default=str)
        return hashlib.sha256(data.encode()).hexdigest()[:16]


def plugin_commands(registry: Registry, plugin: str) -> list[CommandSpec]:
    """The commands one plugin's manifest declares (already shape-checked at load)."""
    manifest = registry.manifests[plugin]
    return [
        build_command(a, admin_default=registry.capability_default(a.capability) != "everyone")
        for a in manifest.actions
        if a.command
    ]


def build_table(registry: Registry) -> tuple[CommandTable, dict[str, str]]:
    """The table of every loaded plugin, and the problems of plugins that must be withdrawn."""
    table = CommandTable()
    problems: dict[str, str] = {}
    for plugin in sorted(registry.manifests):
        try:
            commands = plugin_commands(registry, plugin)
        except CommandShapeError as exc:  # manifest checks catch this first; keep it safe
            problems[plugin] = f"command options: {exc}"
            continue
        if not commands:
            continue
        owner = registry.owner_of(plugin)
        native = owner is not None and owner.source == "default"
        problem = _plugin_problem(table, plugin, commands, native)
        if problem:
            problems[plugin] = problem
            continue
        for command in commands:
            table.commands[command.words] = command
            table.roots[command.root] = plugin
    return table, problems


def _plugin_problem(
    table: CommandTable, plugin: str, commands: list[CommandSpec], native: bool
) -> str | None:
    roots = {c.root for c in commands}
    if len(roots) > 1:
        return f"plugin {plugin}: commands must share one root, found {', '.join(sorted(roots))}"
    root = roots.pop()
    if root in RESERVED_ROOTS and not native:
        return f"plugin {plugin}: command root /{root} is reserved for Gigi itself"
    if root in table.roots:
        return (
            f"plugin {plugin}: command root /{root} is already used by plugin {table.roots[root]}"
        )
    if len(set(table.roots) | SURFACE_ROOTS | {root}) > MAX_ROOTS:
        return (
            f"plugin {plugin}: /{root} would exceed Discord's limit of {MAX_ROOTS} top-level "
            "commands; disable or block a plugin (GIGI_BLOCK_PLUGINS)"
        )
    words = {c.words for c in commands}
    if len(words) < len(commands):
        return f"plugin {plugin}: two actions declare the same command"
    leaves = [w for w in words if len(w) == 1]
    if leaves and len(words) > 1:
        return f"plugin {plugin}: /{root} cannot be a command and also have subcommands"
    for prefix in {w[:2] for w in words if len(w) == 3}:
        if prefix in words:
            return f"plugin {plugin}: /{' '.join(prefix)} cannot be a command and a group"
    groups: dict[tuple[str, ...], int] = {}
    for w in words:
        groups[w[:-1]] = groups.get(w[:-1], 0) + 1
    for group, count in groups.items():
        if count > MAX_SUBCOMMANDS:
            return (
                f"plugin {plugin}: /{' '.join(group)} has {count} subcommands; "
                f"Discord allows {MAX_SUBCOMMANDS}"
            )
    if len({w[1] for w in words if len(w) > 1}) > MAX_SUBCOMMANDS:
        return f"plugin {plugin}: /{root} has more than {MAX_SUBCOMMANDS} subcommands and groups"
    return None
