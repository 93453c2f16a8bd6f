"""``gigi plugins``: what is installed, and per-guild enable / disable / config."""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import (
    CliState,
    complete_plugin_names,
    echo_json,
    parse_json_option,
    pass_state,
    run,
    table,
    with_kernel,
)
from gigi_core.errors import ConfigError


@click.group("plugins")
def plugins_group() -> None:
    """List installed plugins and manage them per guild."""


@plugins_group.command("list")
@click.option("--guild", help="Also show whether each plugin is enabled in this guild.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_state
def list_plugins(state: CliState, guild: str | None, as_json: bool) -> None:
    """Every plugin by the name `gigi plugins enable` takes, with its status.

    Failed plugins show their error; plugins that cannot be enabled (a provider or a
    surface, with no actions) say why. With ``--guild``, an ENABLED column says whether each
    is on in that guild. With ``--json``, plugins that observe surface events also show their
    delivery counters (delivered, dropped, failed, timed_out) added up over every process on
    this store.
    """
    loaded = state.plugins()
    rows = plugin_rows(loaded.registry)
    if guild is not None:  # only then is the kernel opened: a plain list stays a cold start
        enabled = set(run(_enabled_in(state, guild), state))
        for r in rows:
            r["enabled"] = (r["name"] in enabled) if r["enableable"] else None
    if as_json:
        observers = {i.plugin_name for i in loaded.pm.hook.observe_event.get_hookimpls()}
        if observers:  # only then is the store opened: a plain install stays a cold start
            counts = _event_counts(state)
            for r in rows:
                if r["loaded_as"] in observers:
                    r["events"] = counts.get(r["loaded_as"], dict.fromkeys(_COUNTERS, 0))
        echo_json(rows)
        return
    for r in rows:
        r["actions"] = ", ".join(r["actions"])
        if guild is not None:
            r["enabled"] = {True: "yes", False: "no", None: "-"}[r["enabled"]]
    columns = ["name", "version", "status"]
    columns = [*columns[:1], "enabled", *columns[1:]] if guild is not None else columns
    table(rows, columns, notes=("actions", "note"))


def plugin_rows(registry: Any) -> list[dict[str, Any]]:
    """One row per name `gigi plugins enable` would take (the manifests' plugin names); a
    module that declares no manifest keeps its own name and says why it cannot be enabled."""
    rows: list[dict[str, Any]] = []
    for record in registry.records.values():
        base = {
            "module": record.module,
            "source": record.source,
            "distribution": record.distribution,
            "loaded_as": record.name,
            "status": record.status,
            "error": record.error,
            "providers": sorted(record.contributions.providers),
            "surfaces": sorted(record.contributions.surfaces),
        }
        if record.status == "ok" and record.manifests:
            for manifest in record.manifests:
                native = record.source == "default"
                rows.append(
                    {
                        "name": manifest.plugin.name,
                        "version": manifest.plugin.version,
                        "actions": sorted(a.name for a in manifest.actions),
                        **base,
                        "enableable": True,
                        "note": "native: on in every guild until disabled" if native else None,
                    }
                )
            continue
        rows.append(
            {
                "name": record.name,
                "version": record.version,
                "actions": [],
                **base,
                "enableable": False,
                "note": record.error if record.status == "failed" else _short(record),
            }
        )
    return rows


def not_enableable(registry: Any, name: str) -> str | None:
    """Why NAME cannot be enabled in a guild; None when it can, or is not loaded at all."""
    if name in registry.manifests:
        return None
    record = registry.records.get(name)
    if record is None or record.status != "ok":
        return None  # the kernel's own error names what is loaded, or why it failed
    declared = sorted(m.plugin.name for m in record.manifests)
    if declared:
        return (
            f"{name} is the module of the plugins {', '.join(declared)}; enable them by those names"
        )
    return f"{name} has no actions, so there is nothing to enable in a guild: {_provides(record)}"


def _provided(record: Any) -> list[tuple[str, str]]:
    """(what, how it is used) for each kind of thing a module without actions contributes."""
    c = record.contributions
    found = []
    if c.providers:
        found.append(
            (
                f"LLM providers {', '.join(sorted(c.providers))}",
                "which need no enabling (set one up with `gigi llm credential add` and "
                "`gigi llm profile set`)",
            )
        )
    if c.surfaces:
        names = sorted(c.surfaces)
        found.append(
            (f"surface {', '.join(names)}", f"which `gigi run --surface {names[0]}` starts")
        )
    if c.retrievers:
        found.append((f"retrievers {', '.join(sorted(c.retrievers))}", "used by the agent"))
    return found


def _provides(record: Any) -> str:
    found = _provided(record)
    return "; ".join(f"it provides the {what}, {how}" for what, how in found) or (
        "it declares no manifest"
    )


def _short(record: Any) -> str:
    """The listing's note: what there is instead of actions, without the how-to."""
    found = _provided(record)
    return "nothing to enable: " + ("; ".join(what for what, _ in found) or "no manifest")


async def _enabled_in(state: CliState, guild: str) -> list[str]:
    kernel = await state.open_kernel()
    try:
        return list(await kernel.plugin_state.enabled_plugins(guild))
    finally:
        await kernel.close()


def _check_enableable(kernel: Any, name: str) -> None:
    why = not_enableable(kernel.registry, name)
    if why is not None:
        raise ConfigError(why)


_COUNTERS = ("delivered", "dropped", "failed", "timed_out")


def _event_counts(state: CliState) -> dict[str, Any]:
    """Saved delivery counters. SQLite is read with the standard library, so listing plugins
    on the embedded default stays a cold start even when a plugin observes events."""
    from gigi_core.settings import Settings
    from gigi_core.store.db import resolve_url

    settings = Settings.resolve(state.database_url, state.home)
    url = resolve_url(settings.database_url, settings.home)
    if url.startswith("sqlite"):
        return _sqlite_counts(url)

    async def read() -> dict[str, Any]:
        from gigi_core.store.db import Database
        from gigi_core.store.observer_stats import read_counts

        db = Database(url)
        try:
            return await read_counts(db)
        finally:
            await db.close()

    try:
        return run(read(), state)
    except Exception:  # not migrated yet, or unreachable: nothing was counted there
        return {}


def _sqlite_counts(url: str) -> dict[str, Any]:
    import sqlite3
    from pathlib import Path

    path = Path(url.split(":///", 1)[-1].split("?", 1)[0])
    if not path.is_file():
        return {}
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            rows = conn.execute(
                f"SELECT plugin, {', '.join(_COUNTERS)}, updated_at FROM observer_stats"
            ).fetchall()
    except sqlite3.Error:  # not migrated yet: nothing was counted there
        return {}
    return {
        r[0]: dict(zip(_COUNTERS, r[1:5], strict=True)) | {"updated_at": str(r[5])} for r in rows
    }


@plugins_group.command("enable")
@click.argument("name", shell_complete=complete_plugin_names)
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option(
    "--config-json", help="Per-guild config as a JSON object (validated by the manifest)."
)
@click.option(
    "--allow-external/--no-allow-external", default=None, help="Consent to external actions."
)
@click.option("--by", help="Who made the change (for the audit log).")
@with_kernel
async def enable(
    kernel: Any,
    name: str,
    guild: str,
    config_json: str | None,
    allow_external: bool | None,
    by: str | None,
) -> None:
    """Enable plugin NAME (as `gigi plugins list` names it) in one guild."""
    config = parse_json_option(config_json, "--config-json")
    _check_enableable(kernel, name)
    await kernel.enable_plugin(guild, name, config=config, allow_external=allow_external, by=by)
    click.echo(f"Enabled {name} in guild {guild}.")


@plugins_group.command("disable")
@click.argument("name", shell_complete=complete_plugin_names)
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--by", help="Who made the change (for the audit log).")
@with_kernel
async def disable(kernel: Any, name: str, guild: str, by: str | None) -> None:
    """Disable plugin NAME in one guild (its config is kept)."""
    _check_enableable(kernel, name)
    kernel.manifest(name)
    if await kernel.disable_plugin(guild, name, by=by):
        click.echo(f"Disabled {name} in guild {guild}.")
    else:
        click.echo(f"{name} was not enabled in guild {guild}; nothing changed.")


@plugins_group.command("config")
@click.argument("name", shell_complete=complete_plugin_names)
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--set-json", "set_json", help="Replace the config with this JSON object.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--by", help="Who made the change (for the audit log).")
@with_kernel
async def config(
    kernel: Any, name: str, guild: str, set_json: str | None, as_json: bool, by: str | None
) -> None:
    """Show (secrets masked) or replace the per-guild config of NAME."""
    _check_enableable(kernel, name)
    kernel.manifest(name)
    if set_json is not None:
        await kernel.configure_plugin(guild, name, parse_json_option(set_json, "--set-json"), by=by)
    state = await kernel.plugin_state.get(guild, name)
    if state is None:
        raise ConfigError(f"{name} has never been enabled or configured in guild {guild}")
    shown = dict(state.config)
    shown.update({k: f"<sealed …{fp[-4:]}>" for k, fp in state.secret_fields.items()})
    data = {
        "plugin": name,
        "guild": guild,
        "enabled": state.enabled,
        "allow_external": state.allow_external,
        "config": shown,
    }
    if as_json:
        echo_json(data)
    else:
        click.echo(
            f"{name} in guild {guild}: {'enabled' if state.enabled else 'disabled'}"
            f"{', external actions allowed' if state.allow_external else ''}"
        )
        for key, value in sorted(shown.items()):
            click.echo(f"  {key} = {value}")


COMMANDS = [plugins_group]
