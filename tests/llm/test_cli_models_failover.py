"""``gigi llm models`` and ``gigi llm failover set|show|clear`` as operators use them, against
the wire-level fake: listings cached across CLI runs, errors that say what to change."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.store.sealing import generate_key
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "openai")
    monkeypatch.setenv("GIGI_SECRET_KEY", generate_key())
    monkeypatch.setenv("THE_KEY", GUILD_KEY)
    runner = CliRunner()
    seen: list[str] = []

    def invoke(*args: str):
        result = runner.invoke(cli, ["llm", *args], obj=CliState())
        seen.append(result.output)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    yield invoke
    assert all(GUILD_KEY not in out for out in seen), "a command printed the key"


def add(gigi, label: str, base_url: str) -> None:
    made = gigi(
        "credential", "add", "--owner", "guild:g1", "--provider", "openai-compatible",
        "--label", label, "--base-url", base_url, "--api-key-env", "THE_KEY",
    )  # fmt: skip
    assert made.exit_code == 0, made.output


def test_models_are_listed_then_served_from_the_shared_cache(gigi) -> None:
    with FakeOpenAI(api_key=GUILD_KEY) as fake:
        fake.models = ["m-2", "m-1"]
        add(gigi, "main", fake.base_url)
        listed = gigi("models", "--owner", "guild:g1", "--credential", "main")
        assert listed.exit_code == 0, listed.output
        assert "2 models for main (openai-compatible) of guild:g1; fetched" in listed.output
        assert listed.output.index("m-1") < listed.output.index("m-2")
        again = json.loads(
            gigi("models", "--owner", "guild:g1", "--credential", "main", "--json").output
        )
        assert again["cached"] is True and [m["id"] for m in again["models"]] == ["m-1", "m-2"]
        assert len(fake.requests_to("models")) == 1  # a new process read the stored listing
        fake.models = ["m-3"]
        fresh = gigi("models", "--owner", "guild:g1", "--credential", "main", "--refresh")
        assert "1 models for main" in fresh.output and "m-3" in fresh.output
        # a profile naming a model the listing lacks is set, with a warning
        prof = gigi(
            "profile", "set", "--owner", "guild:g1", "--purpose", "chat",
            "--credential", "main", "--model", "m-9",
        )  # fmt: skip
        assert prof.exit_code == 0
        assert "Warning: 'm-9' is not among the 1 models credential 'main'" in prof.output
        missing = gigi("models", "--owner", "guild:g1", "--credential", "other")
        assert missing.exit_code != 0
        assert "no active credential labelled 'other'" in missing.output
        assert "its credentials: main" in missing.output


def test_failover_set_show_clear_and_refusals(gigi) -> None:
    with FakeOpenAI() as a, FakeOpenAI() as b:
        add(gigi, "main", a.base_url)
        add(gigi, "spare", b.base_url)
        made = gigi(
            "failover", "set", "--owner", "guild:g1", "--purpose", "chat",
            "--order", "spare:m-small", "--on", "rate_limited,server_error",
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        assert "guild:g1 chat: the profile, then spare (openai-compatible, m-small)" in made.output
        assert "on rate_limited, server" in made.output
        [plan] = json.loads(gigi("failover", "show", "--owner", "guild:g1", "--json").output)
        assert plan["order"][0]["credential"] == "spare" and plan["on"] == [
            "rate_limited",
            "server",
        ]
        bad = gigi("failover", "set", "--owner", "guild:g1", "--purpose", "chat", "--order", "nope")
        assert bad.exit_code != 0
        assert "guild:g1 has no active credential labelled 'nope'" in bad.output
        assert "its credentials: main, spare" in bad.output
        wrong = gigi(
            "failover", "set", "--owner", "guild:g1", "--purpose", "chat",
            "--order", "spare", "--on", "sometimes",
        )  # fmt: skip
        assert wrong.exit_code != 0 and "unknown error class 'sometimes'" in wrong.output
        gone = gigi("failover", "clear", "--owner", "guild:g1", "--purpose", "chat")
        assert gone.exit_code == 0 and "Removed the chat failover list of guild:g1" in gone.output
        none = gigi("failover", "show", "--owner", "guild:g1")
        assert "No failover list for guild:g1" in none.output
        again = gigi("failover", "clear", "--owner", "guild:g1", "--purpose", "chat")
        assert again.exit_code != 0 and "no failover list for chat" in again.output
