"""Manifest-declared commands as slash commands: rendering, invocation through the policy,
confirmations, files, the native /gigi channel and privacy commands, and command sync."""

from __future__ import annotations

import json

import discord
import pytest
import simcord
from discord_watch_plugin import Watch, WatchAdmin
from discord_world import make_bot, world

from gigi_core.surfaces import CommandSpec, CommandTable
from gigi_core.testing.scripted import say

T = discord.AppCommandOptionType


async def _command(w, name: str):
    [command] = [c for c in await w.bot.tree.fetch_commands() if c.name == name]
    return command


def _sub(command, *path: str):
    node = command
    for word in path:
        [node] = [o for o in node.options if o.name == word]
    return node


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


def _puts(w) -> int:
    return sum(1 for r in w.env.http_requests if r.method == "PUT" and r.path.endswith("/commands"))


def _extra(tmp_path):
    watch, wadmin = Watch(tmp_path), WatchAdmin(tmp_path)
    return watch, wadmin, [("watch", watch), ("wadmin", wadmin)]


async def test_a_plugin_gets_its_own_root_with_typed_options(tmp_path) -> None:
    watch, wadmin, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        root = await _command(w, "watch")
        assert root.description == "Watches messages for the tests."
        assert root.default_member_permissions is None  # /watch count is for everyone
        assert root.dm_permission is False  # guild only
        enable = _sub(root, "enable")
        opts = {o.name: o for o in enable.options}
        assert enable.options[0].name == "channel" and opts["channel"].required
        assert opts["channel"].type is T.channel
        assert discord.ChannelType.text in opts["channel"].channel_types
        assert discord.ChannelType.public_thread in opts["channel"].channel_types
        assert discord.ChannelType.category not in opts["channel"].channel_types
        days = opts["retention_days"]
        assert (days.type, days.min_value, days.max_value, days.required) == (
            T.integer,
            1,
            365,
            False,
        )
        assert days.description == "Days to keep"
        assert [(c.name, c.value) for c in opts["mode"].choices] == [
            ("all", "all"),
            ("mentions", "mentions"),
        ]
        assert (opts["ratio"].type, opts["ratio"].min_value, opts["ratio"].max_value) == (
            T.number,
            1,
            5,
        )
        assert opts["loud"].type is T.boolean
        assert (opts["who"].type, opts["team"].type) == (T.user, T.role)
        assert (opts["label"].type, opts["label"].min_length, opts["label"].max_length) == (
            T.string,
            2,
            20,
        )
        assert _sub(root, "note", "add").options[0].name == "text"

        single = await _command(w, "wadmin")  # one command, admins only: hidden
        assert single.default_member_permissions == discord.Permissions(manage_guild=True)
        assert [c.value for c in single.options[0].choices] == [1, 2, 3]
        assert "wadmin" not in w.member.available_commands(w.channel)
        assert "wadmin" in w.admin.available_commands(w.channel)

        gigi = await _command(w, "gigi")
        assert {o.name for o in gigi.options} >= {"plugins", "grants", "channel", "privacy"}
        assert _sub(gigi, "channel", "pause").options[0].type is T.channel


async def test_invocation_runs_the_action_through_the_policy(tmp_path) -> None:
    watch, wadmin, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        team = w.guild.roles["Mods"]
        done = await w.admin.slash(
            w.channel,
            "watch enable",
            channel=w.channel,
            retention_days=30,
            mode="mentions",
            ratio=2.5,
            loud=True,
            who=w.member,
            team=team,
        )
        assert done.ephemeral  # an admin command's answer
        assert _text(done) == f"Watching <#{w.channel.id}>."
        [(action, args)] = watch.calls
        assert action == "watch.enable"
        assert args == {
            "channel": str(w.channel.id),
            "retention_days": 30,
            "mode": "mentions",
            "ratio": 2.5,
            "loud": True,
            "who": str(w.member.id),
            "team": str(team.id),
        }
        with pytest.raises(simcord.OptionError):  # Discord itself refuses out-of-range values
            await w.admin.slash(w.channel, "watch enable", channel=w.channel, retention_days=0)

        refused = await w.member.slash(w.channel, "watch enable", channel=w.channel)
        assert refused.ephemeral
        assert _text(refused) == (
            "You cannot use `/watch enable` here: you do not hold watch.admin; a server admin "
            "can grant it with `/gigi grants add capability:watch.admin`"
        )
        assert len(watch.calls) == 1

        counted = await w.member.slash(w.channel, "watch count")  # visibility: public
        assert not counted.ephemeral
        assert _text(counted) == '`watch.count` → {"count": 0}'


async def test_a_command_of_a_disabled_plugin_is_refused_in_a_sentence(tmp_path) -> None:
    watch, wadmin, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        refused = await w.member.slash(w.channel, "watch count")  # a public command
        assert refused.ephemeral  # but its refusal is not
        assert _text(refused) == (
            "The **watch** plugin is not enabled in this server, so `/watch count` does "
            "nothing here. A server admin can turn it on with `/gigi plugins enable "
            "plugin:watch`."
        )
        assert watch.calls == []


async def test_a_write_command_asks_with_buttons_and_runs_once(tmp_path) -> None:
    watch, wadmin, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        asked = await w.member.slash(w.channel, "watch note add", text="buy milk")
        assert asked.ephemeral and "**Needs confirmation:**" in _text(asked)
        assert watch.calls == []
        prompt = asked.followups[-1] if asked.followups else asked.response
        done = await w.member.click(prompt, label="Confirm")
        assert watch.calls == [("watch.note", {"text": "buy milk"})]
        [result] = done.followups
        assert result.ephemeral and result.content == "Noted: buy milk"
        closed = done.response or prompt
        buttons = [c for row in closed.components for c in row["components"]]
        assert buttons and all(b.get("disabled") for b in buttons)
        with pytest.raises(simcord.SetupError, match="disabled"):  # no second click
            await w.member.click(prompt, label="Confirm")
        assert len(watch.calls) == 1


async def test_a_file_result_is_attached(tmp_path) -> None:
    watch, wadmin, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        result = await w.member.slash(w.channel, "watch dump")
        message = result.followups[-1] if result.followups else result.response
        [attachment] = message.attachments
        assert attachment.filename == "watch_dump.json"
        assert json.loads(await attachment.read()) == {"events": 0, "who": str(w.member.id)}


async def test_channel_commands_need_the_capability(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        other = w.guild.create_text_channel("random")
        done = await w.admin.slash(w.channel, "gigi channel secure", channel=other)
        assert done.ephemeral and _text(done).startswith("Secured: no plugin sees messages in")
        assert await w.kernel.channels.get(w.gid, str(other.id)) == "secure"
        status = await w.admin.slash(w.channel, "gigi channel status", channel=other)
        assert _text(status).startswith(f"<#{other.id}> is secure.")
        refused = await w.member.slash(w.channel, "gigi channel resume", channel=other)
        assert refused.ephemeral
        assert _text(refused).startswith(
            "You cannot use `/gigi channel resume` here: you do not hold gigi.channel.manage"
        )
        assert await w.kernel.channels.get(w.gid, str(other.id)) == "secure"


async def test_privacy_info_export_and_delete(tmp_path) -> None:
    watch, wadmin, extra = _extra(tmp_path)
    async with world(tmp_path, [say("hi")], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        await w.mention(w.member, "hello")  # a run: data the kernel holds about bob

        info = await w.member.slash(w.channel, "gigi privacy info")
        assert info.ephemeral
        assert "**watch**: Keeps message ids in memory for the test." in _text(info)
        assert "**notes**: Keeps notes in memory for the test." in _text(info)

        exported = await w.member.slash(w.channel, "gigi privacy export")
        assert exported.ephemeral
        assert "I sent you your data by direct message" in _text(exported)
        dm = w.member.user.dm_channel
        [sent] = [m for m in dm.history() if m.author.id == w.bot.user.id]
        [file] = sent.attachments
        assert file.filename == f"gigi-data-{w.gid}-{w.member.id}.json"
        data = json.loads(await file.read())
        assert data["user_id"] == str(w.member.id) and data["guild_id"] == w.gid

        w.env.inject_error("POST", f"/channels/{dm.id}/messages", status=403, code=50007)
        fallback = await w.member.slash(w.channel, "gigi privacy export")
        message = fallback.followups[-1] if fallback.followups else fallback.response
        assert message.ephemeral and "I could not send you a direct message" in message.content
        assert [a.filename for a in message.attachments] == [file.filename]

        asked = await w.member.slash(w.channel, "gigi privacy delete")
        assert asked.ephemeral and "**Needs confirmation:**" in _text(asked)
        prompt = asked.followups[-1] if asked.followups else asked.response
        stranger = w.guild.add_member(w.env.create_user("eve"))
        with pytest.raises(simcord.SetupError, match="not visible"):  # only bob sees it
            await stranger.click(prompt, label="Confirm")
        done = await w.member.click(prompt, label="Confirm")
        [result] = done.followups
        assert result.ephemeral
        # The kernel's deletion also removes this very run (reported to the lead), which
        # makes the runtime add "This run was cancelled." before the counts.
        assert "Deleted " in result.content and "- **Gigi**: " in result.content
        assert "agent runs" in result.content


async def test_sync_is_skipped_when_nothing_changed(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        assert _puts(w) == 1
        stored = (w.kernel.settings.home / "discord-commands.sha256").read_text()
        assert stored.strip().endswith(f"  {w.bot.application_id}")

        await w.env.restart_bot(make_bot(w.kernel, None))
        w.bot = w.env.bot
        assert _puts(w) == 1  # same commands: nothing sent

        table = w.kernel.commands
        spec = CommandSpec(
            words=("extra", "hello"),
            action="notes.count",
            plugin="notes",
            capability="notes.use",
            description="Count notes.",
            options=(),
            admin_default=False,
            ephemeral=True,
        )
        changed = CommandTable(
            commands={**table.commands, spec.words: spec}, roots={**table.roots, "extra": "notes"}
        )
        w.kernel.__dict__["commands"] = changed  # as if a plugin upgrade added a command
        await w.env.restart_bot(make_bot(w.kernel, None))
        w.bot = w.env.bot
        assert _puts(w) == 2
        await w.kernel.enable_plugin(w.gid, "notes")
        result = await w.member.slash(w.channel, "extra hello")
        assert _text(result) == '`notes.count` → {"count": 3}'


def test_results_read_as_sentences_listings_and_files() -> None:
    from gigi_discord.results import present

    from gigi_core.surfaces import Citation, Reply

    nothing = {"kernel": {}, "plugins": {}, "total": 0, "message": "Nothing was deleted."}
    reply = Reply(
        text="",
        citations=[
            Citation("gigi.privacy.info", {"guild_id": "1", "plugins": []}),
            Citation("gigi.privacy.delete", nothing),
            Citation("gigi.privacy.export", {"file": "me.json", "data": {"a": 1}}),
            Citation("x.do", {"file": "../../etc/passwd", "data": [1]}),
            Citation("x.say", {"message": "Done."}),
            Citation("x.raw", {"n": 2}),
        ],
    )
    shown = present(reply)
    assert shown.reply.text.split("\n\n") == [
        "No plugin is enabled in this server, so Gigi keeps nothing about you here.",
        "Nothing was deleted.",
        "Done.",
    ]
    assert [c.tool for c in shown.reply.citations] == ["x.raw"]
    assert shown.dm_files == [("me.json", b'{\n  "a": 1\n}')]
    assert [name for name, _ in shown.files] == ["_.._etc_passwd.json"]


async def test_agent_confirm_of_a_private_command_answers_privately(tmp_path) -> None:
    watch, wadmin, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        asked = await w.member.slash(w.channel, "watch note add", text="call mum")
        run_id = _text(asked).split("run `")[1].split("`")[0]
        done = await w.member.slash(w.channel, "agent confirm", run=run_id)
        assert watch.calls == [("watch.note", {"text": "call mum"})]
        assert done.ephemeral and _text(done) == "Noted: call mum"
        others = w.channel.history(viewer=w.admin)
        assert not any("call mum" in m.content for m in others)
