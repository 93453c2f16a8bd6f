"""The store on both backends: migrations, drift, plugin branches, sealed secrets."""

from __future__ import annotations

import textwrap

import pytest
from sqlalchemy import select, text, update

from gigi_core import hookimpl
from gigi_core.errors import SecretsError, StoreError
from gigi_core.kernel import Kernel
from gigi_core.store import migrate
from gigi_core.store.db import Database, redact_url, resolve_url
from gigi_core.store.sealing import Sealer, generate_key
from gigi_core.store.tables import Base, SealedSecret
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox


async def test_models_match_migrations(kernel) -> None:
    """Alembic sees no difference between the kernel models and the migrated schema."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    def diff(conn):
        return compare_metadata(MigrationContext.configure(conn), Base.metadata)

    async with kernel.db.engine.connect() as conn:
        changes = await conn.run_sync(diff)
    assert changes == []


async def test_upgrade_is_idempotent_and_reports_heads(kernel) -> None:
    await migrate.upgrade(kernel.db, {})
    heads = await migrate.current_heads(kernel.db)
    assert heads == migrate.script_heads({}) and all(h.startswith("kernel_") for h in heads)


async def test_postgres_has_pgvector(postgres_server, tmp_path) -> None:
    from tests.conftest import _fresh_postgres_database

    database_url = _fresh_postgres_database(postgres_server)
    async with open_test_kernel(tmp_path, plugins=[], database_url=database_url) as kernel:
        async with kernel.db.engine.connect() as conn:
            version = await conn.scalar(
                text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            )
            distance = await conn.scalar(text("SELECT '[1,0]'::vector <=> '[0,1]'::vector"))
    assert version and distance == pytest.approx(1.0)


class NotesPlugin(Toolbox):
    """The toolbox plus its own table through register_migrations."""

    def __init__(self, tmp_path):
        super().__init__(tmp_path)
        self.versions = tmp_path / "box_versions"
        self.versions.mkdir()
        (self.versions / "box_0001.py").write_text(
            textwrap.dedent(
                """
                import sqlalchemy as sa
                from alembic import op

                revision = "box_0001"
                down_revision = None
                branch_labels = ("box",)
                depends_on = "kernel_0001"

                def upgrade():
                    op.create_table("box_notes", sa.Column("id", sa.Integer, primary_key=True),
                                    sa.Column("body", sa.String(200)))

                def downgrade():
                    op.drop_table("box_notes")
                """
            )
        )

    @hookimpl
    def register_migrations(self, register):
        register("box", self.versions)


async def test_plugin_migrations_create_their_tables(database_url, tmp_path) -> None:
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("box", NotesPlugin(tmp_path))],
        database_url=database_url,
    ) as kernel:
        heads = await migrate.current_heads(kernel.db)
        assert "box_0001" in heads and heads == migrate.script_heads(
            {"box": tmp_path / "box_versions"}
        )
        async with kernel.db.session() as s:
            await s.execute(text("INSERT INTO box_notes (body) VALUES ('hello')"))
            assert await s.scalar(text("SELECT count(*) FROM box_notes")) == 1


def test_register_migrations_for_missing_folder(tmp_path) -> None:
    from gigi_core.plugins import LoadOptions, load_plugins

    class Bad(Toolbox):
        @hookimpl
        def register_migrations(self, register):
            register("box", tmp_path / "nowhere")

    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("box", Bad(tmp_path))])
    assert "migrations folder" in loaded.registry.records["box"].error


async def test_unreachable_database_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(StoreError) as info:
        await Kernel.open("postgresql+psycopg://gigi:hunter2@127.0.0.1:1/nope", tmp_path, load=[])
    message = str(info.value)
    assert "cannot reach the database at postgresql+psycopg://gigi:***@127.0.0.1:1/nope" in message
    assert "hunter2" not in message
    assert "GIGI_DATABASE_URL" in message


def test_url_resolution(tmp_path) -> None:
    assert resolve_url(None, tmp_path) == f"sqlite+aiosqlite:///{tmp_path / 'gigi.db'}"
    assert resolve_url("sqlite:///x.db", tmp_path) == "sqlite+aiosqlite:///x.db"
    assert resolve_url("postgresql://u@h/db", tmp_path) == "postgresql+psycopg://u@h/db"
    with pytest.raises(StoreError, match="unsupported database URL scheme"):
        resolve_url("mysql://u:pw@h/db", tmp_path)
    assert "pw" not in redact_url("postgresql://u:pw@h/db")


async def test_sqlite_uses_wal(tmp_path) -> None:
    db = Database(resolve_url(None, tmp_path))
    try:
        async with db.engine.connect() as conn:
            assert (await conn.scalar(text("PRAGMA journal_mode"))) == "wal"
    finally:
        await db.close()


# -- sealing ------------------------------------------------------------------------------


def test_seal_round_trip_and_associated_data() -> None:
    sealer = Sealer(generate_key())
    sealed = sealer.seal("sk-abc", "gigi:plugin_config:g1/box:api_token")
    assert b"sk-abc" not in sealed.ciphertext
    assert sealer.open(sealed, "gigi:plugin_config:g1/box:api_token") == "sk-abc"
    with pytest.raises(SecretsError, match="integrity check"):
        sealer.open(sealed, "gigi:plugin_config:g2/box:api_token")


def test_no_key_refuses_to_seal_and_says_how_to_fix() -> None:
    with pytest.raises(SecretsError) as info:
        Sealer(None).seal("x", "ad")
    assert "GIGI_SECRET_KEY" in str(info.value) and "gigi secrets generate-key" in str(info.value)


@pytest.mark.parametrize("bad", ["not base64 !!", "c2hvcnQ"])
def test_malformed_keys_are_rejected(bad: str) -> None:
    with pytest.raises(SecretsError, match="GIGI_SECRET_KEY"):
        Sealer(bad)


async def test_enabling_with_secret_config_needs_a_key(database_url, tmp_path) -> None:
    from gigi_core.plugins import LoadOptions, load_plugins

    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("box", Toolbox(tmp_path))])
    async with await Kernel.open(
        database_url, tmp_path, plugins=loaded, sealer=Sealer(None)
    ) as kernel:
        with pytest.raises(SecretsError, match="no secret key is set"):
            await kernel.enable_plugin("g1", "box", config={"api_token": "sk-1"})
        assert await kernel.plugin_state.get("g1", "box") is None  # nothing stored


async def test_two_processes_enabling_a_plugin_at_once_both_succeed(database_url, tmp_path) -> None:
    """Both find no row and insert; the loser's key clash runs its save again as an update
    (two processes enabling a plugin for a new guild collided on guild_plugins' key)."""
    import asyncio

    from gigi_core.plugins import LoadOptions, load_plugins

    def loaded():
        return load_plugins(LoadOptions(load=frozenset()), extra=[("box", Toolbox(tmp_path))])

    async with (
        await Kernel.open(database_url, tmp_path, plugins=loaded()) as a,
        await Kernel.open(database_url, tmp_path, plugins=loaded()) as b,
    ):
        for n in range(5):
            guild = f"g{n}"
            await asyncio.gather(
                a.enable_plugin(guild, "box", by="a"), b.enable_plugin(guild, "box", by="b")
            )
            row = await a.plugin_state.get(guild, "box")
            assert row is not None and row.enabled


async def test_moved_ciphertext_fails_closed(database_url, tmp_path) -> None:
    toolbox = Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", toolbox)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "box", config={"api_token": "sk-g1"})
        await kernel.enable_plugin("g2", "box", config={"api_token": "sk-g2"})
        async with kernel.db.session() as s:
            rows = {r.owner: r for r in await s.scalars(select(SealedSecret))}
            g1 = rows["g1/box"]
            await s.execute(
                update(SealedSecret)
                .where(SealedSecret.owner == "g2/box")
                .values(nonce=g1.nonce, ciphertext=g1.ciphertext)
            )
        with pytest.raises(SecretsError):
            await kernel.plugin_config("g2", "box")
        assert (await kernel.plugin_config("g1", "box"))["api_token"] == "sk-g1"


async def test_key_rotation_reseals_every_secret(database_url, tmp_path) -> None:
    old, new = generate_key(), generate_key()
    toolbox = Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("box", toolbox)],
        database_url=database_url,
        secret_key=old,
    ) as kernel:
        await kernel.enable_plugin("g1", "box", config={"api_token": "sk-rotate"})
        kernel.secrets.sealer = kernel.sealer = Sealer(new, [old])
        async with kernel.db.session() as s:
            assert await kernel.secrets.rotate(s) == 1
        kernel.secrets.sealer = Sealer(new)  # the old key is gone for good
        assert (await kernel.plugin_config("g1", "box"))["api_token"] == "sk-rotate"
        kernel.secrets.sealer = Sealer(old)
        kernel.config_secrets.retire_all()  # the plaintext kept in memory is not the point
        with pytest.raises(SecretsError, match="not configured"):
            await kernel.plugin_config("g1", "box")


async def test_sqlite_without_a_path_is_a_private_file_removed_at_close() -> None:
    """`sqlite://` gives a throwaway database with SQLite's own locking, gone after close."""
    from pathlib import Path

    from sqlalchemy import text

    first, second = Database("sqlite+aiosqlite://"), Database("sqlite+aiosqlite://")
    folder = Path(first.url.removeprefix("sqlite+aiosqlite:///")).parent
    assert folder.is_dir() and first.url != second.url
    async with first.engine.begin() as conn:
        await conn.execute(text("CREATE TABLE t (x INTEGER)"))
    await first.close()
    await second.close()
    assert not folder.exists()
