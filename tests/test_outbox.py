"""``kernel.outbox``: plugins post through the surface serving a guild; a posted button runs
the plugin's own command as the member who pressed it, through the policy, until it expires."""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from gigi_core import Actor, InvalidArguments, PolicyDenied
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.default_plugins.console_outbox import ConsolePoster
from gigi_core.events import (
    Button,
    ButtonExpired,
    OutboundMessage,
    OutboxError,
    PostForbidden,
    PostUnavailable,
)
from gigi_core.store.outbox_tables import OutboxButton
from gigi_core.store.tables import utcnow
from gigi_core.testing import RecordingPoster, open_test_kernel
from tests.commands.plugins import CommandPlugin, action

ALICE = Actor(id="alice", is_admin=True)
BOB = Actor(id="bob")  # a plain member
GUILD = "g1"

TASK_ACTIONS = [
    action(
        "task.done",
        "task done",
        {"id": {"type": "string"}},
        required=["id"],
    ),
    action("task.wipe", "task wipe", capability="task.admin"),
]


@pytest.fixture
async def env(database_url: str, tmp_path: Path):
    plugin = CommandPlugin(tmp_path, "task", TASK_ACTIONS)
    other = CommandPlugin(tmp_path, "other", [action("other.go", "other go")])
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("task", plugin), ("other", other)],
        database_url=database_url,
    ) as kernel:
        await kernel.enable_plugin(GUILD, "task")
        poster = RecordingPoster()
        kernel.outbox.register("test", poster)
        yield kernel, plugin, poster


def nudge(*buttons: Button, channel: str = "c1", **extra: Any) -> OutboundMessage:
    return OutboundMessage(GUILD, channel, "Is task 7 done?", buttons=buttons, **extra)


async def test_a_button_runs_the_plugins_command_as_the_member_who_pressed(env) -> None:
    kernel, plugin, poster = env
    posted = await kernel.outbox.post(
        nudge(Button("Done", "task done", {"id": "t7"}, style="success")), plugin="task"
    )
    assert posted.channel_id == "c1" and poster.posts[0].text == "Is task 7 done?"
    reply = await poster.press(kernel, 0, 0, BOB)
    assert reply.status == "done", reply
    assert plugin.calls == [("task.done", {"id": "t7"})]


async def test_a_button_never_does_more_than_its_presser_may(env) -> None:
    kernel, plugin, poster = env
    await kernel.outbox.post(nudge(Button("Wipe", "task wipe")), plugin="task")
    with pytest.raises(PolicyDenied, match="you do not hold task.admin"):
        await poster.press(kernel, 0, 0, BOB)  # task.admin defaults to admins
    assert plugin.calls == []
    allowed = await poster.press(kernel, 0, 0, ALICE)
    assert allowed.status == "done" and plugin.calls == [("task.wipe", {})]


async def test_button_arguments_are_validated_against_the_commands_schema(env) -> None:
    kernel, plugin, poster = env
    await kernel.outbox.post(nudge(Button("Done", "task done", {"id": 7})), plugin="task")
    with pytest.raises(InvalidArguments, match="id"):
        await poster.press(kernel, 0, 0, BOB)
    assert plugin.calls == []


async def test_a_plugins_buttons_may_only_run_its_own_commands(env) -> None:
    kernel, _, poster = env
    with pytest.raises(OutboxError, match=r"buttons\[0\].command 'other go' belongs to plugin"):
        await kernel.outbox.post(nudge(Button("Go", "other go")), plugin="task")
    with pytest.raises(OutboxError, match=r"buttons\[1\].command 'task nope' is not a declared"):
        await kernel.outbox.post(
            nudge(Button("Done", "task done", {"id": "1"}), Button("?", "task nope")),
            plugin="task",
        )
    assert poster.posts == []


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (OutboundMessage(GUILD, "c1", "  "), "text is empty"),
        (nudge(*[Button("x", "task wipe")] * 6), "at most 5 buttons"),
        (nudge(Button("", "task wipe")), r"buttons\[0\].label must be 1 to 80"),
        (nudge(Button("x", "task wipe"), buttons_ttl_seconds=5), "buttons_ttl_seconds must be"),
    ],
)
async def test_bad_posts_are_refused_naming_the_field(env, message, words) -> None:
    kernel, _, poster = env
    with pytest.raises(OutboxError, match=words):
        await kernel.outbox.post(message, plugin="task")
    assert poster.posts == []


async def test_a_plugin_posts_only_where_it_is_enabled(env) -> None:
    kernel, _, poster = env
    with pytest.raises(PostForbidden, match="'other' is not enabled in guild g1"):
        await kernel.outbox.post(nudge(), plugin="other")
    assert poster.posts == []


async def test_no_surface_for_the_guild_is_unavailable_and_retried(env) -> None:
    kernel, _, poster = env
    poster.guilds = {"elsewhere"}
    assert not kernel.outbox.serves(GUILD)
    assert not await kernel.outbox.can_post(GUILD, "c1")
    with pytest.raises(PostUnavailable) as caught:
        await kernel.outbox.post(nudge(), plugin="task")
    assert getattr(caught.value, "retry_job", True) is True


async def test_a_channel_the_bot_may_not_post_in_fails_without_retries(env) -> None:
    kernel, _, poster = env
    poster.forbidden = {"c9"}
    assert await kernel.outbox.can_post(GUILD, "c1")
    assert not await kernel.outbox.can_post(GUILD, "c9")
    with pytest.raises(PostForbidden) as caught:
        await kernel.outbox.post(nudge(channel="c9"), plugin="task")
    assert caught.value.retry_job is False


async def test_buttons_expire_and_are_bound_to_their_guild(env) -> None:
    kernel, plugin, poster = env
    await kernel.outbox.post(nudge(Button("Done", "task done", {"id": "t1"})), plugin="task")
    token = poster.buttons[0][0].token
    with pytest.raises(ButtonExpired):
        await kernel.outbox.button(token, guild_id="another-guild")
    with pytest.raises(ButtonExpired):
        await kernel.outbox.button("no-such-token", guild_id=GUILD)
    async with kernel.db.session() as s:
        await s.execute(update(OutboxButton).values(expires_at=utcnow() - timedelta(seconds=1)))
    with pytest.raises(ButtonExpired, match="expired"):
        await poster.press(kernel, 0, 0, BOB)
    assert plugin.calls == []


async def test_expired_buttons_are_deleted_when_the_next_post_is_made(env) -> None:
    kernel, _, _ = env
    await kernel.outbox.post(nudge(Button("Done", "task done", {"id": "a"})), plugin="task")
    async with kernel.db.session() as s:
        await s.execute(update(OutboxButton).values(expires_at=utcnow() - timedelta(days=1)))
    await kernel.outbox.post(nudge(Button("Done", "task done", {"id": "b"})), plugin="task")
    async with kernel.db.session() as s:
        rows = (await s.execute(select(OutboxButton.arguments))).scalars().all()
    assert rows == [{"id": "b"}]


async def test_purging_a_guild_deletes_its_buttons(env) -> None:
    kernel, _, _ = env
    await kernel.outbox.post(nudge(Button("Done", "task done", {"id": "a"})), plugin="task")
    await kernel.privacy.purge_guild(GUILD)
    async with kernel.db.session() as s:
        assert (await s.execute(select(OutboxButton))).first() is None


async def test_the_console_prints_a_post_and_its_buttons_as_commands(tmp_path: Path) -> None:
    plugin = CommandPlugin(tmp_path, "task", TASK_ACTIONS)
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("task", plugin)]) as kernel:
        await kernel.enable_plugin("console", "task")
        out = io.StringIO()
        console = ConsoleSurface(kernel, stdin=io.StringIO(""), stdout=out, actor=ALICE)
        poster = ConsolePoster(console)
        kernel.outbox.register("console", poster)
        message = OutboundMessage(
            "console", "console", "Is it done?", (Button("Done", "task done", {"id": "t 7"}),)
        )
        await kernel.outbox.post(message, plugin="task")
        assert '[#console] Is it done?\n  [Done] /task done id="t 7"' in out.getvalue()
        assert not kernel.outbox.serves("g1")


async def test_the_console_serves_its_guild_only_while_it_runs(tmp_path: Path) -> None:
    async with open_test_kernel(tmp_path, plugins=[]) as kernel:
        seen: list[bool] = []
        console = ConsoleSurface(kernel, stdin=io.StringIO(""), stdout=io.StringIO())
        console.say = lambda text: seen.append(kernel.outbox.serves("console"))  # type: ignore[method-assign]
        await asyncio.wait_for(console.run(), 30)
        assert seen and all(seen)
        assert not kernel.outbox.serves("console")


async def test_member_comes_from_the_surface_serving_the_guild(env) -> None:
    kernel, _, poster = env
    poster.members = {"bob": (BOB, frozenset({"c1"}))}
    view = await kernel.outbox.member(GUILD, "bob")
    assert view is not None and view.actor is BOB
    assert await view.channel_visible("c1") and not await view.channel_visible("c2")
    assert await view.visible_channels() == frozenset({"c1"})
    assert await kernel.outbox.member(GUILD, "nobody") is None
    poster.guilds = {"elsewhere"}
    assert await kernel.outbox.member(GUILD, "bob") is None  # no surface here serves it


async def test_the_consoles_only_member_is_the_operator(tmp_path: Path) -> None:
    async with open_test_kernel(tmp_path, plugins=[]) as kernel:
        console = ConsoleSurface(kernel, stdin=io.StringIO(""), stdout=io.StringIO(), actor=ALICE)
        kernel.outbox.register("console", ConsolePoster(console))
        view = await kernel.outbox.member("console", "alice")
        assert view is not None and view.actor is ALICE
        assert await view.visible_channels() == frozenset({"console"})
        assert await kernel.outbox.member("console", "bob") is None
