"""``gigi memory ...``: the /memory commands from a shell, plus import and sync.

``enable``, ``disable``, ``status``, ``purge`` and ``policy`` run the same manifest actions
as the slash commands, on the kernel's deterministic path (``kernel.agent.direct``:
validation, policy, audit, and for ``purge`` the kernel's confirmation, approved here at
the terminal or with ``--yes``). They act as the operator — an admin of the guild — unless
``--user`` names a member, whose grants then apply. ``--json`` prints the action's result.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click


class _UsageRefusal(click.ClickException):
    """The command names a guild or channel the file is not of: exit code 2, as for usage."""

    exit_code = 2


def add_commands(cli: Any) -> None:
    @cli.group("memory")
    def memory() -> None:
        """Guild memory: channels, policy, status, purge, import and sync (docs/memory.md)."""

    from gigi_memory.admin.cli_actions import add_admin_commands

    add_admin_commands(memory)

    @memory.command("import")
    @click.argument("export", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--guild", "guild_id", required=True, help="The guild (server) id.")
    @click.option(
        "--channel", "channel_id", help="Import into this channel (default: the export's)."
    )
    @click.option(
        "--allow-other-guild",
        is_flag=True,
        help="Store an export of another guild under --guild (refused otherwise).",
    )
    @click.option(
        "--allow-other-channel",
        is_flag=True,
        help="Store an export of another channel under --channel (refused otherwise).",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @click.pass_context
    def import_(
        ctx: click.Context,
        export: Path,
        guild_id: str,
        channel_id: str | None,
        allow_other_guild: bool,
        allow_other_channel: bool,
        as_json: bool,
    ) -> None:
        """Import a DiscordChatExporter JSON export of one channel into memory.

        The channel must be enabled (/memory enable) and the same rules as for live messages
        apply: retention (older messages are skipped), bots only when allowed, nothing from
        while the channel was secure. Importing twice inserts nothing twice. A malformed file
        is refused with the JSON path of its first error, and nothing is imported; so is an
        export of another guild or channel than --guild / --channel (exit code 2) unless
        --allow-other-guild / --allow-other-channel says it is meant. Messages timed more
        than a day ahead or longer than 4,000 characters are skipped and counted.
        """
        from gigi_memory.ingest.importer import (
            ExportError,
            ExportMismatch,
            ImportRefused,
            check_target,
            read_export,
        )

        allow = {"allow_other_guild": allow_other_guild, "allow_other_channel": allow_other_channel}
        try:
            parsed = read_export(export)
        except ExportError as exc:
            raise click.ClickException(f"{export}: {exc} (nothing was imported)") from None
        root = ctx.find_root().obj
        url = getattr(root, "database_url", None)
        home = getattr(root, "home", None)
        try:
            check_target(parsed, guild_id=guild_id, channel_id=channel_id, **allow)
            import asyncio  # here, not at import: `gigi plugins list` stays a cold start

            report = asyncio.run(_import(parsed, guild_id, channel_id, url, home, as_json, allow))
        except ExportMismatch as exc:
            raise _UsageRefusal(f"{export}: {exc}") from None
        except ImportRefused as exc:
            raise click.ClickException(str(exc)) from None
        if as_json:
            click.echo(json.dumps(report.as_dict(), indent=2))
            return
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(report.skipped.items()))
        click.echo(
            f"imported {report.imported} of {report.total} message(s) into channel "
            f"{report.channel_id}; {report.already} already remembered"
            + (f"; skipped: {skipped}" if skipped else "")
        )

    @memory.command("sync")
    @click.option("--guild", "guild_id", required=True, help="The guild (server) id.")
    @click.option("--channel", "channel_id", required=True, help="The channel to sync.")
    @click.option("--days", type=click.IntRange(1, 3650), help="Only the last N days.")
    @click.option("--wait", is_flag=True, help="Wait for it, with a progress bar.")
    @click.pass_context
    def sync(
        ctx: click.Context, guild_id: str, channel_id: str, days: int | None, wait: bool
    ) -> None:
        """Queue a sync of a remembered channel's history (the job runs where the bot runs).

        Same rules as /memory sync: the channel must be enabled and active; messages go
        through the live gate; a restart resumes from the last page; nothing is inserted twice.
        """
        from gigi_core import ToolExecutionError

        root = ctx.find_root().obj
        try:
            import asyncio

            asyncio.run(
                _sync(
                    guild_id,
                    channel_id,
                    days,
                    wait,
                    getattr(root, "database_url", None),
                    getattr(root, "home", None),
                )
            )
        except ToolExecutionError as exc:
            raise click.ClickException(exc.text_for("shell")) from None


async def _sync(
    guild_id: str, channel_id: str, days: int | None, wait: bool, url: Any, home: Any
) -> None:
    import asyncio

    from gigi_core import Kernel
    from gigi_memory.admin.sync_progress import SyncProgress
    from gigi_memory.ingest.backfill import queue

    kernel = await Kernel.open(url, home)
    try:
        started = await queue(kernel, guild_id, channel_id, days, by="operator")
        job_id = started["job"]["id"]
        click.echo(f"{started['message']} (job {job_id})".replace(f"<#{channel_id}>", channel_id))
        if not wait:
            return
        shown, info = SyncProgress(f"Syncing {channel_id}"), None
        try:
            while True:
                info = await kernel.jobs.get(job_id)
                shown.show(info.progress)
                if info.status not in ("queued", "running"):
                    break
                await asyncio.sleep(0.5)
        finally:
            shown.close(finished=info is not None and info.status == "done")
        if info.status != "done":
            raise click.ClickException(
                f"the sync ended {info.status} ({info.error_class or 'no error'}); "
                f"see gigi jobs show {job_id}"
            )
    finally:
        await kernel.close()


async def _import(
    parsed: Any,
    guild_id: str,
    channel_id: str | None,
    url: str | None,
    home: str | None,
    quiet: bool,
    allow: dict[str, bool],
) -> Any:
    from gigi_core import Kernel
    from gigi_memory.ingest.importer import run_import

    kernel = await Kernel.open(url, home)
    try:
        if quiet or not parsed.messages:
            return await run_import(
                kernel, parsed, guild_id=guild_id, channel_id=channel_id, **allow
            )
        with click.progressbar(
            length=len(parsed.messages), label="importing", file=sys.stderr
        ) as bar:
            last = 0

            def step(done: int) -> None:
                nonlocal last
                bar.update(done - last)
                last = done

            return await run_import(
                kernel, parsed, guild_id=guild_id, channel_id=channel_id, progress=step, **allow
            )
    finally:
        await kernel.close()
