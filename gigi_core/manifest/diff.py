"""What a manifest lets a plugin do, and what an upgrade widens: the install review's facts.

Computed from validated manifests only (never from plugin code or text the plugin prints),
so a reviewer sees what the kernel will enforce. An upgrade's *widened* actions are the ones
held back per guild until an admin accepts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gigi_core.manifest.models import ActionSpec, Manifest, Safety

# How much harm each safety class can do, for "was it raised?".
SAFETY_RANK = {Safety.read_only: 0, Safety.write: 1, Safety.external: 2, Safety.destructive: 3}


@dataclass(frozen=True)
class ActionFacts:
    """One action as a reviewer needs it: what it may do and who may call it."""

    name: str
    safety: str
    capability: str
    capability_default: str  # "everyone" | "admins" | "kernel" (declared elsewhere)
    confirms: bool
    public_dispatch: bool
    offered_to_model: bool
    command: str | None

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class PluginReview:
    """Everything one manifest asks for, in the order a reviewer reads it."""

    name: str
    version: str
    description: str
    data_statement: str
    actions: tuple[ActionFacts, ...]
    everyone: tuple[str, ...]  # capabilities granted to everyone by default
    intents: tuple[str, ...]
    discord_permissions: tuple[str, ...]
    secrets: tuple[str, ...]
    dm_events: bool

    def as_dict(self) -> dict[str, Any]:
        data = dict(vars(self))
        data["actions"] = [a.as_dict() for a in self.actions]
        for key in ("everyone", "intents", "discord_permissions", "secrets"):
            data[key] = list(data[key])
        return data


@dataclass(frozen=True)
class ActionChange:
    """A new or changed action; ``widened`` ones are held back until an admin accepts."""

    action: str
    changes: tuple[str, ...]
    widened: bool

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action, "changes": list(self.changes), "widened": self.widened}


@dataclass(frozen=True)
class PluginDiff:
    """What changed in one plugin between the installed manifest and the candidate."""

    name: str
    old_version: str | None  # None: a plugin the installed distribution did not declare
    new_version: str | None  # None: the candidate drops this plugin
    actions: tuple[ActionChange, ...] = ()
    removed: tuple[str, ...] = ()
    plugin_changes: tuple[str, ...] = ()  # data statement, intents, secrets, ...
    plugin_widened: bool = False

    @property
    def held_back(self) -> tuple[str, ...]:
        """The actions an upgrade leaves off in every guild until an admin accepts them."""
        return tuple(c.action for c in self.actions if c.widened)

    @property
    def widens(self) -> bool:
        return self.plugin_widened or bool(self.held_back)

    @property
    def changed(self) -> bool:
        return bool(self.actions or self.removed or self.plugin_changes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "old_version": self.old_version,
            "new_version": self.new_version,
            "actions": [a.as_dict() for a in self.actions],
            "removed": list(self.removed),
            "plugin_changes": list(self.plugin_changes),
            "widens": self.widens,
            "held_back": list(self.held_back),
        }


def review(manifest: Manifest) -> PluginReview:
    """The facts of one manifest a reviewer should see before it is active."""
    plugin = manifest.plugin
    defaults = {c.name: c.default for c in plugin.capabilities}
    return PluginReview(
        name=plugin.name,
        version=plugin.version,
        description=plugin.description,
        data_statement=plugin.data_statement,
        actions=tuple(_facts(a, defaults) for a in manifest.actions),
        everyone=tuple(sorted(n for n, d in defaults.items() if d == "everyone")),
        intents=tuple(plugin.intents),
        discord_permissions=tuple(plugin.discord_permissions),
        secrets=tuple(sorted(plugin.secret_fields())),
        dm_events=plugin.dm_events,
    )


def _facts(action: ActionSpec, defaults: dict[str, str]) -> ActionFacts:
    return ActionFacts(
        name=action.name,
        safety=action.safety.value,
        capability=action.capability,
        capability_default=defaults.get(action.capability, "kernel"),
        confirms=action.needs_confirmation,
        public_dispatch=action.public_dispatch,
        offered_to_model=action.offer_to_model,
        command=action.command,
    )


def diff(old: Manifest | None, new: Manifest | None) -> PluginDiff:
    """The candidate ``new`` against the installed ``old`` (either may be missing)."""
    if old is None and new is None:
        raise ValueError("diff needs at least one manifest")
    name = (new or old).plugin.name  # type: ignore[union-attr]
    if new is None:
        assert old is not None
        return PluginDiff(
            name, old.plugin.version, None, removed=tuple(a.name for a in old.actions)
        )
    after = review(new)
    before = review(old) if old is not None else None
    old_actions = {a.name: a for a in before.actions} if before else {}
    changes = [
        change
        for action in after.actions
        if (change := _action_change(old_actions.get(action.name), action)) is not None
    ]
    removed = tuple(sorted(set(old_actions) - {a.name for a in after.actions}))
    plugin_changes, widened = _plugin_changes(before, after)
    return PluginDiff(
        name=name,
        old_version=before.version if before else None,
        new_version=after.version,
        actions=tuple(changes),
        removed=removed,
        plugin_changes=tuple(plugin_changes),
        plugin_widened=widened,
    )


def _action_change(old: ActionFacts | None, new: ActionFacts) -> ActionChange | None:
    if old is None:
        return ActionChange(
            new.name, (f"new {new.safety} action needing {new.capability}",), widened=True
        )
    changes: list[str] = []
    widened = False
    if new.safety != old.safety:
        raised = SAFETY_RANK[Safety(new.safety)] > SAFETY_RANK[Safety(old.safety)]
        changes.append(f"safety {'raised' if raised else 'lowered'}: {old.safety} -> {new.safety}")
        widened |= raised
    if new.capability != old.capability:
        changes.append(f"capability changed: {old.capability} -> {new.capability}")
        widened = True
    elif new.capability_default != old.capability_default:
        wider = new.capability_default == "everyone"
        changes.append(
            f"{new.capability} default: {old.capability_default} -> {new.capability_default}"
        )
        widened |= wider
    if old.confirms and not new.confirms:
        changes.append("no longer asks for confirmation")
        widened = True
    elif new.confirms and not old.confirms:
        changes.append("now asks for confirmation")
    if new.public_dispatch and not old.public_dispatch:
        changes.append("may now run on anyone's request in public (public_dispatch)")
        widened = True
    if new.offered_to_model and not old.offered_to_model:
        changes.append("now offered to the model as a tool (was a command only)")
        widened = True
    if new.command != old.command:
        changes.append(f"command: {old.command or '-'} -> {new.command or '-'}")
    return ActionChange(new.name, tuple(changes), widened) if changes else None


def _plugin_changes(before: PluginReview | None, after: PluginReview) -> tuple[list[str], bool]:
    if before is None:
        return [f"new plugin {after.name}"], True
    changes: list[str] = []
    widened = False
    if before.data_statement != after.data_statement:
        changes.append(f"data statement: {before.data_statement!r} -> {after.data_statement!r}")
        widened = True
    for label, key in (
        ("Discord intent", "intents"),
        ("Discord permission", "discord_permissions"),
        ("config secret", "secrets"),
        ("capability granted to everyone", "everyone"),
    ):
        added = sorted(set(getattr(after, key)) - set(getattr(before, key)))
        gone = sorted(set(getattr(before, key)) - set(getattr(after, key)))
        changes += [f"new {label}: {item}" for item in added]
        changes += [f"{label} no longer needed: {item}" for item in gone]
        widened |= bool(added)
    if after.dm_events and not before.dm_events:
        changes.append("now receives direct-message events")
        widened = True
    return changes, widened


@dataclass
class DistributionDiff:
    """One distribution's plugins, candidate against installed."""

    distribution: str
    old_version: str | None
    new_version: str | None
    plugins: list[PluginDiff] = field(default_factory=list)

    @property
    def widens(self) -> bool:
        return any(p.widens for p in self.plugins)

    def as_dict(self) -> dict[str, Any]:
        return {
            "distribution": self.distribution,
            "old_version": self.old_version,
            "new_version": self.new_version,
            "widens": self.widens,
            "plugins": [p.as_dict() for p in self.plugins],
        }


def diff_distribution(
    distribution: str,
    old_version: str | None,
    new_version: str | None,
    old: list[Manifest],
    new: list[Manifest],
) -> DistributionDiff:
    """Pair manifests by plugin name and diff each pair."""
    before = {m.plugin.name: m for m in old}
    after = {m.plugin.name: m for m in new}
    plugins = [diff(before.get(n), after.get(n)) for n in sorted(set(before) | set(after))]
    return DistributionDiff(distribution, old_version, new_version, plugins)
