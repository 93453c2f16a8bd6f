"""Which channels a Memory page purge may reach, decided as Discord decides who sees them:
a channel newer than any cache, threads (judged by their channel; private ones need Manage
Threads; one the bot may not read counts as hidden) and deleted threads. Nothing a member
cannot see in Discord is listed or purged; what they can see is, by name."""

from __future__ import annotations

import pytest
from test_web_denied_posts import (
    CHAN,
    HIDDEN,
    THREAD,
    VIEW,
    _everything,
    _remember,
    _rows,
    _stored,
    _writes,
    with_both,
)
from web_world import ADMIN, ALPHA, MEMBER


@with_both
async def test_a_hidden_channel_newer_than_the_name_cache_is_not_purged(dashboard) -> None:
    kernel = dashboard.kernel
    await _everything(dashboard)
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    assert (await bob.client.get(f"/g/{ALPHA}/memory")).status_code == 200  # names cached
    # A new private channel, remembered by an admin, with messages: bob cannot see it.
    late = "8009"
    guild = dashboard.fake.guilds[ALPHA]
    guild.channels[late] = "new-private"
    guild.overwrites[late] = [
        {"id": ALPHA, "type": 0, "allow": "0", "deny": str(VIEW)},
        {"id": ADMIN, "type": 1, "allow": str(VIEW), "deny": "0"},
    ]
    await _remember(kernel, ALPHA, late, 2)
    before = await _stored(kernel)
    one = await bob.post(f"/g/{ALPHA}/memory/purge", {"channel": late, "confirm": "on"})
    every = await bob.post(f"/g/{ALPHA}/memory/purge", {"everything": "yes", "confirm": "on"})
    assert (one.status_code, every.status_code) == (403, 403)
    assert await _stored(kernel) == before and before[late] == 2


@with_both
@pytest.mark.parametrize("in_discord", [True, False], ids=["thread", "deleted thread"])
async def test_a_thread_of_a_hidden_channel_is_neither_listed_nor_purged(
    dashboard, in_discord
) -> None:
    kernel = dashboard.kernel
    await _everything(dashboard)
    if in_discord:  # Discord answers for it by id (threads are not in the channel list)
        dashboard.fake.guilds[ALPHA].threads[THREAD] = ("hidden-thread", HIDDEN, 11)
    # An admin remembers a thread of #hidden (its own mode); its messages name the parent.
    await _remember(kernel, ALPHA, THREAD, 3, parent_channel_id=HIDDEN, channel_kind="thread")
    assert await _rows(kernel, ALPHA) == 3 + 3
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    page = await bob.client.get(f"/g/{ALPHA}/memory")
    assert page.status_code == 200 and THREAD not in page.text
    purge = await bob.post(f"/g/{ALPHA}/memory/purge", {"channel": THREAD, "confirm": "on"})
    assert purge.status_code in (403, 404)
    assert await _rows(kernel, ALPHA) == 3 + 3
    assert ("memory.purge", MEMBER) not in await _writes(kernel, ALPHA)


@with_both
async def test_a_thread_of_a_visible_channel_is_listed_by_name_and_purged(dashboard) -> None:
    kernel = dashboard.kernel
    await _everything(dashboard)
    dashboard.fake.guilds[ALPHA].threads[THREAD] = ("plans-thread", CHAN, 11)
    await _remember(kernel, ALPHA, THREAD, 2, parent_channel_id=CHAN, channel_kind="thread")
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    page = await bob.client.get(f"/g/{ALPHA}/memory")
    assert page.status_code == 200 and "plans-thread" in page.text
    before = await _rows(kernel, ALPHA)
    purge = await bob.post(f"/g/{ALPHA}/memory/purge", {"channel": THREAD, "confirm": "on"})
    assert purge.status_code == 303, purge.text
    assert await _rows(kernel, ALPHA) == before - 2
    assert ("memory.purge", MEMBER) in await _writes(kernel, ALPHA)


@with_both
@pytest.mark.parametrize("case", ["private thread", "bot locked out"])
async def test_a_thread_the_member_may_not_read_is_neither_listed_nor_purged(
    dashboard, case
) -> None:
    """Under a channel bob sees: a private thread (he lacks Manage Threads), or a thread the
    bot itself may not read (Discord answers 403): both count as hidden, never as deleted."""
    kernel = dashboard.kernel
    await _everything(dashboard)
    kind = 12 if case == "private thread" else 11
    dashboard.fake.guilds[ALPHA].threads[THREAD] = ("side-thread", CHAN, kind)
    if case == "bot locked out":
        dashboard.fake.bot_locked_out.add(THREAD)
    await _remember(kernel, ALPHA, THREAD, 2, parent_channel_id=CHAN, channel_kind="thread")
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    page = await bob.client.get(f"/g/{ALPHA}/memory")
    assert page.status_code == 200 and "side-thread" not in page.text and THREAD not in page.text
    before = await _rows(kernel, ALPHA)
    purge = await bob.post(f"/g/{ALPHA}/memory/purge", {"channel": THREAD, "confirm": "on"})
    assert purge.status_code == 403 and "cannot see that channel" in purge.text
    assert await _rows(kernel, ALPHA) == before
    assert ("memory.purge", MEMBER) not in await _writes(kernel, ALPHA)
