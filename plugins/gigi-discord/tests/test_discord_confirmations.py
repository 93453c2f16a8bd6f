"""Confirm / Reject buttons: who may press, exactly once, after a restart, cancel, expiry."""

from __future__ import annotations

from discord_test_helpers import race_clicks
from discord_world import make_bot, world

from gigi_core.testing.scripted import ScriptedModel, call, say

ADD = ("notes.add", {"text": "d"})
REFUSED = "Only the person who asked, or a server admin, can decide this."


def _buttons(message) -> list[dict]:
    return [c for row in message.components for c in row.to_dict()["components"]]


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


def _ephemeral(result) -> bool:
    return result.followups[-1].ephemeral if result.followups else result.response.ephemeral


async def _fresh(w, message):
    return await w.bot.get_channel(message.channel.id).fetch_message(message.id)


async def test_only_requester_or_admin_may_press(tmp_path) -> None:
    async with world(tmp_path, [call(ADD), say("Added it.")]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        assert "**Needs confirmation:**" in prompt.content
        ids = [b["custom_id"] for b in _buttons(prompt)]
        assert ids[0].startswith("gigi:c:y:conf_") and ids[1].startswith("gigi:c:n:conf_")
        assert all(len(i) <= 100 for i in ids)

        stranger = w.guild.add_member(w.env.create_user("eve"))
        for label in ("Confirm", "Reject"):
            refused = await stranger.click(prompt, label=label)
            assert refused.ephemeral and refused.response.content == REFUSED
        assert w.notes.ran == []

        done = await w.admin.click(prompt, label="Confirm")  # an admin may decide for others
        assert not done.ephemeral
        assert w.notes.ran == ["notes.add"]
        assert any(m.content.startswith("Added it.") for m in w.channel.history())
        fresh = await _fresh(w, prompt)
        assert all(b.get("disabled") for b in _buttons(fresh))
        assert f"Confirmed by <@{w.admin.id}>." in fresh.content


async def test_double_click_and_two_admins_execute_once(tmp_path) -> None:
    async with world(tmp_path, [call(ADD), say("Added it.")]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        confirm = _buttons(prompt)[0]["custom_id"]
        other_admin = w.guild.add_member(w.env.create_user("ann"), roles=[w.guild.roles["Mods"]])
        results = await race_clicks(
            w.env,
            prompt,
            [(w.member, confirm), (w.member, confirm), (w.admin, confirm), (other_admin, confirm)],
        )
        assert w.notes.ran == ["notes.add"]
        assert w.notes.notes.count("d") == 1
        answers = [m for m in w.channel.history() if m.content.startswith("Added it.")]
        assert len(answers) == 1
        losers = [r for r in results if _ephemeral(r)]
        assert len(losers) == 3
        assert all("already" in _text(r) for r in losers)
        assert all(b.get("disabled") for b in _buttons(await _fresh(w, prompt)))


async def test_button_still_works_after_the_bot_restarts(tmp_path) -> None:
    async with world(tmp_path, [call(ADD)]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        # A new process: new client, new runtime, nothing in memory but the database.
        fresh_model = ScriptedModel([say("Added after the restart.")])
        await w.env.restart_bot(make_bot(w.kernel, fresh_model))
        w.bot = w.env.bot
        result = await w.member.click(prompt, label="Confirm")
        assert not result.ephemeral
        assert w.notes.ran == ["notes.add"]
        assert any(m.content.startswith("Added after the restart.") for m in w.channel.history())
        assert all(b.get("disabled") for b in _buttons(await _fresh(w, prompt)))


async def test_reject_runs_nothing(tmp_path) -> None:
    async with world(tmp_path, [call(ADD), say("Okay, I did not add it.")]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        await w.member.click(prompt, label="Reject")
        assert w.notes.ran == []
        assert f"Rejected by <@{w.member.id}>." in (await _fresh(w, prompt)).content
        assert any(m.content.startswith("Okay, I did not add it.") for m in w.channel.history())


async def test_click_after_cancel_is_refused_and_disables_buttons(tmp_path) -> None:
    async with world(tmp_path, [call(ADD)]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        run_id = prompt.content.split("run `")[1].split("`")[0]
        cancelled = await w.member.slash(w.channel, "agent cancel", run=run_id)
        assert cancelled.ephemeral
        assert (
            cancelled.response.content == f"Cancelled run `{run_id}`; nothing more will run for it."
        )
        late = await w.member.click(prompt, label="Confirm")
        assert _ephemeral(late)
        assert _text(late) == f"Run `{run_id}` was cancelled, so this can no longer be decided."
        assert w.notes.ran == []
        assert all(b.get("disabled") for b in _buttons(await _fresh(w, prompt)))


async def test_buttons_are_disabled_at_expiry(tmp_path) -> None:
    async with world(tmp_path, [call(ADD)]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        await w.env.advance_time(15 * 60 + 1)
        fresh = await _fresh(w, prompt)
        assert all(b.get("disabled") for b in _buttons(fresh))
        assert "This confirmation expired." in fresh.content


async def test_agent_confirm_and_trace_commands(tmp_path) -> None:
    async with world(tmp_path, [call(ADD), say("Added it.")]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        run_id = prompt.content.split("run `")[1].split("`")[0]
        stranger = w.guild.add_member(w.env.create_user("eve"))
        nosy = await stranger.slash(w.channel, "agent trace", run=run_id)
        assert nosy.ephemeral and nosy.response.content.startswith("Only the person who started")
        done = await w.member.slash(w.channel, "agent confirm", run=run_id)
        assert w.notes.ran == ["notes.add"]
        assert "Added it." in _text(done)
        assert all(b.get("disabled") for b in _buttons(await _fresh(w, prompt)))
        trace = await w.member.slash(w.channel, "agent trace")
        assert trace.ephemeral
        assert trace.response.content.startswith(f"Run `{run_id}` (mention): **done**")
        assert "`notes.add`" in trace.response.content
        again = await w.member.slash(w.channel, "agent reject", run=run_id)
        assert again.ephemeral
        assert again.response.content == "This action was already confirmed (it never runs twice)."


async def test_button_of_a_plugin_disabled_since_is_refused(tmp_path) -> None:
    async with world(tmp_path, [call(ADD)]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        await w.kernel.disable_plugin(w.gid, "notes")
        refused = await w.member.click(prompt, label="Confirm")
        assert refused.ephemeral
        assert refused.response.content == (
            "notes is not enabled in this server any more, so this action cannot run."
        )
        assert w.notes.ran == []
