"""`/llm` is decided by the policy: llm.provider.write|select|test and llm.usage.read each
allow what they name to a member granted them, Manage Server (a guild admin) holds them all,
and a member holding none is refused; the grant works once the owner shows the command."""

from __future__ import annotations

from discord_world import world

KEY = "sk-capability-test-0123"


async def _show_llm_to_everyone(w) -> None:
    """Discord hides /llm from non-admins; the owner can show it in Integrations."""
    commands = await w.bot.tree.fetch_commands()
    [command] = [c for c in commands if c.name == "llm"]
    w.guild.set_command_permissions(command, {w.guild.default_role: True})


async def _setup(w) -> str:
    owner = f"guild:{w.gid}"
    await w.kernel.llm.add_credential(
        owner, "openai-compatible", "main", KEY, base_url="http://127.0.0.1:9/v1"
    )
    await _show_llm_to_everyone(w)
    return owner


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


async def test_select_grant_sets_profiles_but_cannot_revoke_keys(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w:
        owner = await _setup(w)
        refused = await w.member.slash(w.channel, "llm profile list")
        assert refused.ephemeral and "llm.provider.select" in _text(refused)

        await w.kernel.add_grant(w.gid, "llm.provider.select", "user", str(w.member.id))
        done = await w.member.slash(
            w.channel, "llm profile set", purpose="chat", credential="main", model="m-1"
        )
        assert "chat now uses m-1" in _text(done)
        [profile] = await w.kernel.llm.list_profiles(owner)
        assert profile.model == "m-1"
        listed = await w.member.slash(w.channel, "llm credential list")
        assert "**main**" in _text(listed)

        revoke = await w.member.slash(w.channel, "llm credential revoke", label="main")
        assert revoke.ephemeral and "llm.provider.write" in _text(revoke)
        assert [c.label for c in await w.kernel.llm.list_credentials(owner)] == ["main"]
        usage = await w.member.slash(w.channel, "llm usage")
        assert "llm.usage.read" in _text(usage)


async def test_write_grant_revokes_keys_but_cannot_choose_models(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_LLM_LOCAL_URLS", "1")  # the key's base URL is on loopback
    async with world(tmp_path, plugins=["openai"]) as w:
        owner = await _setup(w)
        await w.kernel.add_grant(w.gid, "llm.provider.write", "user", str(w.member.id))
        chosen = await w.member.slash(
            w.channel, "llm profile set", purpose="chat", credential="main", model="m-1"
        )
        assert chosen.ephemeral and "llm.provider.select" in _text(chosen)
        assert await w.kernel.llm.list_profiles(owner) == []

        form = await w.member.slash(
            w.channel,
            "llm credential add",
            provider="openai-compatible",
            label="second",
            base_url="http://127.0.0.1:9/v1",
        )
        assert form.modal is not None
        saved = await w.member.submit_modal(form, {"gigi:llm:key": KEY + "-2"})
        assert "Saved the key **second**" in _text(saved)

        revoke = await w.member.slash(w.channel, "llm credential revoke", label="main")
        assert "Revoked **main**" in _text(revoke)
        assert [c.label for c in await w.kernel.llm.list_credentials(owner)] == ["second"]


async def test_admins_hold_every_llm_capability_and_members_none(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w:
        await _setup(w)
        for command in ("llm credential list", "llm profile list", "llm usage"):
            refused = await w.member.slash(w.channel, command)
            assert refused.ephemeral and "can grant it" in _text(refused)
            allowed = await w.admin.slash(w.channel, command)
            assert "grant it" not in _text(allowed)


async def test_profile_set_takes_prices_and_a_budget_fallback_model(tmp_path) -> None:
    """Prices let money budgets count the profile's calls; the budget fallback model answers
    once a budget is spent; a lone price is refused naming both options."""
    async with world(tmp_path, plugins=["openai"]) as w:
        owner = await _setup(w)
        await w.kernel.add_grant(w.gid, "llm.provider.select", "user", str(w.member.id))
        done = await w.member.slash(
            w.channel,
            "llm profile set",
            purpose="chat",
            credential="main",
            model="m-1",
            budget_fallback_model="m-mini",
            input_price=2.5,
            output_price=10.0,
            currency="EUR",
        )
        text = _text(done)
        assert "m-mini once a budget is spent" in text
        assert "priced 2.5 / 10 EUR per million input / output tokens" in text
        [profile] = await w.kernel.llm.list_profiles(owner)
        assert (profile.input_price, profile.output_price, profile.currency) == (2.5, 10.0, "EUR")
        lone = await w.member.slash(
            w.channel, "llm profile set", purpose="chat", credential="main", model="m-1",
            input_price=1.0,
        )  # fmt: skip
        assert "input_price and output_price" in _text(lone)
