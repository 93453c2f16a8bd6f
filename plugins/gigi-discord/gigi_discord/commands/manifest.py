"""Manifest-declared commands (``kernel.commands``) rendered as slash commands.

Each plugin gets one slash root (``/memory enable channel: retention_days:``); the native
``gigi`` plugin's commands join the hand-written ``/gigi`` root as extra groups. Options
are typed by a ``Transformer`` per option, discord.py's supported way to say what Discord
should offer (type, min/max, choices, channel types) without writing a function per
command; channel, user and role values reach the action as their id strings.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import discord
from discord import app_commands

from gigi_core import GigiError
from gigi_core.surfaces import CommandSpec, CommandTable, OptionSpec

log = logging.getLogger(__name__)

MAX_ROOTS = 100
MAX_COMMAND_CHARS = 8000  # names, descriptions and choices of one root
ADMIN = discord.Permissions(manage_guild=True)
OPTION_TYPES = {
    "string": discord.AppCommandOptionType.string,
    "integer": discord.AppCommandOptionType.integer,
    "number": discord.AppCommandOptionType.number,
    "boolean": discord.AppCommandOptionType.boolean,
    "channel": discord.AppCommandOptionType.channel,
    "user": discord.AppCommandOptionType.user,
    "role": discord.AppCommandOptionType.role,
}
# Everything a message can be posted in (a category cannot hold messages).
CHANNEL_TYPES = [
    discord.ChannelType.text,
    discord.ChannelType.news,
    discord.ChannelType.voice,
    discord.ChannelType.stage_voice,
    discord.ChannelType.forum,
    discord.ChannelType.media,
    discord.ChannelType.public_thread,
    discord.ChannelType.private_thread,
    discord.ChannelType.news_thread,
]
Invoker = Callable[[discord.Interaction[Any], CommandSpec, dict[str, Any]], Any]


class RenderError(GigiError):
    """A plugin's commands cannot be shown on Discord; names the plugin (a start-up error)."""

    def __init__(self, plugin: str, problem: str) -> None:
        super().__init__(
            f"plugin {plugin}: its commands cannot be offered on Discord: {problem}",
            hint="fix the plugin's manifest, or block it with GIGI_BLOCK_PLUGINS",
        )
        self.plugin = plugin


class OptionTransformer(app_commands.Transformer):
    """One option as Discord shows it; channel, user and role values become id strings."""

    def __init__(self, option: OptionSpec) -> None:
        super().__init__()
        self.option = option

    @property
    def type(self) -> discord.AppCommandOptionType:
        return OPTION_TYPES[self.option.type]

    def _bound(self, value: float | None, length: int | None) -> int | float | None:
        kind = self.option.type
        if kind == "string":
            return length
        if value is None or kind not in ("integer", "number"):
            return None
        return int(value) if kind == "integer" else float(value)

    @property
    def min_value(self) -> int | float | None:
        return self._bound(self.option.minimum, self.option.min_length)

    @property
    def max_value(self) -> int | float | None:
        return self._bound(self.option.maximum, self.option.max_length)

    @property
    def choices(self) -> list[app_commands.Choice[Any]] | None:
        if not self.option.choices:
            return None
        cast = {"integer": int, "number": float}.get(self.option.type, str)
        return [app_commands.Choice(name=str(v)[:100], value=cast(v)) for v in self.option.choices]

    @property
    def channel_types(self) -> list[discord.ChannelType]:
        return CHANNEL_TYPES if self.option.type == "channel" else []

    @property
    def _error_display_name(self) -> str:
        return self.option.type

    async def transform(self, interaction: discord.Interaction[Any], value: Any, /) -> Any:
        if self.option.type in ("channel", "user", "role"):
            return str(value.id)
        return value


def build_command(spec: CommandSpec, invoke: Invoker) -> app_commands.Command[Any, ..., Any]:
    """A slash command whose parameters are the spec's options, in the spec's order.

    Python parameter names are ``o0, o1, ...`` renamed to the option names, so an option
    may be called anything Discord accepts (``from``, ``max-age``).
    """
    names = {f"o{i}": o.name for i, o in enumerate(spec.options)}
    params = [
        inspect.Parameter(
            "interaction", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=discord.Interaction
        )
    ]
    for internal, option in zip(names, spec.options, strict=True):
        params.append(
            inspect.Parameter(
                internal,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=OptionTransformer(option),
                default=inspect.Parameter.empty if option.required else None,
            )
        )

    async def callback(interaction: discord.Interaction[Any], **values: Any) -> None:
        args = {names[k]: v for k, v in values.items() if v is not None}
        await invoke(interaction, spec, args)

    callback.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    callback.__name__ = callback.__qualname__ = spec.words[-1].replace("-", "_")
    if names:
        app_commands.rename(**names)(callback)
        app_commands.describe(
            **{k: o.description for k, o in zip(names, spec.options, strict=True)}
        )(callback)
    command = app_commands.Command(
        name=spec.words[-1],
        description=spec.description or spec.action,
        callback=callback,
        extras={"gigi_action": spec.action, "gigi_plugin": spec.plugin},
    )
    return command


def _fill(
    parent: app_commands.Group, specs: list[CommandSpec], invoke: Invoker, depth: int
) -> None:
    """Commands of ``depth + 1`` words under ``parent``; longer ones get a subgroup."""
    groups: dict[str, app_commands.Group] = {}
    for spec in specs:
        if len(spec.words) == depth + 1:
            parent.add_command(build_command(spec, invoke))
            continue
        word = spec.words[depth]
        group = groups.get(word)
        if group is None:
            group = groups[word] = app_commands.Group(name=word, description=word)
            parent.add_command(group)
        group.add_command(build_command(spec, invoke))
    for group in groups.values():  # "pause, resume, secure or status"
        leaves = [c.name for c in group.commands]
        joined = ", ".join(leaves[:-1]) + f" or {leaves[-1]}" if len(leaves) > 1 else leaves[0]
        group.description = (joined[:1].upper() + joined[1:])[:100]


def plugin_root(
    plugin: str, description: str, specs: list[CommandSpec], invoke: Invoker
) -> app_commands.Command[Any, ..., Any] | app_commands.Group:
    """One plugin's slash root: hidden from non-admins only if every command is for admins.

    Discord applies default permissions to top-level commands only and lets server owners
    override them, so each invocation is still checked by the policy on the direct path.
    """
    admin = all(s.admin_default for s in specs)
    root: app_commands.Command[Any, ..., Any] | app_commands.Group
    if len(specs) == 1 and len(specs[0].words) == 1:
        root = build_command(specs[0], invoke)
        root.guild_only = True
        root.default_permissions = ADMIN if admin else None
        return root
    root = app_commands.Group(
        name=specs[0].root,
        description=(description or plugin)[:100],
        guild_only=True,
        default_permissions=ADMIN if admin else None,
        extras={"gigi_plugin": plugin},
    )
    _fill(root, specs, invoke, 1)
    return root


def merge_into(root: app_commands.Group, specs: list[CommandSpec], invoke: Invoker) -> None:
    """Add the native ``gigi`` commands to the hand-written ``/gigi`` root.

    A hand-written subcommand or group of the same name wins (it offers autocomplete and
    richer answers); the duplicate is logged. If any merged command is for everyone (the
    privacy commands), the root cannot stay hidden from members: Discord can only hide a
    whole root, and the hand-written admin commands keep their own runtime check.
    """
    taken = {c.name for c in root.commands}
    fresh = [s for s in specs if s.words[1] not in taken]
    for s in specs:
        if s.words[1] in taken:
            log.info(
                "/%s is hand-written in gigi-discord; the manifest's copy is not shown", s.text
            )
    _fill(root, fresh, invoke, 1)
    if any(not s.admin_default for s in fresh):
        root.default_permissions = None


def _chars(payload: Any) -> int:
    """Discord counts names, descriptions and choice values towards a command's size."""
    if isinstance(payload, list):
        return sum(_chars(p) for p in payload)
    if not isinstance(payload, dict):
        return 0
    size = sum(len(str(payload.get(k) or "")) for k in ("name", "description"))
    if "value" in payload and "name" in payload:
        size += len(str(payload["value"]))
    return size + _chars(payload.get("options") or []) + _chars(payload.get("choices") or [])


def install_manifest_commands(
    tree: app_commands.CommandTree[Any],
    table: CommandTable,
    manifests: dict[str, Any],
    invoke: Invoker,
    gigi_root: app_commands.Group,
) -> None:
    """Every plugin's root on ``tree``; a plugin that cannot be rendered is a start-up error."""
    by_root: dict[str, list[CommandSpec]] = {}
    for spec in table.sorted():
        by_root.setdefault(spec.root, []).append(spec)
    for name, specs in by_root.items():
        plugin = table.roots.get(name, specs[0].plugin)
        try:
            if name == gigi_root.name:
                merge_into(gigi_root, specs, invoke)
                continue
            if len(tree.get_commands()) >= MAX_ROOTS:
                raise RenderError(plugin, f"/{name} would exceed Discord's {MAX_ROOTS} commands")
            if tree.get_command(name) is not None:
                raise RenderError(plugin, f"/{name} is already a command of gigi-discord")
            manifest = manifests.get(plugin)
            text = manifest.plugin.description if manifest is not None else plugin
            root = plugin_root(plugin, text, specs, invoke)
            size = _chars(root.to_dict(tree))
            if size > MAX_COMMAND_CHARS:
                raise RenderError(
                    plugin, f"/{name} has {size} characters of text; Discord allows 8000"
                )
            tree.add_command(root)
        except RenderError:
            raise
        except (TypeError, ValueError, app_commands.AppCommandError) as exc:
            raise RenderError(plugin, f"/{name}: {exc}") from None
