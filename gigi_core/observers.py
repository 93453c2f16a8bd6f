"""Event delivery: ``kernel.publish`` to ``observe_event``, one bounded queue per plugin.

``publish`` only puts the event on the router's queue, so a surface never waits on the
database or on a plugin. The router task looks up (and caches) which plugins are enabled in
the event's guild and which channels are paused or secure, then hands the event to each
enabled observer's own queue. A full queue drops the event for that plugin alone and counts
it; an observer that raises or runs past its deadline is counted and carries on. Nothing
here stores or logs an event's text.
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
from gigi_core.events import Event, MessageCreated, MessageEdited

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel

log = logging.getLogger(__name__)

MESSAGE_EVENTS = (MessageCreated, MessageEdited)
COUNTERS = ("delivered", "dropped", "failed", "timed_out")


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
    enabled: frozenset[str]
    states: dict[str, str]
    expires: float


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
        try:
            inbox.put_nowait(event)
        except asyncio.QueueFull:
            self._router_dropped += 1
            for observer in (self._observers or {}).values():
                self._line(observer.name).bump("dropped")

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
        self._router = asyncio.get_running_loop().create_task(self._route(), name="gigi-events")
        return self._inbox

    # -- routing -----------------------------------------------------------------------------

    async def _route(self) -> None:
        assert self._inbox is not None
        last_flush = time.monotonic()
        while True:
            try:  # not wait_for: on 3.11 it drops a cancel that lands as an event arrives
                async with asyncio.timeout(30):
                    event = await self._inbox.get()
            except TimeoutError:
                event = None
            if event is not None:
                try:
                    await self._dispatch(event)
                except Exception as exc:  # a database hiccup must not stop delivery for good
                    log.error("event routing failed: %s", type(exc).__name__)
                finally:
                    self._inbox.task_done()
                # Let observers run between events: a burst must not fill their queues
                # only because the router kept the loop (get() on a full queue never yields).
                await asyncio.sleep(0)
            if time.monotonic() - last_flush > 30:
                last_flush = time.monotonic()
                await self.flush_stats()

    async def _dispatch(self, event: Event) -> None:
        for observer in self.observers().values():
            wanted = await self._wants(observer, event)
            if wanted is None:
                continue
            event = wanted
            self._ensure_worker(observer)
            try:
                observer.queue.put_nowait(event)
            except asyncio.QueueFull:
                line = self._line(observer.name)
                line.bump("dropped")
                if line.dropped in (1, 10, 100, 1000) or line.dropped % 10_000 == 0:
                    log.warning(
                        "plugin %s: event queue full, %d event(s) dropped so far",
                        observer.name,
                        line.dropped,
                    )

    async def _wants(self, observer: _Observer, event: Event) -> Event | None:
        """The event as this observer gets it, or None when it is not delivered to it."""
        if event.guild_id is None:
            return event if observer.dm_events else None
        facts = await self.guild_facts(event.guild_id)
        if not observer.manifests & facts.enabled:
            return None
        if isinstance(event, MESSAGE_EVENTS) and any(
            channel is not None and facts.states.get(channel, "active") != "active"
            for channel in (event.channel_id, event.parent_channel_id)
        ):
            if isinstance(event, MessageEdited):
                # Not observed here, yet what was kept of the old text must not outlive it.
                return replace(event, text="", withheld=True)
            return None
        return event

    async def guild_facts(self, guild_id: str) -> _GuildFacts:
        facts = self._facts.get(guild_id)
        if facts is not None and facts.expires > time.monotonic():
            return facts
        for _ in range(3):  # a change committed while we read: read again
            generation = self._generation
            enabled = frozenset(await self.kernel.plugin_state.enabled_plugins(guild_id))
            states = await self.kernel.channels.states(guild_id)
            if generation == self._generation:
                break
        facts = _GuildFacts(enabled, states, time.monotonic() + self.facts_ttl)
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
        line = self._line(observer.name)
        while True:
            event = await observer.queue.get()
            try:
                async with asyncio.timeout(self.timeout):
                    result = observer.call(event=event, kernel=self.kernel)
                    if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
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
                observer.queue.task_done()

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
        tasks = [self._router] + [o.task for o in (self._observers or {}).values()]
        for task in tasks:
            if task is not None:
                task.cancel()
        for task in tasks:
            if task is not None:
                with contextlib.suppress(BaseException):
                    await task
        await self.flush_stats()


def _caller(impl: Any) -> Callable[..., Any]:
    """Call a hookimpl with only the arguments it names (pluggy's convention)."""
    names = tuple(impl.argnames)
    function = impl.function

    def call(**kwargs: Any) -> Any:
        return function(**{n: kwargs[n] for n in names})

    return call
