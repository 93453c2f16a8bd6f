"""A process loading fewer plugins than the one that migrated the database still opens it:
branches of plugins it does not load are left as they are (and stay at their heads)."""

from __future__ import annotations

from sqlalchemy import text

from gigi_core.testing import open_test_kernel


async def _versions(kernel) -> set[str]:
    async with kernel.db.engine.connect() as conn:
        return {r[0] for r in await conn.execute(text("SELECT version_num FROM alembic_version"))}


async def test_a_narrower_plugin_set_opens_a_database_a_wider_one_migrated(
    tmp_path, database_url
) -> None:
    async with open_test_kernel(tmp_path, plugins=["memory"], database_url=database_url) as k:
        wide = await _versions(k)
    assert any(v.startswith("memory_") for v in wide)
    async with open_test_kernel(tmp_path, plugins=[], database_url=database_url) as k:
        assert await _versions(k) == wide  # the memory branch's head was kept
    async with open_test_kernel(tmp_path, plugins=["memory"], database_url=database_url) as k:
        assert await _versions(k) == wide
