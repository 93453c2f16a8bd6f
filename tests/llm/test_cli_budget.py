"""``gigi llm budget`` as operators use it: set, show, reset, remove; errors say what to fix."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.store.sealing import generate_key


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "openai")
    monkeypatch.setenv("GIGI_SECRET_KEY", generate_key())
    runner = CliRunner()

    def invoke(*args: str):
        result = runner.invoke(cli, ["llm", "budget", *args], obj=CliState())
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke


def test_set_show_reset_remove(gigi) -> None:
    made = gigi(
        "set", "--guild", "g1", "--member", "*", "--limit", "5000", "--window", "weekly",
        "--reset-hour", "6", "--exempt-role", "r-staff",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert "per-member weekly budget in guild g1: 5000 tokens" in made.output
    assert "06:00 UTC; exempt: r-staff; admins exempt" in made.output
    assert gigi("set", "--guild", "g1", "--limit", "100000").exit_code == 0
    shown = json.loads(gigi("show", "--guild", "g1", "--json").output)
    by_scope = {(r["scope_kind"], r["scope_id"], r["window"]): r for r in shown}
    guild = by_scope[("guild", "", "daily")]
    assert (guild["limit"], guild["spent"], guild["left"]) == (100000, 0, 100000)
    assert by_scope[("member", "*", "weekly")]["left"] is None  # each member has their own
    table = gigi("show", "--guild", "g1").output
    assert "member *" in table and "each its own" in table and "100000" in table
    reset = gigi("reset", "--guild", "g1", "--window", "daily")
    assert reset.exit_code == 0 and "guild daily budget in guild g1" in reset.output
    gone = gigi("remove", "--guild", "g1", "--member", "*", "--window", "weekly")
    assert gone.exit_code == 0 and "removed the per-member weekly budget" in gone.output
    left = json.loads(gigi("show", "--guild", "g1", "--json").output)
    assert [(r["scope_kind"], r["window"]) for r in left] == [("guild", "daily")]


def test_errors_say_what_to_change(gigi) -> None:
    two = gigi("set", "--guild", "g1", "--member", "u1", "--role", "r1", "--limit", "5")
    assert (
        two.exit_code == 2
        and "at most one of --member, --channel, --role, --model, --plugin" in two.output
    )
    money = gigi("set", "--guild", "g1", "--limit", "5", "--unit", "money")
    assert money.exit_code == 2 and "a money budget needs a model profile of guild:g1" in (
        money.output
    )
    assert "--input-price P --output-price Q" in money.output
    fraction = gigi("set", "--guild", "g1", "--limit", "2.5")
    assert fraction.exit_code == 2 and "the limit '2.5' is not a whole number of tokens" in (
        fraction.output
    )
    role_every = gigi("set", "--guild", "g1", "--role", "*", "--limit", "5")
    assert role_every.exit_code == 2 and "is for member and channel budgets" in role_every.output
    missing = gigi("remove", "--guild", "g1", "--window", "daily")
    assert missing.exit_code == 2 and "has no daily budget for guild" in missing.output
    assert "gigi llm budget show --guild g1" in missing.output
