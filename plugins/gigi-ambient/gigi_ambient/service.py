"""The plugin's state in one kernel: enabled channels, histories, per-channel workers, counters.

``observe`` is the cheap gate run for every event (it never calls a model); messages that
pass are queued to their channel's worker, which answers them one at a time so a slow
model never holds the kernel's event delivery.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from gigi_ambient.attempts import AmbientError, Backoff
from gigi_ambient.budget import Budget, BudgetReached
from gigi_ambient.envelope import Delivery
from gigi_ambient.history import Entry, History
from gigi_ambient.persist import HistoryStore
from gigi_ambient.post import MayMove, OutboxPoster, Poster, surface_may_move
from gigi_ambient.responder import Responder, Settings, entry_of, short_path_match
from gigi_ambient.store import AmbientStore, today

log = logging.getLogger(__name__)
KEY = "gigi_ambient"
QUEUE = 32  # messages waiting per channel; past it a message is archived unanswered
CHANNELS_SECONDS = 30.0  # how stale another process's /ambient enable may be here
ANSWERED = 200  # the persona's own message ids kept per channel, to see replies to them
EXPIRE_SECONDS = 60.0  # how often a server's stored history is cut to its retention


# Memory's gate, mirrored (plugins are independent): never a DM, a group DM or a private
# thread, whatever channel id an admin enabled; never a bot's or a webhook's message.
SKIPPED_KINDS = ("dm", "group_dm", "private_thread")


def answerable(event: Any) -> bool:
    """A member's message in a guild channel the persona may follow (not Gigi, a bot or
    a webhook, not a DM or a private thread)."""
    return not (
        event.author_is_self
        or event.author_is_bot
        or event.author_is_webhook
        or event.channel_kind in SKIPPED_KINDS
    )


def service_of(kernel: Any) -> AmbientService:
    svc = kernel.__dict__.get(KEY)
    if svc is None:
        svc = kernel.__dict__[KEY] = AmbientService(kernel)
    return svc  # type: ignore[no-any-return]


class AmbientService:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.store = AmbientStore(kernel.db.engine)
        self.stored = HistoryStore(kernel.db.engine, lambda: kernel.state_sealer)
        self.responder = Responder(self)
        self.backoff = Backoff()
        self.budget = Budget(kernel, self.store, lambda: self.clock())
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        self.poster: Poster = OutboxPoster(kernel)
        self.may_move: MayMove = surface_may_move(kernel)
        self.runtime: Any = None  # the agent runtime; None: the kernel's own
        self._channels: dict[str, dict[str, str]] = {}
        self._read_at: dict[str, float] = {}
        self._histories: dict[str, History] = {}
        self._answered: dict[str, deque[str]] = {}
        self._queues: dict[tuple[str, str], asyncio.Queue[Any]] = {}
        self._workers: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._pending: dict[tuple[str, str], dict[str, int]] = {}
        self._persisted: dict[str, dict[str, Entry]] = {}  # guild -> what its rows hold
        self._loaded: set[str] = set()
        self._cleared: set[str] = set()  # persist_history off and its rows deleted
        self._retention: dict[tuple[str, str], tuple[float, int | None]] = {}
        self._expired_at: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._parents: dict[tuple[str, str], str] = {}  # (guild, thread) -> parent channel

    # -- facts ---------------------------------------------------------------------------

    def history(self, guild_id: str) -> History:
        return self._histories.setdefault(guild_id, History())

    def answered(self, channel_id: str) -> deque[str]:
        return self._answered.setdefault(channel_id, deque(maxlen=ANSWERED))

    async def channels(self, guild_id: str) -> dict[str, str]:
        """Enabled channels -> persona; re-read every ``CHANNELS_SECONDS`` so a change made
        by another process on the same database applies here too."""
        now = time.monotonic()
        found = self._channels.get(guild_id)
        if found is None or now - self._read_at.get(guild_id, 0.0) > CHANNELS_SECONDS:
            found = self._channels[guild_id] = await self.store.channels_of(guild_id)
            self._read_at[guild_id] = now
        return found

    def _quiet(self, guild_id: str, channel_id: str, states: Any) -> bool:
        """Paused or secure, itself or (a thread) through its parent channel."""
        parent = self._parents.get((guild_id, channel_id))
        return channel_id in states or (parent is not None and parent in states)

    async def observed(self, guild_id: str, channel_id: str) -> bool:
        """Whether the channel is observed now: a message queued before it (or a thread's
        parent) was paused or secured is then neither answered nor posted to."""
        return not self._quiet(guild_id, channel_id, await self.kernel.channels.states(guild_id))

    async def settings(self, guild_id: str) -> Settings:
        return Settings.from_config(await self.kernel.plugin_config(guild_id, "ambient"))

    # -- admin -----------------------------------------------------------------------------

    async def enable(self, guild_id: str, channel_id: str, persona: str, by: str | None) -> None:
        await self.store.enable(guild_id, channel_id, persona, by)
        (await self.channels(guild_id))[channel_id] = persona

    async def disable(self, guild_id: str, channel_id: str) -> bool:
        gone = await self.store.disable(guild_id, channel_id)
        (await self.channels(guild_id)).pop(channel_id, None)
        await self.forget_channel(guild_id, channel_id)
        return gone

    # -- the stored history (persist_history) ---------------------------------------------

    def _lock(self, guild_id: str) -> asyncio.Lock:
        return self._locks.setdefault(guild_id, asyncio.Lock())

    def _cutoff(self, settings: Settings) -> datetime:
        return self.clock() - timedelta(days=settings.history_retention_days)

    async def ready(self, guild_id: str, settings: Settings) -> None:
        """Once per process: a server's stored history (within retention) back in memory."""
        if not settings.persist_history or guild_id in self._loaded:
            return
        async with self._lock(guild_id):
            if guild_id in self._loaded:
                return
            rows = await self.stored.load(guild_id, self._cutoff(settings))
            history = self.history(guild_id)
            known = {e.key for e in history.entries}
            history.entries[:0] = [e for e in rows if e.key not in known]
            history.trim(settings.history_limit, settings.history_per_channel)
            self._persisted[guild_id] = {e.key: e for e in rows}
            self._loaded.add(guild_id)

    async def persist(self, guild_id: str, settings: Settings) -> None:
        """Make the stored rows what memory holds (within retention, never for a paused or
        secure channel); with ``persist_history`` off, delete the server's rows once."""
        if not settings.persist_history:
            if guild_id not in self._cleared:
                self._cleared.add(guild_id)
                self._loaded.discard(guild_id)
                self._persisted.pop(guild_id, None)
                await self.stored.purge_guild(guild_id)
            return
        self._cleared.discard(guild_id)
        await self.ready(guild_id, settings)
        async with self._lock(guild_id):
            history = self.history(guild_id)
            cutoff = self._cutoff(settings)
            history.forget_before(cutoff)
            blocked = await self.kernel.channels.states(guild_id)  # paused or secure
            # Only as the guild's memory allows: a channel no memory plugin keeps is stored
            # nowhere, and nothing older than what memory keeps of that channel.
            kept = await self._memory_cutoffs(guild_id, {e.channel_id for e in history.entries})
            persisted = self._persisted.setdefault(guild_id, {})

            def storable(e: Entry) -> bool:
                cut = kept.get(e.channel_id)
                quiet = self._quiet(guild_id, e.channel_id, blocked)
                return not quiet and cut is not None and e.at >= cut

            current = {e.key for e in history.entries if storable(e)}
            delete = [k for k in persisted if k not in current]
            write = [e for e in history.entries if storable(e) and persisted.get(e.key) != e]
            if delete or write:
                await self.stored.sync(guild_id, write, delete)
                for key in delete:
                    persisted.pop(key, None)
                persisted.update((e.key, e) for e in write)
            now = time.monotonic()
            if now - self._expired_at.get(guild_id, -EXPIRE_SECONDS) >= EXPIRE_SECONDS:
                self._expired_at[guild_id] = now  # rows another process or a crash left
                await self.stored.expire(guild_id, cutoff)

    async def _memory_cutoffs(self, guild_id: str, channels: set[str]) -> dict[str, datetime]:
        """Per channel, the oldest time the guild's memory keeps (``kernel.channel_retention``,
        asked at most every ``CHANNELS_SECONDS`` per channel); absent: memory keeps none."""
        now, cutoffs = time.monotonic(), {}
        for channel in channels:
            key = (guild_id, channel)
            cached = self._retention.get(key)
            if cached is None or now - cached[0] >= CHANNELS_SECONDS:
                cached = (now, await self.kernel.channel_retention(guild_id, channel))
                self._retention[key] = cached
            if cached[1] is not None:
                cutoffs[channel] = self.clock() - timedelta(days=cached[1])
        return cutoffs

    def _unpersist(self, guild_id: str, gone: Callable[[Entry], bool]) -> None:
        persisted = self._persisted.get(guild_id, {})
        for key in [k for k, e in persisted.items() if gone(e)]:
            del persisted[key]

    async def forget_channel(self, guild_id: str, channel_id: str) -> None:
        self.history(guild_id).forget_channel(channel_id)
        self._unpersist(guild_id, lambda e: e.channel_id == channel_id)
        await self.stored.forget_channel(guild_id, channel_id)

    async def forget_messages(self, guild_id: str, message_ids: set[str]) -> None:
        self.history(guild_id).forget_messages(message_ids)
        self._unpersist(guild_id, lambda e: e.message_id in message_ids)
        await self.stored.forget_messages(guild_id, message_ids)

    async def forget_author(self, guild_id: str | None, author_id: str) -> dict[str, int]:
        """A member's erasure: their entries in memory and their stored rows."""
        in_memory = 0
        for guild in [guild_id] if guild_id is not None else list(self._histories):
            in_memory += self.history(guild).forget_author(author_id)
            self._unpersist(guild, lambda e: e.role == "user" and e.author_id == author_id)
        return {
            "history": in_memory,
            "stored": await self.stored.forget_author(guild_id, author_id),
        }

    async def purge_history(self, guild_id: str) -> int:
        self.history(guild_id).entries.clear()
        self._persisted.pop(guild_id, None)
        self._loaded.discard(guild_id)
        return await self.stored.purge_guild(guild_id)

    async def expire_stored(self) -> int:
        """The scheduled sweep: every server's rows cut to its retention (all of them when
        ``persist_history`` is off), also for servers that went quiet."""
        gone = 0
        for guild in await self.stored.guilds():
            settings = await self.settings(guild)
            if settings.persist_history:
                gone += await self.stored.expire(guild, self._cutoff(settings))
            else:
                gone += await self.purge_history(guild)
        return gone

    # -- counters --------------------------------------------------------------------------

    def count(self, guild_id: str, **counts: int) -> None:
        """Add to today's counters in memory; ``flush_counts`` writes them."""
        key = (guild_id, today(self.clock()))
        pending = self._pending.setdefault(key, {})
        for name, value in counts.items():
            pending[name] = pending.get(name, 0) + value

    async def flush_counts(self) -> None:
        pending, self._pending = self._pending, {}
        for (guild_id, day), counts in pending.items():
            await self.store.add(guild_id, day, counts)

    async def today(self, guild_id: str) -> dict[str, int]:
        await self.flush_counts()
        return await self.store.day(guild_id, today(self.clock()))

    # -- the gate ----------------------------------------------------------------------------

    async def observe(self, event: Any) -> None:
        from gigi_core.events import (
            ChannelDeleted,
            ChannelSecured,
            MessageCreated,
            MessageDeleted,
            MessageEdited,
            ReactionsCleared,
        )

        guild = getattr(event, "guild_id", None)
        if guild is None:
            return
        if isinstance(event, MessageDeleted):
            await self.forget_messages(guild, set(event.message_ids))
            return
        if isinstance(event, MessageEdited):
            if event.withheld:  # paused or secure: the old text goes, memory and rows
                await self.forget_messages(guild, {event.message_id})
            elif any(e.message_id == event.message_id for e in self.history(guild).entries):
                self.history(guild).edited(event.message_id, event.text)
                await self.persist(guild, await self.settings(guild))
            return
        if isinstance(event, ChannelSecured | ChannelDeleted):
            threads = [
                t for (g, t), p in self._parents.items() if (g, p) == (guild, event.channel_id)
            ]
            for channel in [event.channel_id, *threads]:  # a thread is secured with its parent
                await self.forget_channel(guild, channel)
            return
        if isinstance(event, ReactionsCleared):
            await self._reactions_cleared(event)
            return
        if not isinstance(event, MessageCreated) or not answerable(event):
            return
        persona = (await self.channels(guild)).get(event.channel_id)
        if persona is None or not event.text.strip():
            return
        if event.parent_channel_id:  # a thread: its parent's observation state is its own
            self._parents[(guild, event.channel_id)] = event.parent_channel_id
        settings = await self.settings(guild)
        await self.ready(guild, settings)
        if short_path_match(settings, event.channel_id, event.author_id) or event.mentions_bot:
            # archived without a model call; a mention is the surface's to answer.
            await self._archive(event, settings)
            return
        # The daily token budget is held when each call is made (``budget``), not here.
        if not await self.kernel.limits.take(
            "ambient.channel", f"{guild}:{event.channel_id}", settings.calls_per_minute, 60.0
        ):
            self.count(guild, skipped=1)
            await self._archive(event, settings)
            return
        key = (guild, event.channel_id)
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = asyncio.Queue(QUEUE)
        try:
            queue.put_nowait((event, persona, settings))
        except asyncio.QueueFull:
            self.count(guild, skipped=1)
            await self._archive(event, settings)
            return
        if key not in self._workers or self._workers[key].done():
            self._workers[key] = asyncio.get_running_loop().create_task(self._work(key, queue))

    async def _reactions_cleared(self, event: Any) -> None:
        """The clearing is recorded in the channel's history as a note."""
        if event.channel_id not in await self.channels(event.guild_id):
            return
        settings = await self.settings(event.guild_id)
        history = self.history(event.guild_id)
        note = f"(all {event.count} reactions were removed from message {event.message_id})"
        history.append(Entry(event.channel_id, "user", "surface", note, at=self.clock()))
        history.trim(settings.history_limit, settings.history_per_channel)
        await self.persist(event.guild_id, settings)

    async def _archive(self, event: Any, settings: Settings) -> None:
        history = self.history(event.guild_id)
        history.append(entry_of(event))
        history.trim(settings.history_limit, settings.history_per_channel)
        await self.persist(event.guild_id, settings)

    # -- the workers -------------------------------------------------------------------------

    async def _work(self, key: tuple[str, str], queue: asyncio.Queue[Any]) -> None:
        while not queue.empty():
            event, persona, settings = queue.get_nowait()
            try:
                await self.answer(event, persona, settings)
            except BudgetReached:  # archived unanswered (the question is in the history)
                self.count(key[0], skipped=1)
            except AmbientError as exc:
                self.count(key[0], failures=1)
                reasons = ", ".join(exc.reasons) or "unknown"
                log.warning("ambient: no answer in channel %s (%s)", key[1], reasons)
            except Exception as exc:  # a bug must not stop the channel's later messages
                self.count(key[0], failures=1)
                log.error("ambient: answering failed (%s)", type(exc).__name__)
            finally:
                queue.task_done()
            try:
                await self.persist(key[0], settings)
            except Exception as exc:  # memory keeps it; the next message writes it again
                log.warning("ambient: history not stored (%s)", type(exc).__name__)
        try:
            await self.flush_counts()
        except Exception as exc:  # counted again at the next flush
            log.warning("ambient: counters not written (%s)", type(exc).__name__)

    async def answer(self, event: Any, persona: str, settings: Settings) -> Delivery | None:
        """Respond and post; raises ``AmbientError`` when no attempt gave an envelope."""
        if self.runtime is None:
            self.runtime = self.kernel.agent
        guild = event.guild_id
        if not await self.observed(guild, event.channel_id):  # paused or secured since queued
            self.count(guild, skipped=1)
            return None
        delivery = await self.responder.respond(event, persona, settings)
        if delivery is None:
            return None
        if not await self.observed(guild, event.channel_id):  # ... or while it was answered
            self.count(guild, skipped=1)
            return None
        if delivery.hack:  # metadata only, for admins; never acted on
            await self.kernel.track(
                "ambient.hack",
                guild_id=guild,
                channel_id=event.channel_id,
                actor_id=event.author_id,
            )
        if delivery.answer is not None:
            here = delivery.channel_id == event.channel_id
            posted = await self._post(
                guild, delivery.channel_id, delivery.answer, event.message_id if here else None
            )
            if posted is not None:
                self.answered(delivery.channel_id).append(posted)
            self.count(guild, answers=1)
        else:
            self.count(guild, silences=1)
        if delivery.staff is not None:
            await self._staff(event, delivery, settings)
        if delivery.picture is not None:
            await self._picture(event, delivery)
        return delivery

    async def _picture(self, event: Any, delivery: Delivery) -> str:
        from gigi_ambient.picture import make_and_post

        return await make_and_post(self, event, delivery)

    async def _staff(self, event: Any, delivery: Delivery, settings: Settings) -> None:
        """A staff note goes to the staff channel only: it judges a member and is model text,
        so it is never shown in the public channel. Without a staff channel (or when posting
        there fails) it is counted and recorded as an ``ambient.staff_undelivered`` event
        (ids only) for admins, and ``/ambient status`` says to set one."""
        guild = event.guild_id
        text = (
            f"Staff note (ambient, <#{event.channel_id}>, message {event.message_id} by "
            f"<@{event.author_id}>): {delivery.staff}"
        )
        self.count(guild, staff_notes=1)
        target = settings.staff_channel
        if target is not None and await self._post(guild, target, text, None) is not None:
            return
        log.warning("ambient: a staff note in guild %s could not be delivered", guild)
        await self.kernel.track(
            "ambient.staff_undelivered",
            guild_id=guild,
            channel_id=event.channel_id,
            message_id=event.message_id,
            staff_channel=target,
        )

    async def _post(
        self, guild_id: str, channel_id: str, text: str, reply_to: str | None
    ) -> str | None:
        try:
            return await self.poster.post(guild_id, channel_id, text, reply_to)
        except Exception as exc:  # PostForbidden, PostUnavailable: said once, by class
            log.warning(
                "ambient: posting in channel %s failed (%s)", channel_id, type(exc).__name__
            )
            return None

    async def drain(self) -> None:
        """Wait until every queued message was answered (tests, shutdown)."""
        while True:
            busy = [t for t in self._workers.values() if not t.done()]
            if not busy:
                break
            await asyncio.gather(*busy, return_exceptions=True)
        await self.flush_counts()

    async def close(self) -> None:
        for task in self._workers.values():
            task.cancel()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        try:
            await self.flush_counts()
        except Exception as exc:
            log.warning("ambient: counters not written at shutdown (%s)", type(exc).__name__)
