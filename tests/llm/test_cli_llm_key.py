"""``gigi llm key``: the operator manages a member's own keys; never the key on screen."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.store.sealing import generate_key
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import USER_KEY


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "openai")
    monkeypatch.setenv("GIGI_SECRET_KEY", generate_key())
    monkeypatch.setenv("MY_KEY", USER_KEY)
    runner = CliRunner()
    seen: list[str] = []

    def invoke(*args: str, input: str | None = None):
        result = runner.invoke(cli, list(args), obj=CliState(), input=input)
        seen.append(result.output)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    yield invoke
    assert all(USER_KEY not in out for out in seen), "a command printed the key"


def test_add_list_prefer_test_remove(gigi) -> None:
    with FakeOpenAI(api_key=USER_KEY) as fake:
        add = gigi(
            "llm", "key", "add", "--user", "u1", "--provider", "openai-compatible",
            "--label", "mine", "--base-url", fake.base_url, "--api-key-env", "MY_KEY",
        )  # fmt: skip
        assert add.exit_code == 0, add.output
        assert "Added key mine (openai-compatible) for user u1" in add.output
        assert "gigi llm key prefer --user u1 --label mine" in add.output
        none = gigi("llm", "key", "list", "--user", "u2")
        assert "User u2 has no keys" in none.output

        prefer = gigi("llm", "key", "prefer", "--user", "u1", "--label", "mine", "--model", "m-1")
        assert prefer.exit_code == 0 and "User u1 now uses mine with m-1 (chat)" in prefer.output
        [row] = json.loads(gigi("llm", "key", "list", "--user", "u1", "--json").output)
        assert (row["owner"], row["label"], row["preferred_for"]) == ("user:u1", "mine", ["chat"])

        fake.reply_text("OK")
        ok = gigi("llm", "key", "test", "--user", "u1", "--label", "mine")
        assert ok.exit_code == 0 and "OK: mine answered with model m-1" in ok.output
        assert fake.requests[-1].headers["authorization"] == f"Bearer {USER_KEY}"
        listed = gigi("llm", "key", "list", "--user", "u1").output
        assert "mine" in listed and "chat" in listed and "ok" in listed

        gone = gigi("llm", "key", "remove", "--user", "u1", "--label", "mine")
        assert gone.exit_code == 0 and "Removed key mine of user u1" in gone.output
        assert "profile now has no key" in gone.output
        assert json.loads(gigi("llm", "key", "list", "--user", "u1", "--json").output) == []


def test_refusals_name_what_to_change(gigi) -> None:
    both = gigi(
        "llm", "key", "add", "--user", "u1", "--provider", "openai", "--label", "x",
    )  # fmt: skip
    assert both.exit_code != 0 and "--api-key-env VAR or --api-key-stdin" in both.output
    missing = gigi("llm", "key", "prefer", "--user", "u1", "--label", "nope", "--model", "m")
    assert missing.exit_code != 0 and "user:u1 has no active credential labelled 'nope'" in (
        missing.output
    )
    blank = gigi("llm", "key", "list", "--user", " ")
    assert blank.exit_code == 2 and "--user" in blank.output and "user id" in blank.output
    bad = gigi("llm", "key", "test", "--user", "u1", "--label", "nope")
    assert bad.exit_code != 0 and "gigi llm credential list --owner user:u1" in bad.output
    with FakeOpenAI(api_key="sk-someone-else") as fake:
        gigi(
            "llm", "key", "add", "--user", "u1", "--provider", "openai-compatible",
            "--label", "bad", "--base-url", fake.base_url, "--model", "m-2",
            "--api-key-stdin", input="sk-wrong-key-123456\n",
        )  # fmt: skip
        failed = gigi("llm", "key", "test", "--user", "u1", "--label", "bad")
        assert failed.exit_code == 1 and "FAILED (auth): bad" in failed.output
