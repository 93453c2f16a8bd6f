"""``gigi run``: start the kernel and a surface (Discord with a token, else the console)."""

from __future__ import annotations

import os
from typing import Any

import click

from gigi_core.cli.common import CliState, freeze_startup_heap, pass_state, run
from gigi_core.errors import GigiError


def choose_surface(available: list[str], requested: str | None) -> str | None:
    """An explicit --surface wins; a Discord token picks discord; then the console."""
    if requested:
        if requested not in available:
            raise GigiError(
                f"surface {requested!r} is not installed (installed: {', '.join(available) or 'none'})",
                hint="install the plugin that provides it, e.g. pip install -e plugins/gigi-discord (from a checkout)",
            )
        return requested
    if os.environ.get("GIGI_DISCORD_TOKEN") and "discord" in available:
        return "discord"
    if "console" in available:
        return "console"
    return available[0] if len(available) == 1 else None


@click.command("run")
@click.option(
    "--surface", help="Surface to start (default: discord with GIGI_DISCORD_TOKEN, else console)."
)
@click.option(
    "--check", is_flag=True, help="Start, migrate, report and exit without starting a surface."
)
@click.option(
    "--shards",
    metavar="auto|N",
    help="Gateway shards shared with other processes on this database: N shards in all (or "
    "auto: Discord's recommendation), this process serving those it holds leases on.",
)
@click.option(
    "--shard-ids",
    metavar="ID,ID",
    help="Serve exactly these shards of --shards N (no leases: the operator splits them).",
)
@pass_state
def run_command(
    state: CliState, surface: str | None, check: bool, shards: str | None, shard_ids: str | None
) -> None:
    """Start Gigi: open the store, migrate, load plugins, then run a surface."""
    from gigi_core.store.db import redact_url

    shard_settings(shards, shard_ids)

    async def body() -> None:
        kernel = await state.open_kernel()
        try:
            click.echo(f"Gigi kernel on {redact_url(kernel.db.url)} (home {kernel.settings.home})")
            _report(kernel)
            from gigi_core.store.secrets import warn_unopenable_secrets

            await warn_unopenable_secrets(kernel)
            click.echo(f"Agent runs: durability {kernel.agent.durability}")  # checks the setting
            from gigi_core.privacy.service import check_settings, purge_after_days

            check_settings()
            click.echo(f"Guild data purged {purge_after_days():g} days after Gigi leaves a guild")
            jobs = kernel.jobs  # reads (and checks) the GIGI_JOBS_* settings
            click.echo(
                f"Background jobs: {len(kernel.registry.jobs)} registered ({jobs.backend.name})"
            )
            names = sorted(kernel.registry.surfaces)
            chosen = choose_surface(names, surface)
            if check:
                return
            if chosen is None:
                click.echo(
                    "No surface to start: install one (the console surface ships with the agent "
                    "runtime; gigi-discord adds Discord). Exiting."
                )
                return
            if jobs.settings.worker_in_run:  # GIGI_JOBS_IN_RUN=0 leaves jobs to gigi worker
                await jobs.start()
            await kernel.changes.listen()  # other processes' changes clear our caches at once
            freeze_startup_heap()  # no full-collection pause rescans what start-up built
            click.echo(f"Starting surface {chosen}.")
            await kernel.registry.surfaces[chosen](kernel).run()
        finally:
            await kernel.close()

    run(body())


def shard_settings(shards: str | None, shard_ids: str | None) -> None:
    """Hand the sharding options to the gateway surface through its settings (environment)."""
    if shards is None and shard_ids is None:
        return
    value = (shards or "").strip().lower()
    if value != "auto" and not (value.isdigit() and int(value) > 0):
        raise click.BadParameter("use auto or a shard count", param_hint="--shards")
    if shard_ids is None:
        os.environ["GIGI_DISCORD_SHARDS"] = value
        return
    if value == "auto":
        raise click.BadParameter(
            "--shard-ids needs --shards N (the total across processes), not auto",
            param_hint="--shard-ids",
        )
    try:
        ids = [int(part) for part in shard_ids.replace(" ", "").split(",") if part]
    except ValueError:
        raise click.BadParameter(
            "a comma-separated list of numbers", param_hint="--shard-ids"
        ) from None
    if not ids or any(not 0 <= i < int(value) for i in ids):
        raise click.BadParameter(f"ids between 0 and {int(value) - 1}", param_hint="--shard-ids")
    os.environ["GIGI_DISCORD_SHARD_COUNT"] = value
    os.environ["GIGI_DISCORD_SHARD_IDS"] = ",".join(map(str, ids))


def _report(kernel: Any) -> None:
    for record in kernel.registry.records.values():
        detail = ", ".join(record.actions) or "no actions"
        extra = []
        if record.contributions.providers:
            extra.append("providers: " + ", ".join(sorted(record.contributions.providers)))
        if record.contributions.surfaces:
            extra.append("surfaces: " + ", ".join(sorted(record.contributions.surfaces)))
        line = f"  {record.name} {record.version or ''} [{record.status}] {detail}"
        if extra:
            line += " (" + "; ".join(extra) + ")"
        if record.error:
            line += f" error: {record.error}"
        click.echo(line)
    if not kernel.registry.records:
        click.echo("  no plugins installed")
    click.echo(f"Surfaces: {', '.join(sorted(kernel.registry.surfaces)) or 'none'}")
    observers = sorted(kernel.events.observers())
    click.echo(
        f"Event observers: {', '.join(observers) or 'none'}"
        + (" (drops and failures: gigi plugins list --json, /status)" if observers else "")
    )


COMMANDS = [run_command]
