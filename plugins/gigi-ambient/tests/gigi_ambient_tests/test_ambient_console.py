"""With ambient on in the console's channel, a console line is answered once: by the agent
the console sends it to. The line reaches ambient as addressed to Gigi (a mention), so
ambient keeps it as history and leaves the answer to the surface."""

from __future__ import annotations

import asyncio
import io

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, envelope
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.testing.scripted import ScriptedModel, say


async def test_a_console_line_gets_one_answer_with_ambient_on(world) -> None:
    world.fake.reply_text(envelope(answer="ambient's answer", answer_needed=True))
    model = ScriptedModel([say("the agent's answer")])
    out = io.StringIO()
    console = ConsoleSurface(
        world.kernel,
        runtime=AgentRuntime(world.kernel, model=model),
        stdin=io.StringIO("hello there\n"),
        stdout=out,
    )
    console.guild_id, console.channel_id = GUILD, HERE  # the channel ambient answers in
    await asyncio.wait_for(console.run(), 30)
    await world.settle()
    text = out.getvalue()
    assert text.count("the agent's answer") == 1
    assert "ambient's answer" not in text and world.poster.posts == []
    assert world.fake.requests == []  # ambient made no model call for it
    assert [e.text for e in world.svc.history(GUILD).entries] == ["hello there"]
