"""gigi-dice: the installed plugin loads from its entry point, rolls within bounds, honours
the guild's max_count and refuses bad arguments before the handler runs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core import Actor, InvalidArguments, PolicyDenied, ToolExecutionError
from gigi_core.testing import open_test_kernel


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """No test sees the developer's Gigi settings or data folder."""
    for var in ("GIGI_DATABASE_URL", "GIGI_SECRET_KEY", "GIGI_LOAD_PLUGINS", "GIGI_BLOCK_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))


@pytest.fixture
async def kernel(tmp_path):
    async with open_test_kernel(tmp_path, plugins=["dice"]) as kernel:
        await kernel.enable_plugin("g1", "dice")
        yield kernel


async def roll(kernel, **args):
    outcome = await kernel.call_tool("dice.roll", args, actor=Actor(id="u1"), guild_id="g1")
    return outcome.result


def test_the_entry_point_loads_the_manifest() -> None:
    from gigi_core.testing import load_test_plugins

    loaded = load_test_plugins(["dice"])
    record = loaded.registry.records["dice"]
    assert record.status == "ok" and record.distribution == "gigi-dice"
    action = loaded.registry.actions["dice.roll"]
    assert action.safety.value == "read_only" and action.capability == "dice.use"
    assert loaded.registry.capability_default("dice.use") == "everyone"


async def test_rolls_stay_within_the_faces(kernel) -> None:
    for _ in range(50):
        result = await roll(kernel, sides=6, count=3)
        assert len(result["faces"]) == 3 and all(1 <= f <= 6 for f in result["faces"])
        assert result["total"] == sum(result["faces"])
    assert len((await roll(kernel, sides=20))["faces"]) == 1  # count defaults to 1


@pytest.mark.parametrize(
    "args", [{"sides": 1}, {"sides": 1001}, {"sides": 6, "count": 0}, {"sides": "six"}, {}]
)
async def test_bad_arguments_are_refused_before_the_handler(kernel, args) -> None:
    with pytest.raises(InvalidArguments):
        await roll(kernel, **args)


async def test_the_guild_config_caps_the_number_of_dice(kernel) -> None:
    await kernel.configure_plugin("g1", "dice", {"max_count": 2})
    assert len((await roll(kernel, sides=6, count=2))["faces"]) == 2
    with pytest.raises(ToolExecutionError):
        await roll(kernel, sides=6, count=3)


async def test_a_guild_that_did_not_enable_it_is_refused(kernel) -> None:
    with pytest.raises(PolicyDenied):
        await kernel.call_tool("dice.roll", {"sides": 6}, actor=Actor(id="u1"), guild_id="g2")


def test_the_cli_rolls_in_a_guild(monkeypatch) -> None:
    from gigi_core.cli import cli
    from gigi_core.cli.common import CliState

    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")

    def gigi(*args: str):
        return CliRunner().invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    assert gigi("plugins", "enable", "dice", "--guild", "123").exit_code == 0
    result = gigi("tools", "call", "dice.roll", "--guild", "123", "--user", "42",
                  "--args", '{"sides": 20, "count": 2}')  # fmt: skip
    assert result.exit_code == 0
    faces = json.loads(result.output)["faces"]
    assert len(faces) == 2 and all(1 <= f <= 20 for f in faces)
