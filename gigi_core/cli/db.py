"""``gigi db``: migrations."""

from __future__ import annotations

import click

from gigi_core.cli.common import CliState, pass_state, run


@click.group("db")
def db_group() -> None:
    """Database maintenance."""


@db_group.command("upgrade")
@pass_state
def upgrade(state: CliState) -> None:
    """Apply kernel and plugin migrations (Kernel.open also does this)."""
    from gigi_core.settings import Settings
    from gigi_core.store import migrate
    from gigi_core.store.db import Database, redact_url, resolve_url

    settings = Settings.resolve(state.database_url, state.home)
    db = Database(resolve_url(settings.database_url, settings.home))

    async def body() -> set[str]:
        try:
            await migrate.upgrade(db, state.plugins().registry.migrations)
            return await migrate.current_heads(db)
        finally:
            await db.close()

    heads = run(body())
    click.echo(f"Database {redact_url(db.url)} is at {', '.join(sorted(heads))}.")


COMMANDS = [db_group]
