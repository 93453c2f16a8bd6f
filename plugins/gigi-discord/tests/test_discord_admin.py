"""Admin roots: Manage Server required at runtime, plugins and grants, the credential modal."""

from __future__ import annotations

import logging

import pytest
from discord_test_helpers import leaks
from discord_world import world
from gigi_discord.errors import describe
from gigi_discord.redact import ModalRedactor

KEY = "sk-discord-CANARY-4e8b1d7f2a"


async def _allow_everyone(w, name: str) -> None:
    """A server owner can re-enable a hidden command for everyone in Integrations."""
    commands = await w.bot.tree.fetch_commands()
    [command] = [c for c in commands if c.name == name]
    w.guild.set_command_permissions(command, {w.guild.default_role: True})


async def test_admin_enables_a_plugin_and_a_non_admin_is_refused(tmp_path) -> None:
    async with world(tmp_path, enable=False) as w:
        # /gigi holds the members' own privacy commands, so Discord cannot hide it from them
        # (default permissions apply to whole roots); the admin subcommands refuse at runtime.
        assert "gigi privacy export" in w.member.available_commands(w.channel)
        assert "gigi plugins enable" in w.admin.available_commands(w.channel)
        # /llm likewise holds every member's own keys (`/llm key`); its admin leaves refuse
        # at run time (test_discord_llm_capabilities, test_discord_llm_key).
        assert "llm key add" in w.member.available_commands(w.channel)
        early = await w.member.slash(w.channel, "gigi plugins enable", plugin="notes")
        assert early.ephemeral
        assert early.response.content == "Only server admins (Manage Server) can use this command."

        result = await w.admin.slash(w.channel, "gigi plugins enable", plugin="notes")
        assert result.ephemeral
        assert result.response.content == "Enabled **notes** in this server."
        assert "notes" in await w.kernel.plugin_state.enabled_plugins(w.gid)

        # Even when the owner shows the command to everyone, the runtime check refuses.
        await _allow_everyone(w, "gigi")
        refused = await w.member.slash(w.channel, "gigi plugins disable", plugin="notes")
        assert refused.ephemeral
        assert (
            refused.response.content == "Only server admins (Manage Server) can use this command."
        )
        assert "notes" in await w.kernel.plugin_state.enabled_plugins(w.gid)

        listing = await w.admin.slash(w.channel, "gigi plugins list")
        assert "**notes** 0.0.1 — on" in listing.response.content

        shown = await w.admin.slash(
            w.channel, "gigi plugins config", plugin="notes", replace='{"prefix": "n-"}'
        )
        assert shown.ephemeral and '`prefix` = `"n-"`' in shown.response.content
        bad = await w.admin.slash(
            w.channel, "gigi plugins config", plugin="notes", replace='{"nope": 1}'
        )
        assert bad.ephemeral and bad.response.content.startswith("Invalid config for notes")
        unknown = await w.admin.slash(w.channel, "gigi plugins enable", plugin="nothing")
        assert unknown.ephemeral
        assert unknown.response.content.startswith("No loaded plugin is named 'nothing'")

        off = await w.admin.slash(w.channel, "gigi plugins disable", plugin="notes")
        assert off.response.content == "Disabled **notes** in this server; its settings are kept."


async def test_grants_add_list_remove(tmp_path) -> None:
    async with world(tmp_path) as w:
        added = await w.admin.slash(
            w.channel, "gigi grants add", capability="notes.use", user=w.member
        )
        assert added.ephemeral and added.response.content.startswith("Granted `notes.use` to")
        listed = await w.admin.slash(w.channel, "gigi grants list")
        assert f"`notes.use` → <@{w.member.id}>" in listed.response.content
        both = await w.admin.slash(w.channel, "gigi grants add", capability="notes.use")
        assert both.response.content == "Give exactly one of `user` or `role`."
        removed = await w.admin.slash(
            w.channel, "gigi grants remove", capability="notes.use", user=w.member
        )
        assert removed.response.content.startswith("Removed `notes.use`")
        unknown = await w.admin.slash(
            w.channel, "gigi grants add", capability="nope.x", user=w.member
        )
        assert unknown.response.content.startswith("Unknown capability 'nope.x'")


async def test_modal_adds_a_credential_and_the_key_is_nowhere(
    tmp_path, caplog, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_LLM_LOCAL_URLS", "1")  # the key's base URL is on loopback
    caplog.set_level(logging.DEBUG)
    async with world(tmp_path, plugins=["openai"]) as w:
        shown = await w.admin.slash(
            w.channel,
            "llm credential add",
            provider="openai-compatible",
            label="main",
            base_url="http://127.0.0.1:9/v1",
        )
        assert shown.modal is not None
        assert KEY not in repr(shown.modal)
        [field] = [c for row in shown.modal["components"] for c in row["components"]]
        assert not field.get("value")  # never pre-filled

        done = await w.admin.submit_modal(shown, {"gigi:llm:key": KEY})
        assert done.ephemeral
        [cred] = await w.kernel.llm.list_credentials(f"guild:{w.gid}")
        assert done.response.content == (
            f"Saved the key **main** for openai-compatible (fingerprint …{cred.fingerprint_suffix})."
            " Next, choose a model with `/llm profile set`."
        )
        listed = await w.admin.slash(w.channel, "llm credential list")
        assert f"**main** — openai-compatible, fingerprint …{cred.fingerprint_suffix}" in (
            listed.response.content
        )
        again = await w.admin.slash(
            w.channel,
            "llm credential add",
            provider="openai-compatible",
            label="main",
            base_url="http://127.0.0.1:9/v1",
        )
        assert again.modal is None and "already has a key labelled **main**" in (
            again.response.content
        )

        assert await leaks(w.kernel, KEY) == []
        assert all(KEY not in repr(r.json) for r in w.env.http_requests)
        assert KEY not in "\n".join(m.content for m in w.channel.history())
        assert KEY not in repr(done.response.message)
    assert KEY not in caplog.text


def test_gateway_debug_log_of_a_modal_is_redacted(caplog) -> None:
    logger = logging.getLogger("discord.gateway")
    logger.addFilter(ModalRedactor())
    caplog.set_level(logging.DEBUG, logger="discord.gateway")
    event = {
        "op": 0,
        "t": "INTERACTION_CREATE",
        "d": {"type": 5, "data": {"components": [{"value": KEY}]}},
    }
    logger.debug("For Shard ID %s: WebSocket Event: %s", 0, event)
    logger.debug("For Shard ID %s: WebSocket Event: %s", 0, {"op": 0, "t": "X", "d": {"a": 1}})
    assert KEY not in caplog.text
    assert "redacted" in caplog.text and "'a': 1" in caplog.text


def test_gateway_debug_log_of_admin_command_options_is_redacted(caplog) -> None:
    """`/gigi plugins config replace:` can carry plugin secrets in its options."""
    logger = logging.getLogger("discord.gateway")
    logger.addFilter(ModalRedactor())
    caplog.set_level(logging.DEBUG, logger="discord.gateway")
    options = [{"name": "replace", "value": '{"api_token": "' + KEY + '"}'}]
    event = {
        "op": 0,
        "t": "INTERACTION_CREATE",
        "d": {"type": 2, "data": {"name": "gigi", "options": options}},
    }
    logger.debug("For Shard ID %s: WebSocket Event: %s", 0, event)
    ask = {
        "op": 0,
        "t": "INTERACTION_CREATE",
        "d": {"type": 2, "data": {"name": "ask", "options": []}},
    }
    logger.debug("For Shard ID %s: WebSocket Event: %s", 0, ask)
    assert KEY not in caplog.text and "'name': 'ask'" in caplog.text


async def test_credential_add_problems_are_explained_before_the_modal(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w:
        no_url = await w.admin.slash(
            w.channel, "llm credential add", provider="openai-compatible", label="main"
        )
        assert no_url.modal is None and no_url.ephemeral
        assert no_url.response.content == (
            "openai-compatible needs the `base_url` option (the API's base URL)."
        )
        nope = await w.admin.slash(w.channel, "llm credential add", provider="nope", label="x")
        assert nope.modal is None and nope.ephemeral
        assert nope.response.content.startswith("No provider is registered as 'nope'")


@pytest.mark.parametrize("error", [RuntimeError("secret internal detail")])
def test_unexpected_errors_are_not_shown(error) -> None:
    assert describe(error) == "Something went wrong on Gigi's side; it was logged for the operator."


async def test_a_whole_bot_plugin_is_not_offered_per_server(tmp_path) -> None:
    """The web dashboard's manifest says per_server: false."""
    async with world(tmp_path, enable=False, plugins=["web"]) as w:
        assert "web" in w.kernel.registry.manifests
        listing = await w.admin.slash(w.channel, "gigi plugins list")
        assert "**notes** 0.0.1 — off" in listing.response.content
        assert "**web**" not in listing.response.content
        refused = await w.admin.slash(w.channel, "gigi plugins enable", plugin="web")
        assert refused.ephemeral and "serves the whole bot" in refused.response.content
        assert "web" not in await w.kernel.plugin_state.enabled_plugins(w.gid)
