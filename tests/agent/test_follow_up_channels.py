"""A follow-up re-sends the asker's earlier tool results only when the channels each one read
still pass the asker's checks now: a member who lost a channel does not get its text again
(issue 28), just as context items are checked again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say
from tests.agent.test_confirmed_channels import Spy, lists, sees

MEMBER = Actor(id="member")


@pytest.fixture
async def env(database_url, tmp_path):
    spy = Spy(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("spy", spy)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "spy")
        yield kernel, spy


def ask(text: str, readable: tuple[str, ...], follows: str | None = None, **kw: Any) -> Request:
    fields: dict[str, Any] = {
        "actor": MEMBER,
        "guild_id": "g1",
        "channel_id": "general",
        "kind": "mention",
        "text": text,
        "channel_visible": sees(*readable),
        "visible_channels": lists(*readable),
        "follows_run": follows,
        "context": None,
        **kw,
    }
    return Request(**fields)


def carried(model: ScriptedModel, index: int) -> str:
    """The earlier turns a model request carried (between the system and the new turn)."""
    return json.dumps([m.model_dump(mode="json") for m in model.requests[index].messages[1:-1]])


async def first_run(kernel: Any) -> tuple[AgentRuntime, ScriptedModel, str]:
    model = ScriptedModel(
        [
            call(("spy__look", {"channel": "dev"}), ("spy__look", {})),
            say("ANSWER-1"),
            say("ok"),
        ]
    )
    runtime = AgentRuntime(kernel, model=model)
    first = await runtime.handle(ask("what is new?", ("general", "dev")))
    assert first.status == "done"
    return runtime, model, first.run_id


async def test_a_channel_the_asker_lost_is_not_sent_again(env) -> None:
    kernel, spy = env
    runtime, model, run_id = await first_run(kernel)
    assert spy.read == ["dev", "general"]
    await runtime.handle(ask("and?", ("general",), follows=run_id))  # #dev was taken away
    sent = carried(model, 2)
    assert "what is new?" in sent and "ANSWER-1" in sent
    assert "the messages of general" in sent  # the run's own channel: still readable
    assert "the messages of dev" not in sent


async def test_a_channel_still_readable_is_sent_again(env) -> None:
    kernel, _ = env
    runtime, model, run_id = await first_run(kernel)
    await runtime.handle(ask("and?", ("general", "dev"), follows=run_id))
    sent = carried(model, 2)
    assert "the messages of dev" in sent and "the messages of general" in sent


async def test_an_audience_that_cannot_read_it_does_not_get_it(env) -> None:
    """The asker still reads #dev, but the follow-up's answer is shown where not everyone
    does (the surface narrows its list to that audience): the result stays out."""
    kernel, _ = env
    runtime, model, run_id = await first_run(kernel)
    follow = ask("and?", ("general", "dev"), follows=run_id, visible_channels=lists("general"))
    await runtime.handle(follow)
    assert "the messages of dev" not in carried(model, 2)


async def test_a_surface_without_a_check_gets_only_the_runs_own_channel(env) -> None:
    kernel, _ = env
    runtime, model, run_id = await first_run(kernel)
    follow = ask("and?", ("general",), follows=run_id, channel_visible=None)
    await runtime.handle(follow)
    sent = carried(model, 2)
    assert "the messages of general" in sent and "the messages of dev" not in sent
