"""HookRunner keeps each hook's implementation list until the plugin manager changes."""

from __future__ import annotations

import pluggy
import pytest

from gigi_core import Actor, hookimpl
from gigi_core.hooks import HookRunner
from gigi_core.plugins import new_plugin_manager
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox

USER = Actor(id="u1")


class Observer:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def after_tool_call(self, call, actor, outcome, kernel):
        self.seen.append(call["action"])


class Named:
    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    def actor_from_event(self, event):
        return self.name


async def test_register_and_unregister_after_the_cache_is_warm(tmp_path) -> None:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))]
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        args = {"text": "a", "n": 1}
        await kernel.call_tool("box.echo", args, actor=USER, guild_id="g1")  # warm
        late = Observer()
        kernel.pm.register(late, name="late")
        await kernel.call_tool("box.echo", args, actor=USER, guild_id="g1")
        assert late.seen == ["box.echo"]
        kernel.pm.unregister(name="late")
        await kernel.call_tool("box.echo", args, actor=USER, guild_id="g1")
        assert late.seen == ["box.echo"]  # gone at once
        kernel.pm.register(late, name="late")
        kernel.pm.set_blocked("late")  # pluggy's own path to unregister
        await kernel.call_tool("box.echo", args, actor=USER, guild_id="g1")
        assert late.seen == ["box.echo"]


async def test_order_first_and_a_failed_register() -> None:
    pm = new_plugin_manager()
    runner = HookRunner(pm)
    assert await runner.first("actor_from_event", event={}) is None
    pm.register(Named("a"), name="a")
    assert await runner.first("actor_from_event", event={}) == "a"
    pm.register(Named("b"), name="b")  # pluggy calls the latest registered first
    assert await runner.call_all("actor_from_event", event={}) == ["b", "a"]
    with pytest.raises(ValueError):
        pm.register(Named("c"), name="a")  # the name is taken: nothing changed
    assert await runner.call_all("actor_from_event", event={}) == ["b", "a"]
    pm.unregister(name="b")
    assert await runner.call_all("actor_from_event", event={}) == ["a"]


async def test_a_plain_pluggy_manager_is_asked_every_time() -> None:
    from gigi_core import hookspecs

    pm = pluggy.PluginManager("gigi")
    pm.add_hookspecs(hookspecs)
    runner = HookRunner(pm)
    pm.register(Named("a"), name="a")
    assert await runner.call_all("actor_from_event", event={}) == ["a"]
    pm.unregister(name="a")
    assert await runner.call_all("actor_from_event", event={}) == []
