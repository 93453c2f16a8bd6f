"""``gigi knowledge COMMAND``: the same actions from a shell (SQLite, the CLI's own kernel)."""

from __future__ import annotations

import asyncio
import json
import pathlib

import click
import gigi_knowledge
import pytest
from click.testing import CliRunner

from gigi_core import Kernel


def test_the_commands_run_from_a_shell(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "knowledge")

    async def setup() -> None:
        k = await Kernel.open(None, tmp_path)
        try:
            await k.enable_plugin("g1", "knowledge")
        finally:
            await k.close()

    monkeypatch.setenv("GIGI_HOME", str(tmp_path))
    asyncio.run(setup())

    @click.group()
    @click.pass_context
    def root(ctx: click.Context) -> None:
        ctx.obj = type("S", (), {"database_url": None, "home": tmp_path})()

    gigi_knowledge.register_commands(root)
    runner = CliRunner()
    denied = runner.invoke(
        root, ["knowledge", "enable", "--guild", "g1", "--channel", "c1", "channel=c1"]
    )
    assert denied.exit_code == 1 and "knowledge.manage" in denied.output
    done = runner.invoke(
        root, ["knowledge", "enable", "--guild", "g1", "--channel", "c1", "--admin", "channel=c1"]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["knowledge"] == "on"
    listed = runner.invoke(
        root,
        ["knowledge", "decisions", "--guild", "g1", "--channel", "c1", "status=all", "limit=5"],
    )
    assert json.loads(listed.output)["decisions"] == []
    bad = runner.invoke(root, ["knowledge", "decisions", "--guild", "g1", "limit"])
    assert bad.exit_code == 2 and "name=value" in bad.output
