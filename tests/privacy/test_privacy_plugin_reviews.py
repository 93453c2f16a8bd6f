"""Who accepted a plugin upgrade's held-back actions: kept with a pseudonym when that admin
deletes their data, gone with the guild when it is purged (back later, its admins review
again). Both backends."""

from __future__ import annotations

from sqlalchemy import select

from gigi_core.store.review_tables import PluginReviewAccept
from tests.privacy.plugins import USER


async def _accepts(kernel) -> set[tuple[str, str | None]]:
    async with kernel.db.session() as s:
        rows = (await s.scalars(select(PluginReviewAccept))).all()
        return {(r.guild_id, r.accepted_by) for r in rows}


async def test_a_deleted_admin_becomes_a_pseudonym_on_the_accepts(env) -> None:
    kernel, _ = env
    await kernel.reviews.accept("g1", "notes", "1.1", by=USER)
    await kernel.reviews.accept("g2", "notes", "1.1", by=USER)
    await kernel.privacy.delete(USER, "g1")
    alias = kernel.privacy.pseudonym(USER)
    assert await _accepts(kernel) == {("g1", alias), ("g2", USER)}  # that guild only
    await kernel.privacy.delete(USER)
    assert await _accepts(kernel) == {("g1", alias), ("g2", alias)}


async def test_a_purged_guild_loses_its_accepts(env) -> None:
    kernel, _ = env
    await kernel.reviews.accept("g1", "notes", "1.1", by=USER)
    await kernel.reviews.accept("g2", "notes", "1.1", by=USER)
    await kernel.privacy.purge_guild("g1")
    assert await _accepts(kernel) == {("g2", USER)}
