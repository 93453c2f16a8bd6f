"""One test per hook (test_hook_<name>), as datasette does; tests/test_docs.py checks the set."""

from __future__ import annotations

from dataclasses import dataclass

import click
import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from gigi_core import Actor, hookimpl
from gigi_core.plugins import LoadOptions, load_plugins
from gigi_core.testing import open_test_kernel
from tests.test_store import NotesPlugin
from tests.toolbox import Toolbox

USER = Actor(id="u1")


async def open_with(tmp_path, *plugins, database_url=None):
    extra = [("box", Toolbox(tmp_path)), *plugins]
    return open_test_kernel(tmp_path, plugins=[], extra_plugins=extra, database_url=database_url)


async def test_hook_register_manifests(tmp_path) -> None:
    async with await open_with(tmp_path) as kernel:
        assert "box" in kernel.registry.manifests
        assert kernel.registry.actions["box.echo"].capability == "box.use"
        assert kernel.registry.capability_default("box.use") == "everyone"


async def test_hook_register_tools(tmp_path) -> None:
    async with await open_with(tmp_path) as kernel:
        await kernel.enable_plugin("g1", "box")
        outcome = await kernel.call_tool(
            "box.echo", {"text": "ab", "n": 2}, actor=USER, guild_id="g1"
        )
        assert outcome.result["text"] == "abab"


@dataclass
class FakeProvider:
    name: str = "fakeai"


class ProviderPlugin:
    @hookimpl
    def register_providers(self, register):
        register(FakeProvider())


def test_hook_register_providers() -> None:
    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("prov", ProviderPlugin())])
    assert isinstance(loaded.registry.providers["fakeai"], FakeProvider)
    assert loaded.registry.records["prov"].as_dict()["providers"] == ["fakeai"]


class SurfacePlugin:
    started: list[str] = []

    @hookimpl
    def register_surfaces(self, register):
        register("fake", self.factory)

    def factory(self, kernel):
        plugin = self

        class Surface:
            async def run(self) -> None:
                plugin.started.append(type(kernel).__name__)

        return Surface()


def test_hook_register_surfaces(tmp_path, monkeypatch) -> None:
    from gigi_core.cli import cli
    from gigi_core.cli.common import CliState

    monkeypatch.setenv("GIGI_HOME", str(tmp_path))
    state = CliState()
    state._plugins = load_plugins(
        LoadOptions(load=frozenset(), defaults=()), extra=[("surf", SurfacePlugin())]
    )
    result = CliRunner().invoke(cli, ["run"], obj=state, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Starting surface fake." in result.output
    assert SurfacePlugin.started == ["Kernel"]


class RetrieverPlugin:
    @hookimpl
    def register_retrievers(self, register):
        register("exact", object())


def test_hook_register_retrievers() -> None:
    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("ret", RetrieverPlugin())])
    assert set(loaded.registry.retrievers) == {"exact"}


class BoxConfig(BaseModel):
    greeting: str = "hello"
    api_token: str | None = None


class ConfiguredBox(Toolbox):
    @hookimpl
    def register_config_models(self, register):
        register("box", BoxConfig)


class ForeignConfig:
    @hookimpl
    def register_config_models(self, register):
        register("box", BoxConfig)


async def test_hook_register_config_models(tmp_path) -> None:
    from gigi_core.errors import ConfigError

    loaded = load_plugins(
        LoadOptions(load=frozenset()),
        extra=[("box", Toolbox(tmp_path)), ("foreign", ForeignConfig())],
    )
    assert (
        "'box' is not a plugin declared by this module" in loaded.registry.records["foreign"].error
    )
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", ConfiguredBox(tmp_path))]
    ) as kernel:
        await kernel.enable_plugin("g1", "box", config={"greeting": "hi"})
        config = await kernel.plugin_config("g1", "box")
        assert isinstance(config, BoxConfig) and config.greeting == "hi"
        with pytest.raises(ConfigError, match="greeting"):
            await kernel.configure_plugin("g1", "box", {"greeting": 3})


async def test_hook_register_migrations(database_url, tmp_path) -> None:
    from sqlalchemy import text

    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("box", NotesPlugin(tmp_path))],
        database_url=database_url,
    ) as kernel:
        async with kernel.db.session() as s:
            assert await s.scalar(text("SELECT count(*) FROM box_notes")) == 0


class CommandPlugin:
    @hookimpl
    def register_commands(self, cli):
        @cli.command("hello-plugin")
        def hello() -> None:
            click.echo("hello from a plugin")


def test_hook_register_commands(monkeypatch) -> None:
    from gigi_core.cli.common import CliState
    from gigi_core.cli.main import _add_plugin_commands, cli

    state = CliState()
    state._plugins = load_plugins(LoadOptions(load=frozenset()), extra=[("cmd", CommandPlugin())])
    try:
        _add_plugin_commands(state)
        result = CliRunner().invoke(cli, ["hello-plugin"], obj=state)
        assert result.output == "hello from a plugin\n"
    finally:
        cli.commands.pop("hello-plugin", None)


class Lifecycle:
    def __init__(self) -> None:
        self.events: list[str] = []

    @hookimpl
    async def startup(self, kernel):
        self.events.append(f"startup:{len(kernel.registry.actions)}")

    @hookimpl
    def shutdown(self, kernel):
        self.events.append("shutdown")


async def test_hook_startup(tmp_path) -> None:
    life = Lifecycle()
    async with await open_with(tmp_path, ("life", life)):
        assert life.events == ["startup:22"]  # box's 11, the 4 native tools, 7 native commands


async def test_hook_shutdown(tmp_path) -> None:
    life = Lifecycle()
    async with await open_with(tmp_path, ("life", life)):
        pass
    assert life.events[-1] == "shutdown"


class ActorResolvers:
    @hookimpl(trylast=True)
    def actor_from_event(self, event, surface):
        return Actor(id="fallback")

    @hookimpl
    async def _unused(self):  # pragma: no cover - not a hook name; pluggy ignores non-hooks
        pass


class ConsoleActors:
    @hookimpl
    async def actor_from_event(self, event, surface):
        if surface == "console":
            return Actor(id=event["user"], is_admin=True)
        return None


async def test_hook_actor_from_event(tmp_path) -> None:
    fallback = type(
        "Fallback",
        (),
        {
            "actor_from_event": hookimpl(trylast=True)(
                lambda self, event, surface: Actor(id="fallback")
            )
        },
    )()
    async with await open_with(
        tmp_path, ("fallback", fallback), ("console_actors", ConsoleActors())
    ) as kernel:
        assert await kernel.actor_from_event({"user": "me"}, "console") == Actor(
            id="me", is_admin=True
        )
        assert (await kernel.actor_from_event({}, "discord")).id == "fallback"


class Granter:
    @hookimpl
    async def capabilities_for(self, actor, guild_id, kernel):
        return {"box.admin"} if guild_id == "g1" else set()


async def test_hook_capabilities_for(tmp_path) -> None:
    from gigi_core.errors import PolicyDenied

    async with await open_with(tmp_path, ("granter", Granter())) as kernel:
        await kernel.enable_plugin("g1", "box")
        await kernel.enable_plugin("g2", "box")
        await kernel.call_tool("box.secret_op", {}, actor=USER, guild_id="g1")
        with pytest.raises(PolicyDenied):
            await kernel.call_tool("box.secret_op", {}, actor=USER, guild_id="g2")


class Vetoes:
    @hookimpl
    def check_tool_call(self, call, actor, action, kernel):
        return "deny" if call["args"].get("text") == "forbidden" else None


async def test_hook_check_tool_call(tmp_path) -> None:
    from gigi_core.errors import PolicyDenied

    async with await open_with(tmp_path, ("veto", Vetoes())) as kernel:
        await kernel.enable_plugin("g1", "box")
        await kernel.call_tool("box.echo", {"text": "fine"}, actor=USER, guild_id="g1")
        with pytest.raises(PolicyDenied, match="a plugin policy denied this call"):
            await kernel.call_tool("box.echo", {"text": "forbidden"}, actor=USER, guild_id="g1")


class Observer:
    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.events: list[tuple] = []

    @hookimpl
    async def after_tool_call(self, call, actor, outcome, kernel):
        self.calls.append((call["action"], actor.id, outcome.status, outcome.decision))

    @hookimpl
    def track_event(self, name, properties, kernel):
        self.events.append((name, dict(properties)))


class BrokenObserver:
    @hookimpl
    def after_tool_call(self, call, actor, outcome, kernel):
        raise RuntimeError("observer bug")


async def test_hook_after_tool_call(tmp_path) -> None:
    observer = Observer()
    async with await open_with(tmp_path, ("broken", BrokenObserver()), ("obs", observer)) as kernel:
        await kernel.enable_plugin("g1", "box")
        await kernel.call_tool("box.echo", {"text": "x"}, actor=USER, guild_id="g1")
        assert observer.calls == [("box.echo", "u1", "ok", "allow")]


async def test_hook_track_event(tmp_path) -> None:
    observer = Observer()
    async with await open_with(tmp_path, ("obs", observer)) as kernel:
        await kernel.enable_plugin("g1", "box")
        await kernel.call_tool("box.echo", {"text": "canary-track"}, actor=USER, guild_id="g1")
    names = [n for n, _ in observer.events]
    assert names == ["plugin.enable", "tool.call"]
    assert observer.events[1][1]["status"] == "ok"
    assert "canary-track" not in repr(observer.events)


async def test_hook_track_event_once_per_agent_step(tmp_path) -> None:
    """A run's model call, tool call and answer are each reported once, without text."""
    from gigi_core.agent import Request
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.testing.scripted import ScriptedModel, call, say

    observer = Observer()
    async with await open_with(tmp_path, ("obs", observer)) as kernel:
        await kernel.enable_plugin("g1", "box")
        model = ScriptedModel([call(("box__echo", {"text": "canary-agent"})), say("done")])
        runtime = AgentRuntime(kernel, model=model)
        request = Request(actor=USER, guild_id="g1", channel_id="c1", kind="mention", text="hi")
        assert (await runtime.handle(request)).status == "done"
    names = [n for n, _ in observer.events]
    assert names == ["plugin.enable", "agent.plan", "agent.tool", "agent.plan", "agent.answer"]
    assert "canary-agent" not in repr(observer.events)


class Retentions:
    def __init__(self, days: dict[str, object]) -> None:
        self.days = days

    @hookimpl
    async def channel_retention(self, guild_id, channel_id, kernel):
        return self.days.get(channel_id)


async def test_hook_channel_retention(tmp_path) -> None:
    """The shortest positive answer wins; None (or junk) from everyone means nobody keeps it."""
    long_ = Retentions({"c1": 30, "c2": 10, "c4": True})
    short = Retentions({"c1": 7, "c3": -1})
    async with await open_with(tmp_path, ("long", long_), ("short", short)) as kernel:
        assert await kernel.channel_retention("g1", "c1") == 7
        assert await kernel.channel_retention("g1", "c2") == 10
        assert await kernel.channel_retention("g1", "c3") is None  # not a positive count
        assert await kernel.channel_retention("g1", "c4") is None  # a bool is not a count
        assert await kernel.channel_retention("g1", "c9") is None
