"""Alembic upgrades: the kernel's versions plus one branch per plugin (register_migrations)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gigi_core.errors import StoreError

if TYPE_CHECKING:
    from gigi_core.store.db import Database

KERNEL_VERSIONS = Path(__file__).parent / "migrations" / "versions"
SCRIPT_LOCATION = Path(__file__).parent / "migrations"


def alembic_config(version_locations: list[Path]) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPT_LOCATION))
    cfg.set_main_option("path_separator", "newline")
    cfg.set_main_option(
        "version_locations", "\n".join(str(p) for p in [KERNEL_VERSIONS, *version_locations])
    )
    return cfg


async def upgrade(db: Database, plugin_versions: dict[str, Path]) -> None:
    """Bring the kernel and every plugin branch to its head."""
    import sqlalchemy as sa
    from alembic import command

    cfg = alembic_config(list(plugin_versions.values()))

    def run(sync_conn: Any) -> None:
        if db.dialect == "postgresql":  # processes starting together migrate one at a time
            sync_conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext('gigi.migrate'))"))
        cfg.attributes["connection"] = sync_conn
        # Branches of plugins this process does not load (a `gigi` command with a narrower
        # GIGI_LOAD_PLUGINS than the bot) are set aside and put back in the same transaction:
        # alembic cannot upgrade past revisions it cannot locate.
        foreign = _set_aside_foreign_heads(sync_conn, cfg)
        command.upgrade(cfg, "heads")
        for revision in foreign:
            sync_conn.execute(
                sa.text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": revision}
            )

    await db.check()
    try:
        async with db.engine.begin() as conn:
            await conn.run_sync(run)
    except Exception as exc:
        raise StoreError(f"database migration failed: {exc}") from exc


def _set_aside_foreign_heads(sync_conn: Any, cfg: Any) -> list[str]:
    import sqlalchemy as sa
    from alembic.script import ScriptDirectory

    if not sa.inspect(sync_conn).has_table("alembic_version"):
        return []
    known = {rev.revision for rev in ScriptDirectory.from_config(cfg).walk_revisions()}
    stored = [
        row[0] for row in sync_conn.execute(sa.text("SELECT version_num FROM alembic_version"))
    ]
    foreign = [revision for revision in stored if revision not in known]
    for revision in foreign:
        sync_conn.execute(
            sa.text("DELETE FROM alembic_version WHERE version_num = :v"), {"v": revision}
        )
    return foreign


def script_heads(plugin_versions: dict[str, Path]) -> set[str]:
    """The heads the migration scripts define: what an up-to-date database is at."""
    from alembic.script import ScriptDirectory

    return set(
        ScriptDirectory.from_config(alembic_config(list(plugin_versions.values()))).get_heads()
    )


async def current_heads(db: Database) -> set[str]:
    from alembic.runtime.migration import MigrationContext

    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: MigrationContext.configure(c).get_current_heads()))
