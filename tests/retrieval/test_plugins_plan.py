"""``plugins.plan``: enabled actions matching a goal, with the capability each needs and the
asker's own decision; nothing runs. ``gigi retrieve`` from a shell."""

from __future__ import annotations

import json

from click.testing import CliRunner

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.cli.common import CliState
from gigi_core.cli.main import cli
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox


async def plan(kernel, goal: str, actor: Actor, guild: str = "g1") -> dict:
    request = Request(actor=actor, guild_id=guild, channel_id="c1", kind="mention", text="")
    reply = await kernel.agent.direct(request, "plugins.plan", {"goal": goal})
    assert reply.status == "done", reply
    return reply.citations[0].result


async def test_plugins_plan_matches_enabled_actions_and_runs_nothing(
    database_url, tmp_path
) -> None:
    toolbox = Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=["dice"], extra_plugins=[("box", toolbox)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "dice")
        result = await plan(kernel, "roll some dice for me", Actor("u1"))
        assert result["ran"] is False
        [first, *_] = result["matches"]
        assert first["action"] == "dice.roll" and first["capability"] == "dice.use"
        assert first["decision"] == "allow" and first["safety"] == "read_only"
        usage = await plan(kernel, "llm usage spending", Actor("u1"))
        top = usage["matches"][0]
        assert top["action"] == "llm.usage.guild" and top["allowed"] is False
        assert "llm.usage.read" in top["reason"]
        boss = await plan(kernel, "llm usage spending", Actor("boss", is_admin=True))
        assert boss["matches"][0]["allowed"] is True
        other = await plan(kernel, "roll some dice", Actor("u1"), guild="g2")  # dice is off
        assert "dice.roll" not in [m["action"] for m in other["matches"]]


def test_gigi_retrieve_from_a_shell(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOME", str(tmp_path))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")
    runner = CliRunner()
    args = ["retrieve", "what can you do with plugins?", "--guild", "g1", "--user", "u1"]
    result = runner.invoke(cli, [*args, "--json"], obj=CliState())
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["trace"]["sources"] == ["catalog"]
    assert "catalog:action:plugins.plan" in data["trace"]["kept"]
    text = runner.invoke(cli, [*args, "--channel", "c1", "--mode", "memory"], obj=CliState())
    assert text.exit_code == 0, text.output
    assert "sources: memory" in text.output and "(empty pack)" in text.output
    bad = runner.invoke(cli, [*args, "--mode", "everything"], obj=CliState())
    assert bad.exit_code == 2 and "everything" in bad.output
