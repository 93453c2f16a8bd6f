"""The console's ``kernel.outbox`` poster: a plugin's post is printed, and each button is
shown as the command line that does what pressing it would (typed by the operator, it runs
through the same policy as any command)."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

from gigi_core.events import MemberView, OutboundMessage, PostedButton, PostedMessage


class ConsolePoster:
    def __init__(self, surface: Any) -> None:
        self.surface = surface
        self._ids = itertools.count(1)

    def serves(self, guild_id: str) -> bool:
        return guild_id == self.surface.guild_id

    async def can_post(self, guild_id: str, channel_id: str) -> bool:
        return self.serves(guild_id)

    async def post(
        self, message: OutboundMessage, buttons: tuple[PostedButton, ...]
    ) -> PostedMessage:
        lines = [f"[#{message.channel_id}] {message.text}"]
        lines += [f"  [file] {path}" for path in self._save(message)]
        lines += [f"  [{b.button.label}] /{command_line(b)}" for b in buttons]
        self.surface.say("\n".join(lines))
        return PostedMessage(f"console-post-{next(self._ids)}", message.channel_id)

    def _save(self, message: OutboundMessage) -> list[Path]:
        """A terminal shows no pictures: each file is saved under GIGI_HOME/outbox."""
        if not message.files:
            return []
        folder = Path(self.surface.kernel.settings.home) / "outbox"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        paths = []
        for f in message.files:
            path = folder / f"{stamp}-{next(self._ids)}-{f.name}"
            path.write_bytes(f.data)
            paths.append(path)
        return paths

    async def member(
        self, guild_id: str, user_id: str, *, shown_in: str | None = None
    ) -> MemberView | None:
        """The operator is the console's only member."""
        actor = self.surface.actor
        if not self.serves(guild_id) or user_id != actor.id:
            return None
        return MemberView(actor, _only_console, _console_channels)


async def _only_console(channel_id: str) -> bool:
    return channel_id == "console"


async def _console_channels() -> frozenset[str] | None:
    return frozenset({"console"})


def command_line(button: PostedButton) -> str:
    """``knowledge action done id=act_1``: the console's ``key=value`` words for a button."""
    words = [button.button.command]
    for key, value in button.button.arguments.items():
        text = value if isinstance(value, str) and value and " " not in value else json.dumps(value)
        words.append(f"{key}={text}")
    return " ".join(words)
