"""``kernel.outbox``: a plugin posts a message (a nudge, an alert, an answer) through the
surface serving the guild, with buttons that run the plugin's own commands.

A button stores only a token, the command's name and its arguments; pressing it runs the
command as the member who pressed, through the same path as typing it (policy, capability,
argument schema, audit). So a posted button can never grant what the command would not.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete

from gigi_core.events import (
    ButtonExpired,
    MemberView,
    OutboundMessage,
    OutboxError,
    PostedButton,
    PostedMessage,
    Poster,
    PostForbidden,
    PostUnavailable,
)
from gigi_core.jobs.models import aware
from gigi_core.store.outbox_tables import OutboxButton
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from gigi_core.commands import CommandSpec
    from gigi_core.kernel import Kernel

MAX_BUTTONS = 5  # one row on Discord
MAX_LABEL = 80  # Discord's button label limit
MAX_TTL_SECONDS = 90 * 86400


@dataclass(frozen=True)
class ButtonTarget:
    """What a pressed button runs: a command of ``plugin`` in ``guild_id``."""

    guild_id: str
    plugin: str
    spec: CommandSpec
    arguments: dict[str, Any]


class Outbox:
    """The posters of the surfaces running in this process, asked in registration order."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._posters: dict[str, Poster] = {}

    def register(self, surface: str, poster: Poster) -> Callable[[], None]:
        """Called by a surface once it is connected; the returned function unregisters."""
        self._posters[surface] = poster

        def unregister() -> None:
            if self._posters.get(surface) is poster:
                del self._posters[surface]

        return unregister

    def serves(self, guild_id: str) -> bool:
        return self._poster(guild_id) is not None

    async def can_post(self, guild_id: str, channel_id: str) -> bool:
        poster = self._poster(guild_id)
        return poster is not None and await poster.can_post(guild_id, channel_id)

    async def member(
        self, guild_id: str, user_id: str, *, shown_in: str | None = None
    ) -> MemberView | None:
        """The member's actor (roles, admin flag) and what they may read now, from the
        surface serving the guild; None when no surface here serves it or they are gone."""
        poster = self._poster(guild_id)
        return None if poster is None else await poster.member(guild_id, user_id, shown_in=shown_in)

    async def post(self, message: OutboundMessage, *, plugin: str) -> PostedMessage:
        """Post ``message`` for ``plugin``, which must be enabled in the guild.

        Raises ``PostUnavailable`` when no surface here serves the guild (a job retries),
        ``PostForbidden`` when the plugin is off there or the bot may not post in the channel,
        ``OutboxError`` for buttons that name no command of the plugin.
        """
        specs = [self._command(plugin, b.command, i) for i, b in enumerate(message.buttons)]
        self._check_shape(message)
        poster = self._poster(message.guild_id)
        if poster is None:
            raise PostUnavailable(
                f"no surface connected to guild {message.guild_id} runs in this process",
                hint="the job is retried; run it where the bot runs (`gigi run`)",
            )
        if plugin not in await self._kernel.plugin_state.enabled_plugins(message.guild_id):
            raise PostForbidden(f"plugin {plugin!r} is not enabled in guild {message.guild_id}")
        buttons = await self._store_buttons(message, plugin, specs)
        return await poster.post(message, buttons)

    async def button(self, token: str, *, guild_id: str) -> ButtonTarget:
        """The command a pressed button runs; ``ButtonExpired`` when past its time, unknown,
        from another guild, or its command is gone (the plugin was uninstalled)."""
        async with self._kernel.db.session() as s:
            row = await s.get(OutboxButton, token)
        now = utcnow()
        if row is None or row.guild_id != guild_id or aware(row.expires_at) <= now:
            raise ButtonExpired(
                "this button has expired", hint="run the command it stood for instead"
            )
        spec, rest = self._kernel.commands.find(row.command.split())
        if spec is None or rest or spec.plugin != row.plugin:
            raise ButtonExpired(
                f"this button's command `/{row.command}` no longer exists",
                hint="the plugin that posted it was removed or changed",
            )
        return ButtonTarget(row.guild_id, row.plugin, spec, dict(row.arguments))

    # -- internals ----------------------------------------------------------------------

    def _poster(self, guild_id: str) -> Poster | None:
        return next((p for p in self._posters.values() if p.serves(guild_id)), None)

    def _command(self, plugin: str, command: str, index: int) -> CommandSpec:
        spec, rest = self._kernel.commands.find(command.split())
        if spec is None or rest:
            raise OutboxError(
                f"buttons[{index}].command {command!r} is not a declared command",
                hint="name a command from your manifest's `commands:` by its full words",
            )
        if spec.plugin != plugin:
            raise OutboxError(
                f"buttons[{index}].command {command!r} belongs to plugin {spec.plugin!r}, "
                f"not {plugin!r}",
                hint="a plugin's buttons may only run its own commands",
            )
        return spec

    @staticmethod
    def _check_shape(message: OutboundMessage) -> None:
        if not message.text.strip():
            raise OutboxError("the message text is empty")
        if len(message.buttons) > MAX_BUTTONS:
            raise OutboxError(f"at most {MAX_BUTTONS} buttons, not {len(message.buttons)}")
        for i, b in enumerate(message.buttons):
            if not 1 <= len(b.label) <= MAX_LABEL:
                raise OutboxError(f"buttons[{i}].label must be 1 to {MAX_LABEL} characters")
        if message.buttons and not 60 <= message.buttons_ttl_seconds <= MAX_TTL_SECONDS:
            raise OutboxError(
                f"buttons_ttl_seconds must be between 60 and {MAX_TTL_SECONDS}, "
                f"not {message.buttons_ttl_seconds}"
            )

    async def _store_buttons(
        self, message: OutboundMessage, plugin: str, specs: list[CommandSpec]
    ) -> tuple[PostedButton, ...]:
        if not message.buttons:
            return ()
        now = utcnow()
        expires = now + timedelta(seconds=message.buttons_ttl_seconds)
        posted = tuple(PostedButton(secrets.token_urlsafe(16), b) for b in message.buttons)
        async with self._kernel.db.session() as s:
            await s.execute(delete(OutboxButton).where(OutboxButton.expires_at <= now))
            s.add_all(
                OutboxButton(
                    token=p.token,
                    guild_id=message.guild_id,
                    plugin=plugin,
                    command=spec.text,
                    arguments=dict(p.button.arguments),
                    created_at=now,
                    expires_at=expires,
                )
                for p, spec in zip(posted, specs, strict=True)
            )
        return posted
