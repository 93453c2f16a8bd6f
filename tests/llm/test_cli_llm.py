"""``gigi llm`` as operators use it: readable errors, exit codes, never the key."""

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
    """Invoke the CLI in-process on a fresh GIGI_HOME with gigi-openai and a sealing key."""
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "openai")
    monkeypatch.setenv("GIGI_SECRET_KEY", generate_key())
    monkeypatch.setenv("THE_KEY", GUILD_KEY)
    runner = CliRunner()
    seen: list[str] = []

    def invoke(*args: str, input: str | None = None):
        result = runner.invoke(cli, list(args), obj=CliState(), input=input)
        seen.append(result.output)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    yield invoke
    assert all(GUILD_KEY not in out for out in seen), "a command printed the key"


def test_providers_json(gigi) -> None:
    result = gigi("llm", "providers", "--json")
    assert result.exit_code == 0
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert set(rows) == {"openai", "openai-compatible", "openrouter"}
    assert rows["openai"]["supports"]["embeddings"] is True
    human = gigi("llm", "providers").output
    assert "openai-compatible" in human and "(set per credential)" in human


def test_credential_profile_test_usage_flow(gigi) -> None:
    with FakeOpenAI(api_key=GUILD_KEY) as fake:
        add = gigi(
            "llm", "credential", "add", "--owner", "guild:g1", "--provider", "openai-compatible",
            "--label", "main", "--base-url", fake.base_url, "--api-key-env", "THE_KEY",
        )  # fmt: skip
        assert add.exit_code == 0 and "Added credential main" in add.output
        stdin = gigi(
            "llm", "credential", "add", "--owner", "tenant", "--provider", "openai",
            "--label", "ops", "--api-key-stdin", input="sk-from-stdin-123456\n",
        )  # fmt: skip
        assert stdin.exit_code == 0

        listed = json.loads(gigi("llm", "credential", "list", "--json").output)
        assert [(c["owner"], c["label"], c["status"]) for c in listed] == [
            ("guild:g1", "main", "active"),
            ("tenant", "ops", "active"),
        ]
        assert "sk-from-stdin" not in json.dumps(listed)
        assert all(len(c["fingerprint_suffix"]) == 6 for c in listed)
        human = gigi("llm", "credential", "list", "--owner", "guild:g1").output
        assert "main" in human and "…" in human and "ops" not in human

        prof = gigi(
            "llm", "profile", "set", "--owner", "guild:g1", "--purpose", "chat",
            "--credential", "main", "--model", "m-1", "--fallback-model", "m-0",
        )  # fmt: skip
        assert prof.exit_code == 0 and "m-1, fallback m-0 via main" in prof.output
        [p] = json.loads(gigi("llm", "profile", "list", "--json").output)
        assert (p["owner"], p["purpose"], p["model"], p["fallback_model"]) == (
            "guild:g1",
            "chat",
            "m-1",
            "m-0",
        )

        fake.reply_text("OK")
        ok = gigi("llm", "credential", "test", "--owner", "guild:g1", "--label", "main")
        assert ok.exit_code == 0 and ok.output.startswith("OK: main")

        fake.api_key = "sk-rotated-at-provider"
        bad = gigi("llm", "credential", "test", "--owner", "guild:g1", "--label", "main")
        assert bad.exit_code == 1
        assert "FAILED (auth)" in bad.output and "Incorrect API key provided." in bad.output
        [main] = json.loads(
            gigi("llm", "credential", "list", "--owner", "guild:g1", "--json").output
        )
        assert (main["status"], main["last_test_status"]) == ("failing", "error")

    rows = json.loads(gigi("llm", "usage", "--guild", "g1", "--since", "7d", "--json").output)
    assert {(r["purpose"], r["status"], r["calls"]) for r in rows} == {
        ("test", "ok", 1),
        ("test", "error", 1),
    }
    assert "PURPOSE" in gigi("llm", "usage", "--guild", "g1").output
    # --owner guild:G as everywhere else in `gigi llm`; --guild stays as its alias.
    owner = gigi("llm", "usage", "--owner", "guild:g1", "--since", "7d", "--json")
    assert json.loads(owner.output) == rows
    tenant = gigi("llm", "usage", "--owner", "tenant")
    assert tenant.exit_code == 2 and "usage is kept per guild; give --owner guild:ID" in (
        tenant.output
    )
    neither = gigi("llm", "usage")
    assert neither.exit_code == 2 and "--owner guild:ID (or --guild ID)" in neither.output
    two = gigi("llm", "usage", "--owner", "guild:g1", "--guild", "g2")
    assert two.exit_code == 2 and "name two guilds" in two.output

    revoke = gigi("llm", "credential", "revoke", "--owner", "guild:g1", "--label", "main")
    assert revoke.exit_code == 0 and "chat profile(s) of guild:g1" in revoke.output
    assert (
        json.loads(gigi("llm", "credential", "list", "--owner", "guild:g1", "--json").output) == []
    )


def test_policy_set_and_show(gigi) -> None:
    out = gigi("llm", "policy", "set", "--guild", "g1", "--personal-keys", "dm-only")
    assert out.exit_code == 0 and "personal keys dm-only, tenant fallback off" in out.output
    gigi("llm", "policy", "set", "--guild", "g1", "--tenant-fallback")
    shown = json.loads(gigi("llm", "policy", "show", "--guild", "g1", "--json").output)
    policy = {k: shown[k] for k in ("guild_id", "personal_keys", "tenant_fallback")}
    assert policy == {"guild_id": "g1", "personal_keys": "dm-only", "tenant_fallback": True}
    bad = gigi("llm", "policy", "set", "--guild", "g1", "--personal-keys", "always")
    assert bad.exit_code == 2


def test_errors_are_readable_and_non_zero(gigi, monkeypatch) -> None:
    base = ["llm", "credential", "add", "--owner", "guild:g1", "--label", "main"]
    unknown = gigi(*base, "--provider", "acme", "--api-key-env", "THE_KEY")
    assert unknown.exit_code == 2
    assert "registered: openai, openai-compatible, openrouter" in unknown.output

    neither = gigi(*base, "--provider", "openai")
    assert neither.exit_code == 2 and "exactly one of --api-key-env" in neither.output
    unset = gigi(*base, "--provider", "openai", "--api-key-env", "NOT_SET_ANYWHERE")
    assert unset.exit_code == 2 and "NOT_SET_ANYWHERE is not set" in unset.output

    bad_owner = gigi(
        "llm", "credential", "add", "--owner", "server:1", "--provider", "openai",
        "--label", "x", "--api-key-env", "THE_KEY",
    )  # fmt: skip
    assert bad_owner.exit_code == 2 and "use tenant, guild:<guild id> or user:<user id>" in (
        bad_owner.output
    )
    bad_url = gigi(
        *base,
        "--provider",
        "openai-compatible",
        "--base-url",
        "ftp://x",
        "--api-key-env",
        "THE_KEY",
    )
    assert bad_url.exit_code == 2 and "invalid base URL" in bad_url.output

    monkeypatch.delenv("GIGI_SECRET_KEY")
    monkeypatch.setattr("gigi_core.store.sealing.is_embedded", lambda url: False)  # no key file
    no_key = gigi(*base, "--provider", "openai", "--api-key-env", "THE_KEY")
    assert no_key.exit_code == 1 and "GIGI_SECRET_KEY" in no_key.output
    assert json.loads(gigi("llm", "credential", "list", "--all", "--json").output) == []

    nothing = gigi("llm", "profile", "set", "--owner", "guild:g1", "--purpose", "chat",
                   "--credential", "main", "--model", "m")  # fmt: skip
    assert nothing.exit_code == 2 and "guild:g1 has no active credential labelled 'main'" in (
        nothing.output
    )
    since = gigi("llm", "usage", "--guild", "g1", "--since", "whenever")
    assert since.exit_code == 2 and "cannot read --since" in since.output


def test_credential_rotate_replaces_the_key_in_place(gigi, monkeypatch) -> None:
    with FakeOpenAI(api_key=GUILD_KEY) as fake:
        gigi(
            "llm", "credential", "add", "--owner", "guild:g1", "--provider", "openai-compatible",
            "--label", "main", "--base-url", fake.base_url, "--api-key-env", "THE_KEY",
        )  # fmt: skip
        [before] = json.loads(gigi("llm", "credential", "list", "--json").output)
        fake.api_key = "sk-the-new-key-7f3a9c"
        monkeypatch.setenv("NEW_KEY", fake.api_key)
        rotated = gigi(
            "llm", "credential", "rotate", "--owner", "guild:g1", "--label", "main",
            "--api-key-env", "NEW_KEY",
        )  # fmt: skip
        assert rotated.exit_code == 0 and "Rotated credential main" in rotated.output
        assert fake.api_key not in rotated.output
        [after] = json.loads(gigi("llm", "credential", "list", "--json").output)
        assert after["fingerprint_suffix"] != before["fingerprint_suffix"]
        fake.enqueue(fake.reply_text("pong"))
        ok = gigi(
            "llm", "credential", "test", "--owner", "guild:g1", "--label", "main",
            "--model", "gpt-test",
        )  # fmt: skip
        assert ok.exit_code == 0 and ok.output.startswith("OK: main"), ok.output
        missing = gigi("llm", "credential", "rotate", "--owner", "guild:g1", "--label", "nope",
                       "--api-key-env", "NEW_KEY")  # fmt: skip
        assert missing.exit_code != 0


def test_providers_table_says_which_need_a_key(gigi) -> None:
    human = gigi("llm", "providers").output
    assert "KEY" in human.upper() and "DEFAULTS" in human.upper()


def test_profile_remove_deletes_one_purpose_and_keeps_the_credential(gigi) -> None:
    add = gigi(
        "llm", "credential", "add", "--owner", "guild:g1", "--provider", "openai",
        "--label", "main", "--api-key-env", "THE_KEY",
    )  # fmt: skip
    assert add.exit_code == 0, add.output
    for purpose in ("chat", "routing"):
        gigi(
            "llm", "profile", "set", "--owner", "guild:g1", "--purpose", purpose,
            "--credential", "main", "--model", "m-1",
        )  # fmt: skip
    removed = gigi("llm", "profile", "remove", "--owner", "guild:g1", "--purpose", "routing")
    assert removed.exit_code == 0 and "Removed the routing profile of guild:g1." in removed.output
    left = json.loads(gigi("llm", "profile", "list", "--json").output)
    assert [(p["owner"], p["purpose"]) for p in left] == [("guild:g1", "chat")]
    assert len(json.loads(gigi("llm", "credential", "list", "--json").output)) == 1
    again = gigi("llm", "profile", "remove", "--owner", "guild:g1", "--purpose", "routing")
    assert again.exit_code == 0 and "has no routing profile; nothing changed" in again.output
