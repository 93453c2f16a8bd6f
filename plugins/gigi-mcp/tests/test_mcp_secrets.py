"""Sealed server secrets: `gigi mcp add --secret` seals them, a session opens them, and the
value appears nowhere else (CLI output, log records, every table, every file)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from mcp_helpers import bridge_kernel, call, new_secret_key, python_server

from gigi_core.testing import open_test_kernel


def _cli() -> click.Group:
    from gigi_mcp.cli import add_commands

    @click.group()
    def root() -> None:
        pass

    add_commands(root)
    return root


async def _every_row(kernel: Any) -> dict[str, list[str]]:
    """Each table of the store, every row as text: where a leaked value would show."""
    from sqlalchemy import MetaData, select

    def dump(conn: Any) -> dict[str, list[str]]:
        meta = MetaData()
        meta.reflect(conn)
        return {
            t.name: [repr(tuple(r)) for r in conn.execute(select(t))] for t in meta.tables.values()
        }

    async with kernel.db.engine.connect() as conn:
        return await conn.run_sync(dump)


def test_sealed_secrets_reach_the_child_and_nowhere_else(
    home: Path, tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    from_env, from_stdin = f"canary-{secrets.token_hex(8)}", f"canary-{secrets.token_hex(8)}"
    key = new_secret_key()
    monkeypatch.setenv("GIGI_SECRET_KEY", key)
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "mcp")
    monkeypatch.setenv("HOSTILE_EVIDENCE", str(tmp_path / "evidence"))
    monkeypatch.setenv("TOKEN_SOURCE", from_env)
    outputs: list[str] = []

    def run(*args: str, input: str | None = None, ok: bool = True) -> click.testing.Result:
        result = CliRunner().invoke(_cli(), list(args), input=input, catch_exceptions=False)
        outputs.append(result.output)
        assert (result.exit_code == 0) is ok, result.output
        return result

    on_cli = ("--secret-env", f"API_TOKEN={from_env}")  # a value where a name belongs
    assert "expected KEY=ENVVAR" in run("mcp", "add", "x", "--stdio", "y", *on_cli, ok=False).output
    added = run(
        "mcp", "add", "hostile", "--stdio", python_server("hostile.py"),
        "--env", "HOSTILE_DIR=HOSTILE_EVIDENCE", "--secret-env", "API_TOKEN=TOKEN_SOURCE",
        "--secret", "PASSPHRASE", "--json", input=f"{from_stdin}\n",
    )  # fmt: skip
    prints = json.loads(added.output)["secrets"]
    assert set(prints) == {"API_TOKEN", "PASSPHRASE"} and all(prints.values())
    server = json.loads((home / "servers.json").read_text())["servers"]["hostile"]
    assert (
        sorted(server["secrets"]) == ["API_TOKEN", "PASSPHRASE"]
        and "API_TOKEN" not in server["env"]
    )
    listed = json.loads(run("mcp", "list", "--json").output)[0]
    assert listed["secrets"] == prints
    assert (
        f"secret API_TOKEN: sealed, fingerprint {prints['API_TOKEN']}" in run("mcp", "list").output
    )
    run("mcp", "approve", "hostile", "--yes")
    monkeypatch.delenv("TOKEN_SOURCE")  # sealed now: the variable is not needed any more

    async def use() -> None:
        async with bridge_kernel(tmp_path, database_url, "hostile", secret_key=key) as kernel:
            for var, value in (("API_TOKEN", from_env), ("PASSPHRASE", from_stdin)):
                got = (await call(kernel, "mcp_hostile.env_sha256", {"name": var}))["result"]
                assert got == hashlib.sha256(value.encode()).hexdigest()
            names = (await call(kernel, "mcp_hostile.env_names", {}))["result"]
            assert {"API_TOKEN", "PASSPHRASE", "HOSTILE_DIR"} <= set(names)
            rows = await _every_row(kernel)
            assert any("hostile:API_TOKEN" in r for r in rows["sealed_secrets"])
            assert any("mcp_hostile.env_sha256" in r for r in rows["audit_events"])
            for table, texts in rows.items():
                for text in texts:
                    assert from_env not in text and from_stdin not in text, table

    asyncio.run(use())
    removed = json.loads(run("mcp", "remove", "hostile", "--json").output)
    assert removed == {"removed": "hostile", "secrets_removed": ["API_TOKEN", "PASSPHRASE"]}

    async def left() -> dict[str, str]:
        async with open_test_kernel(
            tmp_path, plugins=["mcp"], database_url=database_url, secret_key=key
        ) as k:
            return await k.plugin_secrets("mcp").fingerprints()

    assert asyncio.run(left()) == {}
    leaks = [o for o in outputs if from_env in o or from_stdin in o]
    leaks += [r.getMessage() for r in caplog.records if from_env in f"{r.getMessage()}{r.args}"]
    leaks += [r.getMessage() for r in caplog.records if from_stdin in f"{r.getMessage()}{r.args}"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if from_env.encode() in data or from_stdin.encode() in data:
                leaks.append(str(path))
    assert leaks == []


def test_a_missing_sealed_secret_fails_the_start_and_names_the_key(
    home: Path, tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIGI_SECRET_KEY", new_secret_key())
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "mcp")
    runner = CliRunner()
    empty = runner.invoke(_cli(), ["mcp", "add", "s", "--stdio", "x", "--secret", "K"], input="\n")
    assert empty.exit_code != 0 and "the secret K is empty" in empty.output
    assert not (home / "servers.json").exists()  # nothing written for a refused add
    hostile = python_server("hostile.py")
    added = runner.invoke(
        _cli(),
        ["mcp", "add", "s", "--stdio", hostile, "--secret", "K", "--no-connect"],
        input="v\n",
    )
    assert added.exit_code == 0, added.output

    async def drop() -> None:
        async with open_test_kernel(tmp_path, plugins=["mcp"], database_url=database_url) as k:
            assert await k.plugin_secrets("mcp").delete("s:K")  # lost, e.g. a restored backup

    asyncio.run(drop())
    failed = runner.invoke(_cli(), ["mcp", "refresh", "s"])
    assert failed.exit_code != 0 and "the sealed secret K is not in the store" in failed.output
