"""The test plugins and seed data the privacy tests share: one member with data in two guilds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.llm.records import Owner
from tests.llm.service_helpers import USER_KEY, guild_usage

USER = "u-CANARY-4242"  # distinctive, so a scan of every table finds any copy of it
OTHER = "u-other-7"
MEMBER = Actor(id=USER)
NEIGHBOUR = Actor(id=OTHER)
ADMIN = Actor(id="boss", is_admin=True)


def manifest_text(name: str, actions: str = "actions: []\n") -> str:
    return (
        "manifest_version: 1\n"
        "plugin:\n"
        f"  name: {name}\n"
        "  version: 0.0.1\n"
        f"  description: Test plugin {name}.\n"
        f"  data_statement: {name} keeps notes members write.\n"
        "  capabilities:\n"
        f"    - {{name: {name}.use, description: Use it, default: everyone}}\n" + actions
    )


NOTES_ACTIONS = """\
actions:
  - {name: notes.add, description: Add a note, safety: write, capability: notes.use,
     confirm: never, args: {type: object}}
  - {name: notes.wipe, description: Wipe notes, safety: destructive, capability: notes.use,
     confirm: always, args: {type: object}}
"""


class Notes:
    """A plugin keeping notes per (guild, user) in memory, answering every privacy hook."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "notes.yaml"
        self.path.write_text(manifest_text("notes", NOTES_ACTIONS))
        self.notes: dict[tuple[str, str], list[str]] = {}
        self.asked: list[tuple[str, str | None, str | None]] = []

    def add(self, guild: str, user: str, *texts: str) -> None:
        self.notes.setdefault((guild, user), []).extend(texts)

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        register("notes.add", lambda ctx: {"ok": True})
        register("notes.wipe", lambda ctx: {"ok": True})

    def _mine(self, user_id: str | None, guild_id: str | None) -> list[tuple[str, str]]:
        return [
            key
            for key in self.notes
            if (user_id is None or key[1] == user_id) and (guild_id is None or key[0] == guild_id)
        ]

    @hookimpl
    def export_user_data(self, user_id, guild_id, kernel):
        self.asked.append(("export", user_id, guild_id))
        return {"notes": [n for key in self._mine(user_id, guild_id) for n in self.notes[key]]}

    @hookimpl
    async def delete_user_data(self, user_id, guild_id, kernel):  # an async hook works too
        self.asked.append(("delete", user_id, guild_id))
        count = 0
        for key in self._mine(user_id, guild_id):
            count += len(self.notes.pop(key))
        return {"notes": count}

    @hookimpl
    def purge_guild_data(self, guild_id, kernel):
        self.asked.append(("purge", None, guild_id))
        count = 0
        for key in self._mine(None, guild_id):
            count += len(self.notes.pop(key))
        return {"notes": count}


class Boom:
    """Every privacy hook raises (with a message that must not reach the member)."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "boom.yaml"
        self.path.write_text(manifest_text("boom"))

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def export_user_data(self, user_id, guild_id, kernel):
        raise RuntimeError("secret detail of boom")

    @hookimpl
    def delete_user_data(self, user_id, guild_id, kernel):
        raise RuntimeError("secret detail of boom")

    @hookimpl
    def purge_guild_data(self, guild_id, kernel):
        raise RuntimeError("secret detail of boom")


class Odd:
    """Exports something that is not JSON."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "odd.yaml"
        self.path.write_text(manifest_text("odd"))

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def export_user_data(self, user_id, guild_id, kernel):
        return {"tags": {"a", "b"}}


def req(actor: Actor, guild: str = "g1", channel: str = "c1") -> Request:
    return Request(actor=actor, guild_id=guild, channel_id=channel, kind="slash", text="")


def result_of(reply: Any) -> Any:
    assert reply.status == "done", reply
    [citation] = reply.citations
    return citation.result


async def usage(kernel: Any, actor: str, guild: str, n: int) -> None:
    record = guild_usage(guild, n, request_id=f"r-{guild}-{n}-{len(actor)}", actor_id=actor)
    await kernel.llm.usage_log.record(record)


async def seed(kernel: Any, notes: Notes) -> None:
    """USER has data in g1 and g2; OTHER has some in g1."""
    await kernel.llm.add_credential(Owner.user(USER), "openai", "mine", USER_KEY, by=USER)
    await kernel.llm.set_profile(Owner.user(USER), "chat", "mine", "gpt-test")
    for guild in ("g1", "g2"):
        await kernel.add_grant(guild, "notes.use", "user", USER, by="boss")
        await usage(kernel, USER, guild, 10)
        result_of(await kernel.agent.direct(req(MEMBER, guild), "notes.add", {}))
    waiting = await kernel.agent.direct(req(MEMBER, "g1"), "notes.wipe", {})
    assert waiting.status == "awaiting_confirmation"
    await kernel.add_grant("g1", "notes.use", "user", OTHER, by=USER)  # USER granted it
    await kernel.set_channel_state("g1", "c5", "secure", by=USER)
    await usage(kernel, OTHER, "g1", 3)
    result_of(await kernel.agent.direct(req(NEIGHBOUR, "g1"), "notes.add", {}))
    notes.add("g1", USER, "first", "second")
    notes.add("g2", USER, "third")
    notes.add("g1", OTHER, "not yours")
