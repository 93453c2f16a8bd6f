"""``gigi run --shards auto|N --shard-ids``: what reaches the gateway surface's settings."""

from __future__ import annotations

import click
import pytest

from gigi_core.cli.run import shard_settings

VARS = ("GIGI_DISCORD_SHARDS", "GIGI_DISCORD_SHARD_COUNT", "GIGI_DISCORD_SHARD_IDS")


@pytest.fixture(autouse=True)
def _clean(monkeypatch) -> None:
    for var in VARS:
        monkeypatch.delenv(var, raising=False)


def test_auto_and_a_count_claim_through_leases(monkeypatch) -> None:
    import os

    shard_settings("auto", None)
    assert os.environ["GIGI_DISCORD_SHARDS"] == "auto"
    shard_settings("8", None)
    assert os.environ["GIGI_DISCORD_SHARDS"] == "8"
    assert "GIGI_DISCORD_SHARD_IDS" not in os.environ


def test_fixed_ids_need_a_count() -> None:
    import os

    shard_settings("4", "1, 3")
    assert (os.environ["GIGI_DISCORD_SHARD_COUNT"], os.environ["GIGI_DISCORD_SHARD_IDS"]) == (
        "4",
        "1,3",
    )
    assert "GIGI_DISCORD_SHARDS" not in os.environ


@pytest.mark.parametrize(
    ("shards", "ids", "message"),
    [
        ("many", None, "auto or a shard count"),
        ("0", None, "auto or a shard count"),
        ("auto", "0", "needs --shards N"),
        ("4", "0,x", "comma-separated"),
        ("4", "4", "between 0 and 3"),
        (None, "0", "auto or a shard count"),
    ],
)
def test_bad_options_name_the_option(shards, ids, message) -> None:
    with pytest.raises(click.BadParameter, match=message):
        shard_settings(shards, ids)
