"""``gigi memory ...``: the import from a shell (the /memory commands work from the console
and ``gigi tools call``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click


def add_commands(cli: Any) -> None:
    @cli.group("memory")
    def memory() -> None:
        """Guild memory: import channel exports (see docs/memory.md)."""

    @memory.command("import")
    @click.argument("export", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--guild", "guild_id", required=True, help="The guild (server) id.")
    @click.option(
        "--channel", "channel_id", help="Import into this channel (default: the export's)."
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @click.pass_context
    def import_(
        ctx: click.Context, export: Path, guild_id: str, channel_id: str | None, as_json: bool
    ) -> None:
        """Import a DiscordChatExporter JSON export of one channel into memory.

        The channel must be enabled (/memory enable) and the same rules as for live messages
        apply: retention (older messages are skipped), bots only when allowed, nothing from
        while the channel was secure. Importing twice inserts nothing twice. A malformed file
        is refused with the JSON path of its first error, and nothing is imported.
        """
        from gigi_memory.importer import ExportError, ImportRefused, read_export

        try:
            parsed = read_export(export)
        except ExportError as exc:
            raise click.ClickException(f"{export}: {exc} (nothing was imported)") from None
        root = ctx.find_root().obj
        url = getattr(root, "database_url", None)
        home = getattr(root, "home", None)
        try:
            import asyncio  # here, not at import: `gigi plugins list` stays a cold start

            report = asyncio.run(_import(parsed, guild_id, channel_id, url, home, as_json))
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


async def _import(
    parsed: Any,
    guild_id: str,
    channel_id: str | None,
    url: str | None,
    home: str | None,
    quiet: bool,
) -> Any:
    from gigi_core import Kernel
    from gigi_memory.importer import run_import

    kernel = await Kernel.open(url, home)
    try:
        if quiet or not parsed.messages:
            return await run_import(kernel, parsed, guild_id=guild_id, channel_id=channel_id)
        with click.progressbar(
            length=len(parsed.messages), label="importing", file=sys.stderr
        ) as bar:
            last = 0

            def step(done: int) -> None:
                nonlocal last
                bar.update(done - last)
                last = done

            return await run_import(
                kernel, parsed, guild_id=guild_id, channel_id=channel_id, progress=step
            )
    finally:
        await kernel.close()
