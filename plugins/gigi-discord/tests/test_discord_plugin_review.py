"""`/gigi plugins review`: an upgrade's held-back actions stay off in a server until an admin
accepts them with the Accept button; the refusal a member meets says where to look."""

from __future__ import annotations

from discord_world import world

from gigi_core.testing.scripted import call, say

COUNT = ("notes.count", {})


def _actor(member):
    from gigi_core import Actor

    return Actor(id=str(member.id))


async def test_admin_reviews_and_accepts_a_held_back_upgrade(tmp_path) -> None:
    turns = [call(COUNT), say("Could not count."), call(COUNT), say("Counted.")]
    async with world(tmp_path, turns) as w:
        empty = await w.admin.slash(w.channel, "gigi plugins review")
        assert empty.ephemeral and empty.response.content == "Nothing is held back in this server."

        # What `gigi upgrade` records when the loaded version widened notes.count.
        await w.kernel.reviews.record("notes", "0.0.1", {"notes.count": "new read_only action"})
        await w.mention(w.member, "how many notes?")
        assert "notes.count" not in w.notes.ran
        # Held back, it is not even offered to the model; a direct call names the review.
        assert w.model is not None
        assert "unknown tool 'notes.count'" in str(w.model.requests[1].messages[-1].content)
        member = w.kernel.registry.actions["notes.count"]
        denied = await w.kernel.policy.explain(_actor(w.member), member, w.gid)
        assert not denied.allowed and "/gigi plugins review" in denied.reason

        listed = await w.admin.slash(w.channel, "gigi plugins list")
        assert "Upgrades waiting for your review: **notes** 0.0.1" in listed.response.content

        shown = await w.admin.slash(w.channel, "gigi plugins review")
        assert shown.ephemeral
        assert "**notes** 0.0.1:" in shown.response.content
        assert "`notes.count`: new read_only action" in shown.response.content

        done = await w.admin.click(shown.response, label="Accept notes 0.0.1")
        assert done.ephemeral
        assert done.response.content.startswith("Accepted **notes** 0.0.1 in this server")
        assert await w.kernel.reviews.pending(w.gid) == []
        again = await w.admin.click(shown.response, label="Accept notes 0.0.1")
        assert again.response.content == "Nothing of **notes** 0.0.1 is held here."

        listed = await w.admin.slash(w.channel, "gigi plugins list")
        assert "waiting for your review" not in listed.response.content

        await w.mention(w.member, "how many notes now?")
        assert "notes.count" in w.notes.ran


async def test_members_cannot_run_the_review(tmp_path) -> None:
    async with world(tmp_path) as w:
        await w.kernel.reviews.record("notes", "0.0.1", {"notes.count": "new"})
        refused = await w.member.slash(w.channel, "gigi plugins review")
        assert (
            refused.response.content == "Only server admins (Manage Server) can use this command."
        )
        assert await w.kernel.reviews.pending(w.gid)
