"""Cached policy facts: changes through the kernel apply at once, changes by another process
within GIGI_POLICY_CACHE_SECONDS; hooks are asked every time; entries follow roles."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import update

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.policy import view as view_module
from gigi_core.policy.view import GuildView, ViewCache
from gigi_core.store.tables import CapabilityGrant, GuildPlugin
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say
from tests.toolbox import Toolbox

USER = Actor(id="u1")
SECRET = "box.secret_op"  # needs box.admin: admins only unless granted


class CapsHook:
    """A capabilities_for hook whose answer a test changes between calls."""

    def __init__(self) -> None:
        self.caps: list[str] = []

    @hookimpl
    def capabilities_for(self, actor, guild_id, kernel):
        return list(self.caps)


class Clock:
    """Stands in for the ``time`` module inside gigi_core.policy.view."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def open_kit(database_url, tmp_path, monkeypatch, cache_seconds: str):
    """A caps hook and a kernel (to open) with box, caching policy facts as the env says."""
    monkeypatch.setenv("GIGI_POLICY_CACHE_SECONDS", cache_seconds)
    hook = CapsHook()
    return hook, open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("box", Toolbox(tmp_path)), ("caps", hook)],
        database_url=database_url,
    )


@pytest.fixture
async def kit(database_url, tmp_path, monkeypatch):
    """A kernel with box enabled in g1, policy facts cached for 60 s, and a fake clock."""
    clock = Clock()
    monkeypatch.setattr(view_module, "time", clock)
    hook, opening = open_kit(database_url, tmp_path, monkeypatch, "60")
    async with opening as kernel:
        await kernel.enable_plugin("g1", "box")
        yield kernel, hook, clock


async def offered(kernel, actor: Actor = USER) -> set[str]:
    """The actions the policy would offer this actor in g1 now."""
    return {a.name for a in await kernel.policy.offerable(actor, "g1")}


async def run(kernel, *turns):
    """One agent run in g1 with a scripted model; returns the reply and the model."""
    model = ScriptedModel(list(turns))
    request = Request(actor=USER, guild_id="g1", channel_id="c1", kind="mention", text="hi")
    return await AgentRuntime(kernel, model=model).handle(request), model


async def grant_elsewhere(kernel, subject_type: str = "user", subject_id: str = "u1") -> None:
    """What another process (the CLI) does: write the grant row; this kernel is not told."""
    async with kernel.db.session() as s:
        s.add(
            CapabilityGrant(
                guild_id="g1",
                capability="box.admin",
                subject_type=subject_type,
                subject_id=subject_id,
            )
        )


async def test_a_grant_through_the_kernel_applies_to_the_next_decision(kit) -> None:
    """add_grant / remove_grant clear the cache: the very next decision sees the change."""
    kernel, _, _ = kit
    assert SECRET not in await offered(kernel)
    await kernel.add_grant("g1", "box.admin", "user", "u1")
    assert SECRET in await offered(kernel)
    await kernel.remove_grant("g1", "box.admin", "user", "u1")
    assert SECRET not in await offered(kernel)


async def test_enabling_a_plugin_through_the_kernel_applies_to_the_next_run(kit) -> None:
    """disable_plugin / enable_plugin change the tools the very next run is offered."""
    kernel, _, _ = kit
    assert "box__echo" in (await run(kernel, say("ok")))[1].offered(0)
    await kernel.disable_plugin("g1", "box")
    assert "box__echo" not in (await run(kernel, say("ok")))[1].offered(0)
    await kernel.enable_plugin("g1", "box")
    assert "box__echo" in (await run(kernel, say("ok")))[1].offered(0)


async def test_a_config_change_through_the_kernel_reaches_the_next_run(kit) -> None:
    """configure_plugin clears the cached config: the next run's handler gets the new one."""
    kernel, _, _ = kit
    await kernel.configure_plugin("g1", "box", {"greeting": "hello"})
    reply, _ = await run(kernel, call(("box__config", {})), say("ok"))
    assert reply.citations[0].result == {"greeting": "hello"}
    await kernel.configure_plugin("g1", "box", {"greeting": "bye"})
    reply, _ = await run(kernel, call(("box__config", {})), say("ok"))
    assert reply.citations[0].result == {"greeting": "bye"}


async def test_a_grant_by_another_process_applies_once_the_ttl_passes(kit) -> None:
    """A grant written straight to the table is seen after GIGI_POLICY_CACHE_SECONDS, not before."""
    kernel, _, clock = kit
    assert SECRET not in await offered(kernel)
    await grant_elsewhere(kernel)
    clock.now += 44  # the last quarter of the 60 s set in the environment begins at 45 s
    assert SECRET not in await offered(kernel)
    clock.now += 17
    assert SECRET in await offered(kernel)


async def test_near_expiry_the_guilds_facts_are_renewed_once_and_nobody_waits(kit) -> None:
    """In the facts' last quarter one background read renews them while every turn goes on
    with the cached ones; at the old expiry ten concurrent turns then read nothing at all."""
    kernel, _, clock = kit
    members = [Actor(f"u{n}") for n in range(10)]
    await asyncio.gather(*(offered(kernel, m) for m in members))  # facts and views cached
    await grant_elsewhere(kernel, "user", "u3")
    seen = _counting(kernel)
    clock.now += 50  # the last quarter of 60 s
    first = await asyncio.gather(*(offered(kernel, m) for m in members))
    assert all(SECRET not in names for names in first)  # all went on with the cached facts
    if view_module._RENEWALS:
        await asyncio.wait(set(view_module._RENEWALS))
    assert len(seen) == 2  # plugin rows and grant rows, read once for the guild
    seen.clear()
    clock.now += 15  # past the first read's expiry, within the renewed facts' life
    again = await asyncio.gather(*(offered(kernel, m) for m in members))
    assert seen == []
    assert [SECRET in names for names in again] == [m.id == "u3" for m in members]
    clock.now += 61  # nobody renewed them: expired for everyone, read again
    await offered(kernel, members[0])
    assert len(seen) == 2


async def test_a_plugin_disabled_by_another_process_applies_once_the_cache_is_cleared(kit) -> None:
    """A plugin row changed behind the kernel's back is stale until the cache is cleared."""
    kernel, _, _ = kit
    assert "box.echo" in await offered(kernel)
    async with kernel.db.session() as s:
        await s.execute(
            update(GuildPlugin)
            .where(GuildPlugin.guild_id == "g1", GuildPlugin.plugin == "box")
            .values(enabled=False)
        )
    assert "box.echo" in await offered(kernel)
    kernel.views.clear()
    assert "box.echo" not in await offered(kernel)


async def test_a_zero_ttl_disables_the_cache(database_url, tmp_path, monkeypatch) -> None:
    """GIGI_POLICY_CACHE_SECONDS=0: every decision reads the store, so outside changes apply."""
    _, opening = open_kit(database_url, tmp_path, monkeypatch, "0")
    async with opening as kernel:
        await kernel.enable_plugin("g1", "box")
        assert SECRET not in await offered(kernel)
        await grant_elsewhere(kernel)
        assert SECRET in await offered(kernel)
    cache, view = ViewCache(ttl=0), GuildView("g1", *[frozenset()] * 4)
    cache.put(("g1", "u1"), view, cache.generation)
    assert cache.get(("g1", "u1")) is None


async def test_capabilities_for_hooks_are_asked_every_time(kit) -> None:
    """A hook's answer is never cached: when it changes, the next decision follows it."""
    kernel, hook, _ = kit
    assert SECRET not in await offered(kernel)
    hook.caps = ["box.admin"]
    assert SECRET in await offered(kernel)
    hook.caps = []
    assert SECRET not in await offered(kernel)


async def test_cached_facts_follow_the_actors_roles_and_admin_flag(kit) -> None:
    """Entries are per actor identity: gaining or losing a role or admin applies at once."""
    kernel, _, _ = kit
    await kernel.add_grant("g1", "box.admin", "role", "mods")
    assert SECRET not in await offered(kernel, Actor("u1"))
    assert SECRET in await offered(kernel, Actor("u1", roles={"mods"}))
    assert SECRET not in await offered(kernel, Actor("u1"))
    assert SECRET in await offered(kernel, Actor("u1", is_admin=True))
    assert SECRET not in await offered(kernel, Actor("u2"))


async def test_a_role_set_is_decided_on_the_guilds_cached_grants(kit) -> None:
    """A role gained or lost applies at once (every member's grants come from the guild's
    rows); a role grant made elsewhere applies once the TTL passes, for every role set."""
    kernel, _, clock = kit
    await kernel.add_grant("g1", "box.admin", "role", "mods")
    assert SECRET in await offered(kernel, Actor("u1", roles={"mods"}))
    assert SECRET not in await offered(kernel, Actor("u1"))  # the role is gone: at once
    await grant_elsewhere(kernel, "role", "helpers")
    assert SECRET not in await offered(kernel, Actor("u1", roles={"helpers"}))  # cached rows
    clock.now += 61
    assert SECRET in await offered(kernel, Actor("u1", roles={"helpers"}))
    assert SECRET in await offered(kernel, Actor("u9", roles={"helpers", "x"}))


async def test_a_members_view_lives_no_longer_than_its_guilds_facts(kit) -> None:
    """A view built near the end of the guild facts' life expires with them: an outside
    change applies within GIGI_POLICY_CACHE_SECONDS of it, never within twice that."""
    kernel, _, clock = kit
    assert SECRET not in await offered(kernel, Actor("u1"))  # the guild's facts read now
    clock.now += 44  # not yet their last quarter (no renewal)
    assert SECRET not in await offered(kernel, Actor("u2"))  # built on those facts
    await grant_elsewhere(kernel, "user", "u2")
    clock.now += 17  # the guild's facts are 61 s old; u2's view only 17 s
    assert SECRET in await offered(kernel, Actor("u2"))


def _counting(kernel):
    """A list that grows by one for each SQL statement the kernel's engine runs."""
    from sqlalchemy import event

    seen: list[str] = []
    event.listen(
        kernel.db.engine.sync_engine, "before_cursor_execute", lambda *a: seen.append(a[2])
    )
    return seen


async def test_a_new_member_costs_no_query_while_the_guilds_grants_are_kept(kit) -> None:
    """Every member's grants are computed from the guild's cached grant rows."""
    kernel, _, _ = kit
    await kernel.add_grant("g1", "box.admin", "user", "u-granted")
    await offered(kernel, Actor("u1"))  # reads the guild's facts
    seen = _counting(kernel)
    assert SECRET not in await offered(kernel, Actor("u-new"))
    assert SECRET in await offered(kernel, Actor("u-granted"))
    assert seen == []


async def test_a_guild_with_many_grants_reads_each_new_members_grants(kit, monkeypatch) -> None:
    """Past GRANTS_KEPT grant rows the guild's grants are not kept: one query per member."""
    kernel, _, _ = kit
    monkeypatch.setattr(view_module, "GRANTS_KEPT", 2)
    for n in range(3):
        await kernel.add_grant("g1", "box.admin", "user", f"u-{n}")
    await offered(kernel, Actor("u1"))  # reads the guild's facts: too many grants to keep
    seen = _counting(kernel)
    assert SECRET in await offered(kernel, Actor("u-2"))
    assert SECRET not in await offered(kernel, Actor("u-new"))
    assert len(seen) == 2 and all("capability_grants" in q for q in seen)
    assert SECRET in await offered(kernel, Actor("u-2"))  # cached with the guild's facts
    assert len(seen) == 2


async def test_a_revoke_during_a_concurrent_read_applies_to_the_next_decision(
    kit, monkeypatch
) -> None:
    """A grant removed while another request's read is in flight is not cached back."""
    kernel, _, _ = kit
    await kernel.add_grant("g1", "box.admin", "user", "u1")
    read, was_read, release = view_module._read, asyncio.Event(), asyncio.Event()

    async def slow_read(*args):  # a read that takes a while to come back
        facts = await read(*args)
        was_read.set()
        await release.wait()
        return facts

    monkeypatch.setattr(view_module, "_read", slow_read)
    other_request = asyncio.create_task(offered(kernel))
    await was_read.wait()
    await kernel.remove_grant("g1", "box.admin", "user", "u1")
    release.set()
    assert SECRET in await other_request  # it decided before the revoke: fine
    monkeypatch.setattr(view_module, "_read", read)
    assert SECRET not in await offered(kernel)


async def test_a_new_member_reuses_the_guilds_facts_and_offer(kit) -> None:
    """No query for a new member, and the same offer for the same grants."""
    kernel, _, _ = kit
    first = await kernel.policy.offerable(USER, "g1")
    assert "box.echo" in {a.name for a in first}
    async with kernel.db.session() as s:  # another process disables box behind our back
        await s.execute(update(GuildPlugin).values(enabled=False))
    newcomer = Actor(id="u-new")
    again = await kernel.policy.offerable(newcomer, "g1")
    assert again is first  # the guild's facts and the offer for these grants were reused
    await kernel.add_grant("g1", "box.admin", "user", "u-new")  # through the kernel: cleared
    granted = {a.name for a in await kernel.policy.offerable(newcomer, "g1")}
    assert not {n for n in granted if n.startswith("box.")}  # the fresh read: box disabled


async def test_members_arriving_together_at_expired_facts_read_them_once(kit) -> None:
    """Ten members' first turns after the facts expired: one read of the guild's rows."""
    from tests.llm.inprocess import Statements

    kernel, _, clock = kit
    await offered(kernel)
    clock.now += 61  # expired
    members = [Actor(id=f"m{i}") for i in range(10)]
    with Statements(kernel) as sql:
        answers = await asyncio.gather(*(offered(kernel, m) for m in members))
    assert all("box.echo" in a for a in answers)
    assert len([s for s in sql.reads() if "guild_plugins" in s]) == 1
    assert len(kernel.views.reads) == 0


async def test_a_member_arriving_after_a_revoke_does_not_join_a_read_begun_before_it(
    kit, monkeypatch
) -> None:
    """The shared read is the generation's: a change through the kernel starts a new one."""
    kernel, _, clock = kit
    await kernel.add_grant("g1", "box.admin", "user", "u1")
    clock.now += 61
    read, was_read, release = view_module._read_facts, asyncio.Event(), asyncio.Event()

    async def slow_read(*args):
        facts = await read(*args)
        was_read.set()
        await release.wait()
        return facts

    monkeypatch.setattr(view_module, "_read_facts", slow_read)
    before = asyncio.create_task(offered(kernel))
    await was_read.wait()
    await kernel.remove_grant("g1", "box.admin", "user", "u1")
    after = asyncio.create_task(offered(kernel))
    await asyncio.sleep(0.05)
    release.set()
    assert SECRET in await before  # it asked before the revoke: fine
    assert SECRET not in await after
