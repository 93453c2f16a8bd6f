"""``gigi plugins``: what is installed, and per-guild enable / disable / config."""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import (
    CliState,
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
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_state
def list_plugins(state: CliState, as_json: bool) -> None:
    """Every plugin with its status; failed plugins show their error.

    With ``--json``, plugins that observe surface events also show their delivery counters
    (delivered, dropped, failed, timed_out) added up over every process on this store.
    """
    loaded = state.plugins()
    records = [r.as_dict() for r in loaded.registry.records.values()]
    if as_json:
        observers = {i.plugin_name for i in loaded.pm.hook.observe_event.get_hookimpls()}
        if observers:  # only then is the store opened: a plain install stays a cold start
            counts = run(_event_counts(state), state)
            for r in records:
                if r["name"] in observers:
                    r["events"] = counts.get(r["name"], dict.fromkeys(_COUNTERS, 0))
        echo_json(records)
        return
    for r in records:
        r["actions"] = ", ".join(r["actions"]) or "-"
    table(records, ["name", "version", "status", "actions", "error"])


_COUNTERS = ("delivered", "dropped", "failed", "timed_out")


async def _event_counts(state: CliState) -> dict[str, Any]:
    from gigi_core.settings import Settings
    from gigi_core.store.db import Database, resolve_url
    from gigi_core.store.observer_stats import read_counts

    settings = Settings.resolve(state.database_url, state.home)
    db = Database(resolve_url(settings.database_url, settings.home))
    try:
        return await read_counts(db)
    except Exception:  # not migrated yet, or unreachable: nothing was counted there
        return {}
    finally:
        await db.close()


@plugins_group.command("enable")
@click.argument("name")
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
    """Enable plugin NAME in one guild."""
    config = parse_json_option(config_json, "--config-json")
    await kernel.enable_plugin(guild, name, config=config, allow_external=allow_external, by=by)
    click.echo(f"Enabled {name} in guild {guild}.")


@plugins_group.command("disable")
@click.argument("name")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--by", help="Who made the change (for the audit log).")
@with_kernel
async def disable(kernel: Any, name: str, guild: str, by: str | None) -> None:
    """Disable plugin NAME in one guild (its config is kept)."""
    kernel.manifest(name)
    if await kernel.disable_plugin(guild, name, by=by):
        click.echo(f"Disabled {name} in guild {guild}.")
    else:
        click.echo(f"{name} was not enabled in guild {guild}; nothing changed.")


@plugins_group.command("config")
@click.argument("name")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--set-json", "set_json", help="Replace the config with this JSON object.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--by", help="Who made the change (for the audit log).")
@with_kernel
async def config(
    kernel: Any, name: str, guild: str, set_json: str | None, as_json: bool, by: str | None
) -> None:
    """Show (secrets masked) or replace the per-guild config of NAME."""
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
