"""Actions an upgrade added or widened are denied per guild until an admin accepts them,
on both store backends, through the cached and the uncached policy paths."""

from __future__ import annotations

from gigi_core import Actor
from gigi_core.policy.view import guild_view
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox

USER = Actor(id="u1")


async def _decide(kernel, action: str, guild: str, *, cached: bool):
    spec = kernel.registry.actions[action]
    view = await guild_view(kernel, USER, guild) if cached else None
    return await kernel.policy.decide(USER, spec, guild, view=view)


async def test_held_back_action_is_denied_until_the_guild_accepts(database_url, tmp_path):
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))], database_url=database_url
    ) as kernel:
        for guild in ("g1", "g2"):
            await kernel.enable_plugin(guild, "box", by="admin")
        assert (await _decide(kernel, "box.echo", "g1", cached=True)).allowed

        # What `gigi upgrade` records for the loaded version (box 0.0.1).
        await kernel.reviews.record("box", "0.0.1", {"box.echo": "new read_only action"})
        for cached in (True, False):
            denied = await _decide(kernel, "box.echo", "g1", cached=cached)
            assert not denied.allowed
            assert denied.code == "held_back"
            assert "/gigi plugins review" in denied.reason
            assert "gigi plugins review box --guild <server id> --accept" in denied.reason
        assert (await _decide(kernel, "box.thread", "g1", cached=True)).allowed  # not held
        offered = {a.name for a in await kernel.policy.offerable(USER, "g1")}
        assert "box.echo" not in offered and "box.thread" in offered

        await kernel.enable_plugin("g3", "box", by="admin")
        await kernel.disable_plugin("g3", "box", by="admin")  # off there: nothing to wait for
        waiting = await kernel.reviews.waiting()
        assert sorted(waiting) == ["g1", "g2"]
        assert [(h.plugin, h.version) for h in waiting["g1"]] == [("box", "0.0.1")]

        [pending] = await kernel.reviews.pending("g1")
        assert (pending.plugin, pending.version) == ("box", "0.0.1")
        assert pending.actions == (("box.echo", "new read_only action"),)

        assert await kernel.reviews.accept("g1", "box", "0.0.1", by="admin")
        assert not await kernel.reviews.accept("g1", "box", "0.0.1", by="admin")  # once
        audited = [e for e in await kernel.audit.recent("g1") if e["kind"].startswith("plugin.rev")]
        assert [(e["kind"], e["actor_id"], e["action"]) for e in audited] == [
            ("plugin.review.accept", "admin", "box 0.0.1")
        ]
        assert (await _decide(kernel, "box.echo", "g1", cached=True)).allowed
        assert (await _decide(kernel, "box.echo", "g1", cached=False)).allowed
        assert await kernel.reviews.pending("g1") == []
        assert sorted(await kernel.reviews.waiting()) == ["g2"]
        # Another server has not accepted: still off there.
        assert not (await _decide(kernel, "box.echo", "g2", cached=True)).allowed


async def test_a_changed_data_statement_holds_every_action(database_url, tmp_path):
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "box", by="admin")
        await kernel.reviews.record("box", "0.0.1", {"*": "the data statement changed"})
        for action in ("box.echo", "box.thread"):
            assert (await _decide(kernel, action, "g1", cached=True)).code == "held_back"
        # Holds of a version that is not loaded (a later upgrade not yet running) do nothing.
        await kernel.reviews.record("box", "0.0.1", {})
        await kernel.reviews.record("box", "9.9", {"box.echo": "new"})
        assert (await _decide(kernel, "box.echo", "g1", cached=True)).allowed


async def test_holds_of_an_earlier_version_stay_until_accepted(database_url, tmp_path):
    """Installing 0.0.1 over a 0.0.0 nobody accepted keeps 0.0.0's holds where they were not
    accepted; accepting a version covers every earlier one, never a later one."""
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))], database_url=database_url
    ) as kernel:
        for guild in ("g1", "g2", "g3"):
            await kernel.enable_plugin(guild, "box", by="admin")
        # 0.0.0 widened box.echo and only g2 accepted it; the loaded 0.0.1 widened nothing.
        await kernel.reviews.record("box", "0.0.0", {"box.echo": "new read_only action"})
        await kernel.reviews.accept("g2", "box", "0.0.0", by="admin")
        for cached in (True, False):
            assert (await _decide(kernel, "box.echo", "g1", cached=cached)).code == "held_back"
            assert (await _decide(kernel, "box.echo", "g2", cached=cached)).allowed
        [pending] = await kernel.reviews.pending("g1")
        assert (pending.plugin, pending.version) == ("box", "0.0.1")  # accepted as the loaded one
        assert pending.actions == (("box.echo", "new read_only action (held since 0.0.0)"),)

        # 0.0.1's own holds add to what g1 still owes; g2 owes only those.
        await kernel.reviews.record("box", "0.0.1", {"box.thread": "no longer asks"})
        assert {a for a, _ in (await kernel.reviews.pending("g1"))[0].actions} == {
            "box.echo",
            "box.thread",
        }
        assert (await kernel.reviews.pending("g2"))[0].actions == (
            ("box.thread", "no longer asks"),
        )
        assert await kernel.reviews.earlier("box", "0.0.1") == {"0.0.0": ["box.echo"]}
        waiting = await kernel.reviews.waiting()
        assert sorted(waiting) == ["g1", "g2", "g3"]

        # An acceptance of a later version (a downgrade since) covers nothing loaded now.
        await kernel.reviews.accept("g3", "box", "0.0.2", by="admin")
        assert (await _decide(kernel, "box.echo", "g3", cached=True)).code == "held_back"

        assert await kernel.reviews.accept("g1", "box", "0.0.1", by="admin")
        for action in ("box.echo", "box.thread"):
            assert (await _decide(kernel, action, "g1", cached=True)).allowed
        assert sorted(await kernel.reviews.waiting()) == ["g2", "g3"]
