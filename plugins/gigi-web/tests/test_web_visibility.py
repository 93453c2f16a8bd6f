"""Discord's channel visibility rule over overwrites (pure logic, no Discord needed)."""

from __future__ import annotations

from gigi_web.visibility import (
    ADMINISTRATOR,
    VIEW_CHANNEL,
    GuildChannel,
    Overwrite,
    can_view,
    channel_of,
)

G, ME, ROLE_A, ROLE_B = "1", "2", "10", "11"


def _sees(overwrites: list[Overwrite], roles=(), permissions=VIEW_CHANNEL, owner=False) -> bool:
    channel = GuildChannel("5", "c", 0, tuple(overwrites))
    return can_view(
        channel, guild_id=G, user_id=ME, roles=roles, permissions=permissions, owner=owner
    )


def test_everyone_then_roles_then_the_member() -> None:
    deny_all = Overwrite(G, 0, 0, VIEW_CHANNEL)
    assert _sees([]) and not _sees([], permissions=0)
    assert not _sees([deny_all])
    assert _sees([deny_all, Overwrite(ROLE_A, 0, VIEW_CHANNEL, 0)], roles=[ROLE_A])
    assert not _sees([deny_all, Overwrite(ROLE_A, 0, VIEW_CHANNEL, 0)], roles=[ROLE_B])
    # a role's allow beats another role's deny; the member's own overwrite beats both
    roles = [Overwrite(ROLE_A, 0, 0, VIEW_CHANNEL), Overwrite(ROLE_B, 0, VIEW_CHANNEL, 0)]
    assert _sees(roles, roles=[ROLE_A, ROLE_B])
    assert not _sees([*roles, Overwrite(ME, 1, 0, VIEW_CHANNEL)], roles=[ROLE_A, ROLE_B])
    assert _sees([deny_all, Overwrite(ME, 1, VIEW_CHANNEL, 0)])
    # a role overwrite with the member's id is not the member's
    assert not _sees([deny_all, Overwrite(ME, 0, VIEW_CHANNEL, 0)])


def test_owners_and_administrators_see_everything() -> None:
    deny_all = Overwrite(G, 0, 0, VIEW_CHANNEL)
    assert _sees([deny_all, Overwrite(ME, 1, 0, VIEW_CHANNEL)], owner=True)
    assert _sees([deny_all], permissions=ADMINISTRATOR)


def test_unreadable_overwrites_are_dropped() -> None:
    raw = {"id": 5, "name": "c", "type": "x", "permission_overwrites": [{"id": G}, "junk", None]}
    channel = channel_of(raw)
    assert channel.overwrites == () and channel.type == 0 and channel.id == "5"
