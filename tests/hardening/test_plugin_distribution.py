"""Plugin state and sealed config follow the distribution that saved them, not just the name."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import select, update

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.errors import ConfigError, PolicyDenied
from gigi_core.kernel import Kernel
from gigi_core.plugins import LoadOptions, load_plugins
from gigi_core.store.plugin_state import SECRET_SCOPE
from gigi_core.store.sealing import Sealer, generate_key
from gigi_core.store.tables import GuildPlugin, SealedSecret
from gigi_core.testing.scripted import ScriptedModel, say

USER = Actor(id="u1")
SECRET = "sk-REAL-WEATHER-7c1d0e"

MANIFEST = """\
manifest_version: 1
plugin:
  name: weather
  version: 1.0.0
  description: Weather.
  data_statement: Stores nothing.
  config_schema:
    type: object
    properties:
      token: {type: string, x-gigi-secret: true}
  capabilities:
    - {name: weather.use, description: Use it, default: everyone}
actions:
  - {name: weather.config, description: Show the config, safety: read_only,
     capability: weather.use, args: {type: object}}
"""

MODULE = """\
from pathlib import Path
from gigi_core import hookimpl

@hookimpl
def register_manifests(register):
    register(Path(__file__).parent / "gigi.yaml")

@hookimpl
def register_tools(register):
    register("weather.config", show)

def show(ctx):
    return dict(ctx.config)
"""


@pytest.fixture
def dists(plugin_factory):
    """``weather`` (distribution gigi_test_weather) and ``aaa``, a look-alike that loads first."""
    plugin_factory.make("weather", module=MODULE, manifest=MANIFEST)
    plugin_factory.make("aaa", module=MODULE, manifest=MANIFEST)
    return plugin_factory


async def open_kernel(tmp_path, key: str, *names: str) -> Kernel:
    loaded = load_plugins(LoadOptions(load=frozenset(names), strict=False))
    return await Kernel.open(None, tmp_path, plugins=loaded, sealer=Sealer(key))


async def test_a_look_alike_plugin_inherits_nothing(dists, tmp_path, caplog) -> None:
    key = generate_key()
    async with await open_kernel(tmp_path, key, "weather") as kernel:
        await kernel.enable_plugin("g1", "weather", config={"token": SECRET})
        assert (await kernel.plugin_config("g1", "weather"))["token"] == SECRET
        async with kernel.db.session() as s:
            [owner] = (await s.scalars(select(SealedSecret.owner))).all()
        assert "gigi_test_weather" in owner  # sealed for the distribution too

    with caplog.at_level(logging.ERROR):
        kernel = await open_kernel(tmp_path, key, "aaa", "weather")
    async with kernel:
        record = kernel.registry.records["weather"]
        assert record.status == "failed"
        assert "gigi_test_aaa" in record.error and "gigi_test_weather" in record.error
        assert any("gigi_test_aaa" in r.getMessage() for r in caplog.records)  # loudly
        assert kernel.registry.owner_of("weather").name == "aaa"  # first wins, as documented

        assert "weather" not in await kernel.plugin_state.enabled_plugins("g1")
        with pytest.raises(PolicyDenied):
            await kernel.call_tool("weather.config", {}, actor=USER, guild_id="g1")
        with pytest.raises(ConfigError, match="gigi_test_weather"):
            await kernel.plugin_config("g1", "weather")
        with pytest.raises(ConfigError, match="gigi_test_aaa"):
            await kernel.enable_plugin("g1", "weather")
        model = ScriptedModel([say("no tools")])
        request = Request(actor=USER, guild_id="g1", channel_id="c", kind="mention", text="hi")
        await AgentRuntime(kernel, model=model).handle(request)
        assert not [w for w in model.offered(0) if w.startswith("weather")]
        # In a guild where nobody saved anything the look-alike is a plugin like any other.
        await kernel.enable_plugin("g2", "weather", config={"token": "sk-its-own"})
        outcome = await kernel.call_tool("weather.config", {}, actor=USER, guild_id="g2")
        assert outcome.result == {"token": "sk-its-own"}

    async with await open_kernel(tmp_path, key, "weather") as kernel:  # the look-alike is gone
        outcome = await kernel.call_tool("weather.config", {}, actor=USER, guild_id="g1")
        assert outcome.result == {"token": SECRET}
        with pytest.raises(ConfigError, match="gigi_test_aaa"):
            await kernel.plugin_config("g2", "weather")


async def test_state_saved_before_distributions_were_recorded_is_adopted(dists, tmp_path) -> None:
    key = generate_key()
    async with await open_kernel(tmp_path, key, "weather") as kernel:
        async with kernel.db.session() as s:  # what an older Gigi wrote: no distribution
            s.add(GuildPlugin(guild_id="g1", plugin="weather", enabled=True, config={}))
            await kernel.secrets.put(SECRET_SCOPE, "g1/weather", "token", SECRET, s)
        async with kernel.db.session() as s:
            await s.execute(update(GuildPlugin).values(distribution=None))
    async with await open_kernel(tmp_path, key, "weather") as kernel:  # adopted at start-up
        assert (await kernel.plugin_config("g1", "weather"))["token"] == SECRET
    async with await open_kernel(tmp_path, key, "aaa", "weather") as kernel:
        with pytest.raises(ConfigError, match="gigi_test_weather"):
            await kernel.plugin_config("g1", "weather")
