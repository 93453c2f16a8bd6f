"""`/llm models provider:` lists what one of this server's keys can call (from the provider's
models endpoint on the wire-level fake, cached); `/llm failover set|show|clear` names only
this server's keys; both are decided by the policy (issue 30)."""

from __future__ import annotations

from discord_world import world

from gigi_core.testing.fake_providers import FakeOpenAI

KEY = "sk-discord-models-0123456"


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


async def _show_llm_to_everyone(w) -> None:
    commands = await w.bot.tree.fetch_commands()
    [command] = [c for c in commands if c.name == "llm"]
    w.guild.set_command_permissions(command, {w.guild.default_role: True})


async def test_models_are_listed_cached_and_warned_about(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w, FakeOpenAI(api_key=KEY) as fake:
        owner = f"guild:{w.gid}"
        await w.kernel.llm.add_credential(
            owner, "openai-compatible", "main", KEY, base_url=fake.base_url
        )
        fake.models = ["m-large", "m-small"]
        listed = await w.admin.slash(w.channel, "llm models", provider="main")
        text = _text(listed)
        assert listed.ephemeral
        assert "**main** (openai-compatible) can call 2 models" in text
        assert "`m-large`" in text and "`m-small`" in text
        again = await w.admin.slash(w.channel, "llm models", provider="openai-compatible")
        assert "can call 2 models" in _text(again)
        assert len(fake.requests_to("models")) == 1  # the second answer was cached
        chosen = await w.admin.slash(
            w.channel, "llm profile set", purpose="chat", credential="main", model="m-huge"
        )
        assert "chat now uses m-huge" in _text(chosen)
        assert "Warning: 'm-huge' is not among the 2 models" in _text(chosen)
        assert "`/llm models provider:main`" in _text(chosen)
        unknown = await w.admin.slash(w.channel, "llm models", provider="nope")
        assert unknown.ephemeral and "its credentials: main" in _text(unknown)


async def test_failover_set_show_clear_and_who_may(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w:
        owner = f"guild:{w.gid}"
        for label in ("main", "spare"):
            await w.kernel.llm.add_credential(
                owner, "openai-compatible", label, KEY, base_url="http://127.0.0.1:9/v1"
            )
        await w.kernel.llm.add_credential(
            "guild:elsewhere", "openai-compatible", "theirs", KEY, base_url="http://127.0.0.1:9"
        )
        made = await w.admin.slash(
            w.channel, "llm failover set", purpose="chat", order="spare:m-small", on="rate_limited"
        )
        assert made.ephemeral
        assert "Failover for chat: the profile, then spare (openai-compatible, m-small)" in _text(
            made
        )
        foreign = await w.admin.slash(w.channel, "llm failover set", purpose="chat", order="theirs")
        assert "no active credential labelled 'theirs'" in _text(foreign)
        assert "its credentials: main, spare" in _text(foreign)
        shown = await w.admin.slash(w.channel, "llm failover show")
        assert "**chat**: the profile, then spare" in _text(shown)

        await _show_llm_to_everyone(w)
        refused = await w.member.slash(w.channel, "llm failover clear", purpose="chat")
        assert refused.ephemeral and "llm.provider.select" in _text(refused)
        looks = await w.member.slash(w.channel, "llm models", provider="main")
        assert "llm.provider" in _text(looks)
        await w.kernel.add_grant(w.gid, "llm.provider.select", "user", str(w.member.id))
        cleared = await w.member.slash(w.channel, "llm failover clear", purpose="chat")
        assert "Removed the chat failover list" in _text(cleared)
        assert await w.kernel.llm.failover(owner) == []
