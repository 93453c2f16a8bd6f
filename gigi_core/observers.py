"""Event delivery: ``kernel.publish`` to ``observe_event``, one bounded queue per plugin.

``publish`` never waits on the database or on a plugin. When the guild's facts (which
plugins are enabled there, which channels are paused or secure) are cached and nothing is
ahead of the event, it hands the event to each enabled observer's own queue itself;
otherwise it puts the event on the router's inbox, and the router task reads (and caches)
the facts and moves events on in publish order, several per loop turn while the observers
keep up. Each observer's worker delivers what its queue holds without a loop turn between
events. A full queue drops the event for that plugin alone and counts it; an observer that
raises or runs past its deadline is counted and carries on. Nothing here stores or logs an
event's text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gigi_core.errors import ConfigError
from gigi_core.events import (
    ChannelDeleted,
    ChannelSecured,
    Event,
    GuildJoined,
    GuildLeft,
    MemberLeft,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    ReactionsCleared,
)

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel

log = logging.getLogger(__name__)

MESSAGE_EVENTS = (MessageCreated, MessageEdited)
#: What an observer held back by an unaccepted upgrade still gets: erasures and lifecycle
#: events carry no new content, and without them what it kept would outlive a deletion.
ALWAYS_DELIVERED = (
    MessageDeleted,
    ChannelDeleted,
    ChannelSecured,
    ReactionsCleared,
    MemberLeft,
    GuildLeft,
    GuildJoined,
)
#: Events the router moves, and an observer's worker delivers, before letting the loop run.
ROUTE_CHUNK = 256
STATS_SECONDS = 30.0  # how often the delivery counters are saved
COUNTERS = ("delivered", "dropped", "failed", "timed_out")
#: The facts key of direct messages (no guild): which plugins' observers an upgrade holds.
DM_FACTS = "(direct messages)"


def _env_number(name: str, default: float, *, minimum: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value >= minimum or value == float("inf"):
        raise ConfigError(f"{name}: {raw!r} is not a number of at least {minimum:g}")
    return value


@dataclass
class ObserverStatsLine:
    """Counters of one plugin in this process, plus what is still unsaved."""

    delivered: int = 0
    dropped: int = 0
    failed: int = 0
    timed_out: int = 0
    unsaved: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))

    def bump(self, counter: str) -> None:
        setattr(self, counter, getattr(self, counter) + 1)
        self.unsaved[counter] += 1

    def as_dict(self, queued: int) -> dict[str, int]:
        return {c: getattr(self, c) for c in COUNTERS} | {"queued": queued}


@dataclass
class _Observer:
    name: str  # the plugin module (record) name
    manifests: frozenset[str]  # the manifest plugin names whose enablement counts
    dm_events: bool
    call: Callable[..., Any]
    queue: asyncio.Queue[Event]
    task: asyncio.Task[None] | None = None


@dataclass
class _GuildFacts:
    enabled: frozenset[str]  # enabled here (held ones included: they get erasures)
    states: dict[str, str]
    expires: float
    held: frozenset[str] = frozenset()  # plugins with pending holds: their observers are off


class EventBus:
    """The kernel's event router; start is lazy (first publish inside a running loop)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.queue_size = int(_env_number("GIGI_EVENT_QUEUE_SIZE", 1000, minimum=1))
        # The router's own backlog: events wait here while it reads a new guild's facts.
        self.backlog = int(_env_number("GIGI_EVENT_BACKLOG", 100_000, minimum=1))
        self.timeout = _env_number("GIGI_OBSERVER_TIMEOUT_SECONDS", 10.0, minimum=0.001)
        self.facts_ttl = _env_number("GIGI_EVENT_FACTS_SECONDS", 5.0, minimum=0)
        self.stats: dict[str, ObserverStatsLine] = {}
        self._observers: dict[str, _Observer] | None = None
        self._inbox: asyncio.Queue[Event] | None = None
        self._router: asyncio.Task[None] | None = None
        self._saver: asyncio.Task[None] | None = None
        self._routing = False  # the router holds events taken from the inbox
        # An observer queue holding fewer than this takes an event straight from publish;
        # a chunk of the router is no bigger, so a burst is paced the same either way.
        self._chunk = max(1, min(ROUTE_CHUNK, self.queue_size // 4))
        self._facts: dict[str, _GuildFacts] = {}
        self._generation = 0  # bumped by invalidate(): a read it overtook is not cached
        self._closed = False
        self._router_dropped = 0

    # -- publishing ------------------------------------------------------------------------

    def publish_nowait(self, event: Event) -> None:
        """Queue an event for delivery; never blocks, never touches the database."""
        if self._closed or not isinstance(event, Event):
            if not isinstance(event, Event):
                raise TypeError(f"publish() takes a gigi_core.events event, not {type(event)}")
            return
        inbox = self._start()
        if inbox is None:
            return
        if not self._routing and inbox.empty():
            # Nothing ahead of it: with the guild's facts fresh, straight to the observers'
            # queues (one task wake-up per event instead of two).
            facts = self._fresh(DM_FACTS if event.guild_id is None else event.guild_id)
            if facts is not None and self._direct(event, facts):
                return
        try:
            inbox.put_nowait(event)
        except asyncio.QueueFull:
            self._router_dropped += 1
            for observer in (self._observers or {}).values():
                self._line(observer.name).bump("dropped")

    def start(self) -> None:
        """Start the router now, in the caller's task context, instead of at the first publish.

        A host that tracks the tasks its handlers create (SimCord in tests) must not see the
        router, which lives as long as the kernel, as a handler's unfinished work.
        """
        if not self._closed:
            self._start()

    def observers(self) -> dict[str, _Observer]:
        if self._observers is None:
            self._observers = {}
            registry = self.kernel.registry
            for impl in self.kernel.pm.hook.observe_event.get_hookimpls():
                record = registry.records.get(impl.plugin_name)
                if record is None or record.status != "ok":
                    continue
                manifests = record.manifests
                self._observers[impl.plugin_name] = _Observer(
                    name=impl.plugin_name,
                    manifests=frozenset(m.plugin.name for m in manifests),
                    dm_events=any(m.plugin.dm_events for m in manifests),
                    call=_caller(impl),
                    queue=asyncio.Queue(self.queue_size),
                )
        return self._observers

    def _start(self) -> asyncio.Queue[Event] | None:
        if self._inbox is not None:
            return self._inbox
        if not self.observers():
            return None  # nobody observes: publishing costs nothing
        self._inbox = asyncio.Queue(self.backlog)
        loop = asyncio.get_running_loop()
        self._router = loop.create_task(self._route(), name="gigi-events")
        self._saver = loop.create_task(self._save_counters(), name="gigi-event-counters")
        return self._inbox

    # -- routing -----------------------------------------------------------------------------

    async def _route(self) -> None:
        """Move events from the inbox to the observers' queues, a chunk per loop turn.

        Events are taken in publish order and each is handed to every queue before the
        next, so every observer sees a channel's events in the order they were published.
        Between chunks the router yields, so observers drain their queues as a burst comes
        in; a chunk never fills an observer queue past a quarter (``_room``).
        """
        inbox = self._inbox
        assert inbox is not None
        while True:
            event: Event | None = inbox.get_nowait() if not inbox.empty() else await inbox.get()
            self._routing = True  # holding an event: a later one must not overtake it
            chunk = self._room()
            taken = 0
            while event is not None:
                try:
                    key = DM_FACTS if event.guild_id is None else event.guild_id
                    facts = self._fresh(key) or await self.guild_facts(key)
                    self._dispatch(event, facts)
                except Exception as exc:  # a database hiccup must not stop delivery for good
                    log.error("event routing failed: %s", type(exc).__name__)
                finally:
                    inbox.task_done()
                taken += 1
                event = inbox.get_nowait() if taken < chunk and not inbox.empty() else None
            self._routing = False
            # Let observers run between chunks: a burst must not fill their queues only
            # because the router kept the loop (get() on a full queue never yields).
            await asyncio.sleep(0)

    async def _save_counters(self) -> None:
        """Every 30 s, add the unsaved delivery counters to the store (off the hot path)."""
        while True:
            await asyncio.sleep(STATS_SECONDS)
            await self.flush_stats()

    def _dispatch(self, event: Event, facts: _GuildFacts) -> None:
        for observer in self.observers().values():
            wanted = _wanted(observer, event, facts)
            if wanted is None:
                continue
            self._ensure_worker(observer)
            try:
                observer.queue.put_nowait(wanted)
            except asyncio.QueueFull:
                line = self._line(observer.name)
                line.bump("dropped")
                if line.dropped in (1, 10, 100, 1000) or line.dropped % 10_000 == 0:
                    log.warning(
                        "plugin %s: event queue full, %d event(s) dropped so far",
                        observer.name,
                        line.dropped,
                    )

    def _direct(self, event: Event, facts: _GuildFacts) -> bool:
        """Hand the event to its observers' queues from ``publish``, or False (nothing done)
        when one of them has no worker yet or a quarter of its queue filled: the router
        then paces it. Workers are started by the router only, so they run in its context
        rather than in the surface's task that published."""
        targets = []
        for observer in self.observers().values():
            wanted = _wanted(observer, event, facts)
            if wanted is None:
                continue
            task = observer.task
            if task is None or task.done() or observer.queue.qsize() >= self._chunk:
                return False
            targets.append((observer, wanted))
        for observer, wanted in targets:
            observer.queue.put_nowait(wanted)  # room: fewer than a quarter of its size queued
        return True

    def _room(self) -> int:
        """How many events the router moves this turn: up to what the fullest observer queue
        has left below a quarter of its size, and one when it has none (an observer that is
        behind sees the pace it always saw: one event per loop turn)."""
        fullest = max((o.queue.qsize() for o in self.observers().values()), default=0)
        return max(1, min(ROUTE_CHUNK, self._chunk - fullest))

    def _fresh(self, guild_id: str) -> _GuildFacts | None:
        """The guild's cached facts while they are fresh (no await on the hot path)."""
        facts = self._facts.get(guild_id)
        if facts is not None and facts.expires > time.monotonic():
            return facts
        return None

    async def guild_facts(self, guild_id: str) -> _GuildFacts:
        """A guild's facts (``DM_FACTS``: direct messages'), including the plugins whose
        observers get erasures only because an upgrade's holds are not accepted there: an
        observer sees every message, and no manifest says what its code does with them."""
        facts = self._fresh(guild_id)
        if facts is not None:
            return facts
        dm = guild_id == DM_FACTS
        for _ in range(3):  # a change committed while we read: read again
            generation = self._generation
            enabled: frozenset[str] = frozenset()
            states: dict[str, str] = {}
            if not dm:
                enabled = frozenset(await self.kernel.plugin_state.enabled_plugins(guild_id))
                states = await self.kernel.channels.states(guild_id)
            held = await self.kernel.reviews.observers_held(None if dm else guild_id)
            if generation == self._generation:
                break
        expires = time.monotonic() + self.facts_ttl
        facts = _GuildFacts(enabled, states, expires, held)
        if generation == self._generation:  # never cache facts a change overtook
            if len(self._facts) > 10_000:
                self._facts.clear()
            self._facts[guild_id] = facts
        return facts

    def invalidate(self, guild_id: str | None = None) -> None:
        """Forget cached guild facts (a plugin or a channel state changed)."""
        self._generation += 1
        if guild_id is None:
            self._facts.clear()
        else:
            self._facts.pop(guild_id, None)

    # -- observers ---------------------------------------------------------------------------

    def _ensure_worker(self, observer: _Observer) -> None:
        if observer.task is None or observer.task.done():
            observer.task = asyncio.get_running_loop().create_task(
                self._work(observer), name=f"gigi-observer-{observer.name}"
            )

    async def _work(self, observer: _Observer) -> None:
        """Deliver the queue's events one by one, in order, without a loop turn between
        them while more are queued (``ROUTE_CHUNK`` at most, then the loop runs others).

        An event leaves the queue only as it is delivered, so a full queue drops exactly
        what it dropped before. A synchronous observer is simply called (no deadline could
        interrupt it anyway); a coroutine runs under the deadline.
        """
        line = self._line(observer.name)
        queue = observer.queue
        call = observer.call
        kernel = self.kernel
        while True:
            event = await queue.get()
            done = 0
            while True:
                try:
                    result = call(event=event, kernel=kernel)
                    if result is not None and (
                        asyncio.iscoroutine(result) or isinstance(result, asyncio.Future)
                    ):
                        await self._awaited(observer, line, event, result)
                    else:
                        line.delivered += 1
                        line.unsaved["delivered"] += 1
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    line.bump("failed")
                    # The exception's class only: its message could quote the event's text.
                    log.warning(
                        "plugin %s: observe_event raised %s on %s",
                        observer.name,
                        type(exc).__name__,
                        type(event).__name__,
                    )
                finally:
                    queue.task_done()
                done += 1
                if done >= ROUTE_CHUNK:
                    done = 0
                    await asyncio.sleep(0)  # a long backlog must not keep the loop
                if queue.empty():
                    break
                event = queue.get_nowait()

    async def _awaited(
        self, observer: _Observer, line: ObserverStatsLine, event: Event, result: Any
    ) -> None:
        """A coroutine observer's delivery, under its deadline."""
        try:
            async with asyncio.timeout(self.timeout):
                await result
            line.bump("delivered")
        except TimeoutError:
            line.bump("timed_out")
            log.warning(
                "plugin %s: observe_event ran past %.1fs on %s; skipped",
                observer.name,
                self.timeout,
                type(event).__name__,
            )

    def _line(self, name: str) -> ObserverStatsLine:
        line = self.stats.get(name)
        if line is None:
            line = self.stats[name] = ObserverStatsLine()
        return line

    # -- status ------------------------------------------------------------------------------

    def status(self) -> dict[str, dict[str, int]]:
        """This process's counters per observing plugin, with what is queued now."""
        return {
            name: self._line(name).as_dict(observer.queue.qsize())
            for name, observer in sorted(self.observers().items())
        }

    async def drain(self) -> None:
        """Wait until every event published so far has been handled (tests, shutdown)."""
        if self._inbox is None:
            return
        await self._inbox.join()
        for observer in self.observers().values():
            await observer.queue.join()

    async def flush_stats(self) -> None:
        """Add this process's unsaved counters to ``observer_stats`` (shown by the CLI)."""
        from gigi_core.store.observer_stats import add_counts

        pending = {
            name: dict(line.unsaved)
            for name, line in self.stats.items()
            if any(line.unsaved.values())
        }
        if not pending:
            return
        try:
            await add_counts(self.kernel.db, pending)
        except Exception as exc:
            log.warning("could not save event delivery counters: %s", type(exc).__name__)
            return
        for name, saved in pending.items():
            for counter, value in saved.items():
                self.stats[name].unsaved[counter] -= value

    async def close(self, *, drain_seconds: float = 5.0) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain_seconds):
                await self.drain()
        tasks = [self._router, self._saver] + [o.task for o in (self._observers or {}).values()]
        for task in tasks:
            if task is not None:
                task.cancel()
        for task in tasks:
            if task is not None:
                with contextlib.suppress(BaseException):
                    await task
        await self.flush_stats()


def _wanted(observer: _Observer, event: Event, facts: _GuildFacts) -> Event | None:
    """The event as this observer gets it, or None when it is not delivered to it. A held
    observer (an upgrade not accepted here) gets erasures and lifecycle events only, and an
    edit as withheld: it drops what it kept of the old text without seeing the new."""
    if event.guild_id is None:  # no guild: a direct message
        if not observer.dm_events:
            return None
        held = not observer.manifests.isdisjoint(facts.held)
    else:
        on = observer.manifests & facts.enabled
        if not on:
            return None
        held = on <= facts.held
    if held and not isinstance(event, ALWAYS_DELIVERED):
        if isinstance(event, MessageEdited):
            return replace(event, text="", mentioned_user_ids=None, withheld=True)
        return None
    if event.guild_id is None:
        return event
    states = facts.states  # paused or secured channels only, usually none
    if (
        states
        and isinstance(event, MESSAGE_EVENTS)
        and (
            states.get(event.channel_id, "active") != "active"
            or states.get(event.parent_channel_id or "", "active") != "active"
        )
    ):
        if isinstance(event, MessageEdited):
            # Not observed here, yet what was kept of the old text must not outlive it.
            return replace(event, text="", mentioned_user_ids=None, withheld=True)
        return None
    return event


def _caller(impl: Any) -> Callable[..., Any]:
    """Call a hookimpl with only the arguments it names (pluggy's convention)."""
    names = tuple(impl.argnames)
    function = impl.function
    if names == ("event", "kernel"):  # the usual signature: no dict built per event
        return function  # type: ignore[no-any-return]
    if names == ("event",):
        return lambda event, kernel: function(event=event)

    def call(**kwargs: Any) -> Any:
        return function(**{n: kwargs[n] for n in names})

    return call
