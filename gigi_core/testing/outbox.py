"""A poster for tests: records what plugins post through ``kernel.outbox`` and presses their
buttons the way a surface does (as a member, through the policy)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from gigi_core.agent.contracts import Reply, Request
from gigi_core.events import (
    MemberView,
    OutboundMessage,
    PostedButton,
    PostedMessage,
    PostForbidden,
)
from gigi_core.policy.actor import Actor

_ids = itertools.count(1)


@dataclass
class RecordingPoster:
    """Register with ``kernel.outbox.register("test", poster)``; ``posts`` is what was posted.

    ``guilds`` limits which guilds it serves (all when empty); ``forbidden`` lists channel
    ids it refuses, as a surface does where the bot lacks Send Messages. ``members`` maps
    a user id to (their actor, the channel ids they may read) for ``kernel.outbox.member``;
    ``public`` lists the channels everyone may read: an answer ``shown_in`` a channel lists
    only those and that channel, as a surface narrows it to the audience.
    """

    guilds: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)
    posts: list[OutboundMessage] = field(default_factory=list)
    buttons: list[tuple[PostedButton, ...]] = field(default_factory=list)
    members: dict[str, tuple[Actor, frozenset[str]]] = field(default_factory=dict)
    public: frozenset[str] = frozenset()

    def serves(self, guild_id: str) -> bool:
        return not self.guilds or guild_id in self.guilds

    async def can_post(self, guild_id: str, channel_id: str) -> bool:
        return channel_id not in self.forbidden

    async def post(
        self, message: OutboundMessage, buttons: tuple[PostedButton, ...]
    ) -> PostedMessage:
        if message.channel_id in self.forbidden:
            raise PostForbidden(f"the bot may not post in channel {message.channel_id}")
        self.posts.append(message)
        self.buttons.append(buttons)
        return PostedMessage(str(next(_ids)), message.channel_id)

    async def member(
        self, guild_id: str, user_id: str, *, shown_in: str | None = None
    ) -> MemberView | None:
        if user_id not in self.members:
            return None
        actor, readable = self.members[user_id]
        listed = readable if shown_in is None else readable & (self.public | {shown_in})

        async def visible(channel_id: str) -> bool:
            return channel_id in readable

        async def lister() -> frozenset[str] | None:
            return listed

        return MemberView(actor, visible, lister)

    async def press(self, kernel: Any, post: int, button: int, actor: Actor) -> Reply:
        """Press button ``button`` of post ``post`` as ``actor``: the command runs as they
        would run it (``ButtonExpired`` when it is past its time)."""
        message = self.posts[post]
        target = await kernel.outbox.button(
            self.buttons[post][button].token, guild_id=message.guild_id
        )
        request = Request(
            actor=actor,
            guild_id=message.guild_id,
            channel_id=message.channel_id,
            kind="slash",
            text="",
        )
        return await kernel.agent.direct(request, target.spec.action, target.arguments)
