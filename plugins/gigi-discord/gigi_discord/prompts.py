"""Where confirmation prompts were posted, so a restarted bot can refresh their buttons.

A prompt's buttons are disabled when someone decides, when the run is cancelled and when
the confirmation expires, by the process that posted it. A process that stops forgets its
expiry timers, and a run decided elsewhere meanwhile (``gigi agent confirm``, the console,
another shard) leaves live-looking buttons behind. So each public prompt is written down
(``<GIGI_HOME>/discord-prompts/<confirmation id>``: ``<channel id> <message id>``) until it
is closed, and at start-up the bot looks at every one: closed or expired ones get their
buttons disabled with the reason, pending ones get their expiry timer back.

The store holds no Discord message ids (the kernel is surface-independent), and a file per
prompt needs no locking between processes that share ``GIGI_HOME``.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import discord

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot

log = logging.getLogger(__name__)
FOLDER = "discord-prompts"
_ID = re.compile(r"^[A-Za-z0-9_]{1,80}$")  # what a button's custom_id may carry


class PromptBook:
    """The prompts this ``GIGI_HOME`` has posted and not closed yet; None: keep nothing."""

    def __init__(self, home: Path | None) -> None:
        self.folder = Path(home) / FOLDER if home is not None else None

    def remember(self, confirmation_id: str, channel_id: int, message_id: int) -> None:
        if self.folder is None or not _ID.match(confirmation_id):
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / confirmation_id).write_text(f"{channel_id} {message_id}\n")
        except OSError as exc:  # the buttons still work; only the start-up refresh is lost
            log.warning("could not record prompt %s in %s: %s", confirmation_id, self.folder, exc)

    def forget(self, confirmation_id: str) -> None:
        if self.folder is None or not _ID.match(confirmation_id):
            return
        try:
            (self.folder / confirmation_id).unlink(missing_ok=True)
        except OSError as exc:
            log.info("could not forget prompt %s: %s", confirmation_id, exc)

    def entries(self) -> list[tuple[str, int, int]]:
        """(confirmation id, channel id, message id) of every recorded prompt."""
        if self.folder is None or not self.folder.is_dir():
            return []
        found = []
        for path in sorted(self.folder.iterdir()):
            try:
                channel, message = (int(x) for x in path.read_text().split())
            except (OSError, ValueError):
                self.forget(path.name)  # unreadable: nothing to refresh from it
                continue
            if _ID.match(path.name):
                found.append((path.name, channel, message))
        return found


def aware(moment: datetime) -> datetime:
    """SQLite returns naive datetimes; the kernel stores UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


async def refresh_prompts(bot: GigiBot) -> int:
    """At start-up: close the recorded prompts that can no longer be decided, and start the
    expiry timer of those still pending. Returns how many were closed."""
    from gigi_core import GigiError
    from gigi_discord.confirm import close_message, closed_text, expire_at

    closed = 0
    for confirmation_id, channel_id, message_id in bot.prompts.entries():
        try:
            row = await bot.runtime.confirmations.get(confirmation_id)
            run = await bot.runtime.runs.get(row.run_id)
        except GigiError:  # purged or never committed: nothing to decide any more
            bot.prompts.forget(confirmation_id)
            continue
        partial = bot.get_partial_messageable(channel_id).get_partial_message(message_id)
        try:
            message = await partial.fetch()
        except discord.NotFound:
            bot.prompts.forget(confirmation_id)
            continue
        except discord.HTTPException as exc:  # try again at the next start
            log.info("could not fetch prompt message %s: %s", message_id, exc)
            continue
        if run.status == "awaiting_confirmation" and row.state == "pending":
            bot.prompt_messages[confirmation_id] = message
            bot.spawn(expire_at(bot, message, confirmation_id, aware(row.expires_at)))
            continue
        await close_message(message, confirmation_id, f"*{closed_text(row, run)}*")
        bot.forget_prompt(confirmation_id)
        closed += 1
    if closed:
        log.info("disabled the buttons of %d confirmation prompt(s) closed while away", closed)
    return closed


__all__ = ["PromptBook", "refresh_prompts"]
