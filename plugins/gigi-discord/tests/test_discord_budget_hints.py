"""A plugin's own model call refused by a budget (issue 28): the member reads which budget
and when it resets, and the admin's way out in Discord's terms (`/llm budget set`), never
the CLI's `gigi llm budget …`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from discord_world import world
from gigi_discord.errors import sentence

from gigi_core import GigiError, ToolExecutionError, hookimpl
from gigi_core.llm import ChatRequest
from gigi_core.testing.fake_providers import FakeOpenAI

SUMUP = """\
manifest_version: 1
plugin:
  name: sumup
  version: 0.0.1
  description: Asks the server's model directly, for the tests.
  data_statement: Nothing is kept.
  capabilities:
    - {name: sumup.use, description: Ask the model, default: everyone}
actions:
  - name: sumup.ask
    command: sumup ask
    description: One model call of the plugin's own.
    safety: read_only
    capability: sumup.use
    visibility: public
    args: {type: object, properties: {}, additionalProperties: false}
"""


class Sumup:
    """Calls ``kernel.llm`` itself, as a plugin may (not through the agent), and passes a
    refusal's sentence on to the member (a plain exception would read "failed")."""

    name = "sumup"

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "sumup.yaml"
        self.path.write_text(SUMUP)

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("sumup.ask", self.ask)

    async def ask(self, ctx: Any) -> dict[str, Any]:
        request = ChatRequest(
            model="m-1",
            messages=[{"role": "user", "content": "sum it up"}],  # type: ignore[list-item]
            max_output_tokens=50,
        )
        try:
            reply = await ctx.kernel.llm.chat(
                request, guild_id=ctx.guild_id, actor=ctx.actor, channel_id=ctx.channel_id
            )
        except GigiError as exc:
            raise ToolExecutionError(str(exc)) from None
        return {"message": reply.text}


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


async def test_a_plugin_call_refused_by_a_budget_names_the_slash_commands(tmp_path) -> None:
    async with (
        FakeOpenAI() as fake,
        world(tmp_path, plugins=["openai"], extra=[("sumup", Sumup(tmp_path))]) as w,
    ):
        owner = f"guild:{w.gid}"
        await w.kernel.llm.add_credential(
            owner, "openai-compatible", "main", "sk-budget-0123456789", base_url=fake.base_url
        )
        await w.kernel.llm.set_profile(owner, "chat", "main", "m-1")
        await w.kernel.enable_plugin(w.gid, "sumup")
        await w.kernel.llm.set_budget(w.gid, "member", "*", limit=5)  # smaller than one call
        small = _text(await w.member.slash(w.channel, "sumup ask"))
        assert "per-member daily budget of 5 tokens is smaller than this one call" in small
        assert "gigi llm" not in small and "--" not in small
        assert "raise it (`/llm budget set` with each member, window daily, limit N)" in small

        await w.kernel.llm.set_budget(w.gid, "member", "*", limit=100_000)
        await w.kernel.llm.set_budget(w.gid, "channel", str(w.channel.id), limit=500)
        fake.reply_text("ok", usage={"prompt_tokens": 479, "completion_tokens": 1})
        assert _text(await w.member.slash(w.channel, "sumup ask")) == "ok"
        spent = _text(await w.member.slash(w.channel, "sumup ask"))
        assert f"channel {w.channel.id} daily budget of 500 tokens is spent" in spent, spent
        assert "gigi llm" not in spent and "--" not in spent
        assert (
            f"(`/llm budget set` or `/llm budget reset` with channel <#{w.channel.id}>, "
            "window daily)" in spent
        )
        assert len(fake.requests_to("chat")) == 1


@pytest.mark.parametrize(
    ("hint", "discord"),
    [
        (
            "raise it (`gigi llm budget set --guild 1 --role 7 --window weekly --limit N`)",
            "Raise it (`/llm budget set` with role <@&7>, window weekly, limit N)",
        ),
        (
            "or reset it (`gigi llm budget set|reset --guild 1 --model openai/gpt-4o "
            "--window monthly`)",
            "Or reset it (`/llm budget set` or `/llm budget reset` with model "
            "`openai/gpt-4o`, window monthly)",
        ),
        (
            "raise it (`gigi llm budget set --guild 1 --member 5 --window daily --limit N`)",
            "Raise it (`/llm budget set` with member <@5>, window daily, limit N)",
        ),
        (
            "see `gigi llm budget show --guild 1`",
            "See `/llm budget show`",
        ),
    ],
)
def test_budget_hints_are_put_in_slash_command_terms(hint: str, discord: str) -> None:
    assert sentence(hint) == discord
