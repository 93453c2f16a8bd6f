"""Surface events: delivery only where a plugin is enabled, per-plugin queues, channel states."""

from __future__ import annotations

import asyncio
import itertools
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gigi_core import hookimpl
from gigi_core.events import (
    ChannelDeleted,
    ChannelSecured,
    Event,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
)
from gigi_core.testing import open_test_kernel

CANARY = "canary-text-7f3a9 do not store"
_ids = itertools.count(1)

MANIFEST = """\
manifest_version: 1
plugin:
  name: {name}
  version: 0.1.0
  description: Observes events for a test.
  data_statement: Keeps events in a list in memory.
  dm_events: {dm}
"""


class Observer:
    """An in-process plugin that records what it is given; ``gate`` can hold it up."""

    def __init__(self, name: str, folder: Path, *, dm_events: bool = False) -> None:
        self.name = name
        self.path = folder / f"{name}.yaml"
        self.path.write_text(MANIFEST.format(name=name, dm=str(dm_events).lower()))
        self.seen: list[Event] = []
        self.gate: asyncio.Event | None = None
        self.fail_on: type | None = None
        self.target: int | None = None
        self.reached = asyncio.Event()  # set once ``target`` events were seen

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    async def observe_event(self, event: Event, kernel: Any) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_on is not None and isinstance(event, self.fail_on):
            raise RuntimeError(f"observer broke on {getattr(event, 'text', '')}")
        self.seen.append(event)
        if self.target is not None and len(self.seen) >= self.target:
            self.reached.set()


def message(guild: str | None = "g1", channel: str = "c1", **kw: Any) -> MessageCreated:
    fields: dict[str, Any] = {
        "guild_id": guild,
        "message_id": f"m{next(_ids)}",
        "channel_id": channel,
        "channel_kind": "text" if guild else "dm",
        "author_id": "u1",
        "created_at": datetime.now(UTC),
        "text": "hello",
    }
    fields.update(kw)
    return MessageCreated(**fields)


def kinds(observer: Observer) -> list[str]:
    return [type(e).__name__ for e in observer.seen]


async def test_hook_observe_event(tmp_path: Path, database_url: str) -> None:
    """Only plugins enabled in the event's guild observe it; disabling stops delivery."""
    on, off = Observer("seer", tmp_path), Observer("blind", tmp_path)
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("seer", on), ("blind", off)],
        database_url=database_url,
    ) as kernel:
        await kernel.enable_plugin("g1", "seer")
        first = message(text="first")
        await kernel.publish(first)
        await kernel.events.drain()
        assert on.seen == [first] and off.seen == []
        await kernel.publish(message(guild="g2"))  # a guild where nothing is enabled
        await kernel.disable_plugin("g1", "seer")
        await kernel.publish(message(text="after disable"))
        await kernel.events.drain()
        assert on.seen == [first]
        assert kernel.events.status()["seer"]["delivered"] == 1


async def test_direct_messages_reach_only_plugins_that_ask(tmp_path: Path) -> None:
    dms, plain = Observer("dms", tmp_path, dm_events=True), Observer("plain", tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("dms", dms), ("plain", plain)]
    ) as kernel:
        await kernel.publish(message(guild=None, channel="dm1"))
        await kernel.events.drain()
        assert kinds(dms) == ["MessageCreated"] and plain.seen == []


async def test_paused_and_secure_channels_deliver_no_messages(
    tmp_path: Path, database_url: str
) -> None:
    seer = Observer("seer", tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("seer", seer)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "seer")
        await kernel.set_channel_state("g1", "c1", "paused", by="admin")
        now = datetime.now(UTC)
        await kernel.publish(message())
        await kernel.publish(message(channel="t1", parent_channel_id="c1", channel_kind="thread"))
        await kernel.publish(
            MessageEdited(
                guild_id="g1",
                message_id="m1",
                channel_id="c1",
                text="new words",
                edited_at=now,
                mentioned_user_ids=("u9",),
            )
        )
        await kernel.publish(MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("m1",)))
        await kernel.publish(message(channel="c2"))  # another channel is still active
        await kernel.events.drain()
        # the edit arrives without its text, so what was kept of the old text can be dropped
        assert kinds(seer) == ["MessageEdited", "MessageDeleted", "MessageCreated"]
        edit = seer.seen[0]
        assert edit.withheld and edit.text == "" and edit.message_id == "m1"  # type: ignore[attr-defined]
        assert edit.mentioned_user_ids is None  # type: ignore[attr-defined]  # not observed either
        assert seer.seen[2].channel_id == "c2"

        seer.seen.clear()
        await kernel.set_channel_state("g1", "c1", "secure", by="admin")
        await kernel.publish(message())
        await kernel.events.drain()
        assert seer.seen == [ChannelSecured(guild_id="g1", channel_id="c1", by="admin")]
        [span] = await kernel.channels.secure_ranges("g1", "c1")
        assert span.ended_at is None and span.started_by == "admin"

        seer.seen.clear()
        await kernel.set_channel_state("g1", "c1", "active", by="admin")
        await kernel.publish(message(text="back"))
        await kernel.events.drain()
        assert [e.text for e in seer.seen] == ["back"]  # type: ignore[attr-defined]
        [span] = await kernel.channels.secure_ranges("g1", "c1")
        assert span.ended_at is not None


async def test_a_raising_observer_is_counted_and_never_stops_another(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken, fine = Observer("broken", tmp_path), Observer("fine", tmp_path)
    broken.fail_on = MessageCreated
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("broken", broken), ("fine", fine)]
    ) as kernel:
        for name in ("broken", "fine"):
            await kernel.enable_plugin("g1", name)
        with caplog.at_level(logging.DEBUG):
            for _ in range(3):
                await kernel.publish(message(text=CANARY))
            await kernel.publish(ChannelDeleted(guild_id="g1", channel_id="c9"))
            await kernel.events.drain()
        assert len(fine.seen) == 4 and kinds(broken) == ["ChannelDeleted"]
        assert kernel.events.status()["broken"] == {
            "delivered": 1,
            "dropped": 0,
            "failed": 3,
            "timed_out": 0,
            "queued": 0,
        }
        assert "RuntimeError" in caplog.text and CANARY not in caplog.text


async def test_a_hanging_observer_times_out_and_keeps_receiving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIGI_OBSERVER_TIMEOUT_SECONDS", "0.05")
    stuck = Observer("stuck", tmp_path)
    stuck.gate = asyncio.Event()  # never set: every call hangs until the deadline
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("stuck", stuck)]) as kernel:
        await kernel.enable_plugin("g1", "stuck")
        await kernel.publish(message())
        await kernel.publish(message())
        await kernel.events.drain()
        assert kernel.events.status()["stuck"]["timed_out"] == 2
        stuck.gate.set()
        await kernel.publish(message())
        await kernel.events.drain()
        assert len(stuck.seen) == 1


async def test_a_slow_observer_never_delays_the_surface_or_another_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst of 10,000 events: the blocked plugin drops what its queue cannot hold."""
    monkeypatch.setenv("GIGI_EVENT_QUEUE_SIZE", "100")
    slow, fast = Observer("slow", tmp_path), Observer("fast", tmp_path)
    slow.gate = asyncio.Event()
    fast.target = 10_000
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("slow", slow), ("fast", fast)]
    ) as kernel:
        for name in ("slow", "fast"):
            await kernel.enable_plugin("g1", name)
        for _ in range(10_000):  # publishing returns although nobody has run yet
            await kernel.publish(message())
        await asyncio.wait_for(fast.reached.wait(), 60)  # all of it, while slow still waits
        status = kernel.events.status()["slow"]
        assert status["dropped"] == 10_000 - 101  # its queue of 100, plus the one it holds
        slow.gate.set()
        await kernel.events.drain()
        assert len(slow.seen) == 101
        await kernel.events.flush_stats()
        from gigi_core.store.observer_stats import read_counts

        saved = await read_counts(kernel.db)
        assert saved["slow"]["dropped"] == 10_000 - 101 and saved["fast"]["delivered"] == 10_000


async def test_the_kernel_never_stores_event_text(tmp_path: Path) -> None:
    seer = Observer("seer", tmp_path)
    db_file = tmp_path / "events.db"
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("seer", seer)],
        database_url=f"sqlite+aiosqlite:///{db_file}",
    ) as kernel:
        await kernel.enable_plugin("g1", "seer")
        await kernel.publish(message(text=CANARY))
        await kernel.publish(
            MessageEdited(
                guild_id="g1",
                message_id="m1",
                channel_id="c1",
                text=CANARY,
                edited_at=datetime.now(UTC),
            )
        )
        await kernel.events.drain()
        assert len(seer.seen) == 2
    assert CANARY.encode() not in stored_bytes(tmp_path, seer.path)


def stored_bytes(folder: Path, skip: Path) -> bytes:
    """Every file the kernel wrote under ``folder`` (database, WAL, caches)."""
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and p != skip)


async def test_publish_takes_only_events(kernel: Any) -> None:
    with pytest.raises(TypeError, match="gigi_core.events"):
        await kernel.publish({"text": "not an event"})


async def test_every_console_line_is_published(tmp_path: Path) -> None:
    import io

    from gigi_core.default_plugins.console import ConsoleSurface

    seer = Observer("seer", tmp_path)
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("seer", seer)]) as kernel:
        await kernel.enable_plugin("console", "seer")
        out = io.StringIO()
        console = ConsoleSurface(kernel, stdin=io.StringIO("hello there\n"), stdout=out)
        await console.run()
        await kernel.events.drain()
        [event] = seer.seen
        assert isinstance(event, MessageCreated)
        assert (event.surface, event.guild_id, event.channel_id) == (
            "console",
            "console",
            "console",
        )
        assert event.text == "hello there" and event.author_id == console.actor.id


def test_bad_delivery_settings_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from gigi_core.errors import ConfigError
    from gigi_core.observers import EventBus

    monkeypatch.setenv("GIGI_EVENT_QUEUE_SIZE", "lots")
    with pytest.raises(ConfigError, match="GIGI_EVENT_QUEUE_SIZE"):
        EventBus(kernel=None)  # type: ignore[arg-type]


OBSERVING_MODULE = """\
from pathlib import Path
from gigi_core import hookimpl

@hookimpl
def register_manifests(register):
    register(Path(__file__).parent / "gigi.yaml")

@hookimpl
def register_tools(register):
    register("seen.echo", lambda ctx, text: {"text": text})

@hookimpl
def observe_event(event, kernel):
    raise ValueError("always")
"""


def test_plugins_list_json_shows_event_counters(
    plugin_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counters saved by a running process are what `gigi plugins list --json` shows."""
    import json

    from click.testing import CliRunner

    from gigi_core.cli import cli
    from gigi_core.cli.common import CliState
    from tests.plugin_factory import MANIFEST as FACTORY_MANIFEST

    plugin_factory.make(
        "seen", module=OBSERVING_MODULE, manifest=FACTORY_MANIFEST.format(name="seen")
    )
    home = tmp_path / "home"
    monkeypatch.setenv("GIGI_HOME", str(home))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "seen")

    async def publish_some() -> None:
        from gigi_core.kernel import Kernel

        kernel = await Kernel.open(None, home)
        try:
            await kernel.enable_plugin("g1", "seen")
            for _ in range(2):
                await kernel.publish(message())
            await kernel.events.drain()
        finally:
            await kernel.close()  # flushes the counters

    asyncio.run(publish_some())
    result = CliRunner().invoke(cli, ["plugins", "list", "--json"], obj=CliState())
    [seen] = [p for p in json.loads(result.output) if p["name"] == "seen"]
    assert seen["events"]["failed"] == 2 and seen["events"]["delivered"] == 0
    others = [p for p in json.loads(result.output) if p["name"] != "seen"]
    assert all("events" not in p for p in others)


async def test_a_change_during_a_facts_read_is_not_cached_stale(tmp_path: Path) -> None:
    """A pause committed while the router reads a guild's facts applies at once, not in 5 s."""
    seer = Observer("seer", tmp_path)
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("seer", seer)]) as kernel:
        await kernel.enable_plugin("g1", "seer")
        real_states = kernel.channels.states
        paused = False

        async def racing_states(guild_id: str) -> dict[str, str]:
            nonlocal paused
            before = await real_states(guild_id)
            if not paused:  # the admin's pause lands while this read is in flight
                paused = True
                await kernel.set_channel_state("g1", "c1", "paused")
            return before

        kernel.channels.states = racing_states  # type: ignore[method-assign]
        await kernel.events.guild_facts("g1")
        kernel.channels.states = real_states  # type: ignore[method-assign]
        await kernel.publish(message(text="after the pause"))
        await kernel.events.drain()
        assert [e for e in seer.seen if isinstance(e, MessageCreated)] == []


async def test_the_router_stops_when_cancelled_as_an_event_arrives(tmp_path: Path) -> None:
    """Shutdown cancels the router; an event arriving in the same loop turn must not swallow
    the cancellation (``asyncio.wait_for`` on Python 3.11 did: the kernel hung at close)."""
    seer = Observer("seer", tmp_path)
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("seer", seer)]) as kernel:
        await kernel.enable_plugin("g1", "seer")
        await kernel.publish(message())
        await kernel.events.drain()
        router = kernel.events._router
        assert router is not None
        await asyncio.sleep(0)  # the router waits on its inbox again
        await kernel.publish(message())  # wakes the waiting get() ...
        router.cancel()  # ... and the cancellation lands in the same loop turn
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(5):
                await router


class SyncObserver(Observer):
    """A synchronous observer (memory's shape): delivered without a loop turn per event."""

    @hookimpl
    def observe_event(self, event: Event, kernel: Any) -> None:  # type: ignore[override]
        if self.fail_on is not None and isinstance(event, self.fail_on):
            raise RuntimeError("sync observer broke")
        self.seen.append(event)


async def test_order_per_channel_holds_across_the_router_and_the_direct_path(
    tmp_path: Path,
) -> None:
    """A guild's first event waits in the router while its facts are read; events published
    meanwhile must not overtake it in any observer, even when the facts look cached by then,
    and once they are cached events go straight to the queues, still in order."""
    a, b = SyncObserver("a", tmp_path), Observer("b", tmp_path)
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("a", a), ("b", b)]) as kernel:
        for name in ("a", "b"):
            await kernel.enable_plugin("g1", name)
        real_states = kernel.channels.states
        reading = asyncio.Event()
        release = asyncio.Event()

        async def slow_states(guild_id: str) -> dict[str, str]:
            reading.set()
            await release.wait()
            return await real_states(guild_id)

        kernel.channels.states = slow_states  # type: ignore[method-assign]
        sent = [message(channel=f"c{i % 3}", text=str(i)) for i in range(300)]
        await kernel.publish(sent[0])
        await reading.wait()  # the router holds event 0 while it reads; its inbox is empty
        kernel.events._facts["g1"] = _fresh_facts()  # as if another read had cached them
        for event in sent[1:200]:  # facts now look cached, yet the router holds event 0
            await kernel.publish(event)
        release.set()
        await kernel.events.drain()
        kernel.channels.states = real_states  # type: ignore[method-assign]
        for event in sent[200:]:  # the direct path
            await kernel.publish(event)
        await kernel.events.drain()
        for observer in (a, b):
            assert [e.text for e in observer.seen] == [e.text for e in sent]  # type: ignore[attr-defined]
        assert kernel.events.status()["a"]["delivered"] == 300


def _fresh_facts() -> Any:
    import time

    from gigi_core.observers import _GuildFacts

    return _GuildFacts(frozenset({"a", "b"}), {}, time.monotonic() + 60)


async def test_a_burst_with_the_facts_cached_drops_only_for_the_blocked_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The direct path (facts cached) must pace a burst like the router: a blocked plugin
    drops what its queue cannot hold, a fast one (sync or async) gets every event."""
    monkeypatch.setenv("GIGI_EVENT_QUEUE_SIZE", "100")
    slow, fast = Observer("slow", tmp_path), Observer("fast", tmp_path)
    sync = SyncObserver("sync", tmp_path)
    fast.target = 10_001
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("slow", slow), ("fast", fast), ("sync", sync)]
    ) as kernel:
        for name in ("slow", "fast", "sync"):
            await kernel.enable_plugin("g1", name)
        await kernel.publish(message())  # reads and caches the guild's facts
        await kernel.events.drain()
        slow.gate = asyncio.Event()
        for _ in range(10_000):
            await kernel.publish(message())
        await asyncio.wait_for(fast.reached.wait(), 60)
        assert kernel.events.status()["slow"]["dropped"] == 10_000 - 101
        slow.gate.set()
        await kernel.events.drain()
        assert len(slow.seen) == 1 + 101 and len(sync.seen) == 10_001
        assert kernel.events.status()["sync"]["dropped"] == 0
