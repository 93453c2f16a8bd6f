"""``gigi memory import``: a DiscordChatExporter JSON export through the live ingest path.

The whole file is read and checked first; the first problem is reported with its JSON path
(``$.messages[12].author.id``) and nothing is imported. Then every message passes the same
policy gate as a live one (the channel must be enabled, with a retention; bots only when
allowed; nothing from while the channel was paused or secure) except the "since the channel was
enabled" rule: an import is an admin's explicit backfill. Message ids dedupe, so importing
twice inserts nothing twice; deleted messages stay deleted.

An export is a file anyone can write: one of another guild (or, with ``--channel``, another
channel) is refused unless the operator says so, and a message Discord could not have sent
(a time more than a day ahead, text over 4,000 characters) is skipped and counted.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from gigi_memory import tables
from gigi_memory.ingest.operations import Op
from gigi_memory.privacy import tombstones

# DiscordChatExporter's message types that are conversation (the rest are system notices).
CONVERSATION_TYPES = frozenset({"Default", "Reply"})
NEVER_CHANNEL_TYPES = {
    "DirectTextChat": "a direct message",
    "DirectGroupTextChat": "a group DM",
    "GuildPrivateThread": "a private thread",
}
BATCH = 1000
#: Discord's own cap on a message's text (with Nitro; 2,000 without): longer is forged.
MAX_CONTENT_CHARS = 4000
#: How far ahead of this machine's clock a message's time may be (clock skew): later is forged.
FUTURE_SLACK_MS = 24 * 3600 * 1000
AUTHOR_NAME_MAX = 100


class ExportError(ValueError):
    """The file is not a DiscordChatExporter JSON export; ``path`` says where it went wrong."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class ExportMessage:
    id: str
    type: str
    created_ms: int
    edited_ms: int | None
    content: str
    author_id: str
    author_is_bot: bool
    mentions: tuple[str, ...]
    reply_to_id: str | None
    # The export's ``author.nickname``, else ``author.name``, cut at 100: not used yet.
    author_name: str | None = None


@dataclass(frozen=True)
class Export:
    guild_id: str
    channel_id: str
    channel_type: str | None
    messages: list[ExportMessage]


@dataclass
class ImportReport:
    guild_id: str
    channel_id: str
    total: int = 0
    imported: int = 0
    already: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "guild_id": self.guild_id,
            "channel_id": self.channel_id,
            "messages": self.total,
            "imported": self.imported,
            "already_remembered": self.already,
            "skipped": dict(sorted(self.skipped.items())),
        }


# -- reading and checking ---------------------------------------------------------------------


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ExportError(path, f"expected an object, found {_kind(value)}")
    return value


def _str(
    obj: dict[str, Any], key: str, path: str, *, optional: bool = False, empty: bool = False
) -> str | None:
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not empty and not value.strip()):
        found = "an empty string" if isinstance(value, str) else _kind(value)
        raise ExportError(f"{path}.{key}", f"expected a non-empty string, found {found}")
    return value


def _time(obj: dict[str, Any], key: str, path: str, *, optional: bool = False) -> int | None:
    text = _str(obj, key, path, optional=optional)
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ExportError(f"{path}.{key}", f"not an ISO 8601 time: {text[:40]!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def _author_name(author: dict[str, Any], path: str) -> str | None:
    """The name shown in the guild (``nickname``), else the account's (``name``); None if
    neither is given. A present value that is not a string is a malformed export."""
    for key in ("nickname", "name"):
        value = author.get(key)
        if value is not None and not isinstance(value, str):
            raise ExportError(f"{path}.{key}", f"expected a string, found {_kind(value)}")
    for key in ("nickname", "name"):
        value = author.get(key)
        if isinstance(value, str) and value.strip():
            return value[:AUTHOR_NAME_MAX]
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def parse_export(data: Any) -> Export:
    """Check the whole export; raise ``ExportError`` at the first problem."""
    root = _obj(data, "$")
    guild = _obj(root.get("guild"), "$.guild")
    channel = _obj(root.get("channel"), "$.channel")
    guild_id = _str(guild, "id", "$.guild")
    channel_id = _str(channel, "id", "$.channel")
    channel_type = _str(channel, "type", "$.channel", optional=True)
    raw = root.get("messages")
    if not isinstance(raw, list):
        raise ExportError("$.messages", f"expected an array, found {_kind(raw)}")
    messages = []
    for i, item in enumerate(raw):
        path = f"$.messages[{i}]"
        msg = _obj(item, path)
        author = _obj(msg.get("author"), f"{path}.author")
        is_bot = author.get("isBot", False)
        if not isinstance(is_bot, bool):
            raise ExportError(f"{path}.author.isBot", f"expected a boolean, found {_kind(is_bot)}")
        mentions_raw = msg.get("mentions", [])
        if not isinstance(mentions_raw, list):
            raise ExportError(f"{path}.mentions", f"expected an array, found {_kind(mentions_raw)}")
        mentions = tuple(
            _str(_obj(m, f"{path}.mentions[{j}]"), "id", f"{path}.mentions[{j}]") or ""
            for j, m in enumerate(mentions_raw)
        )
        reference = msg.get("reference")
        reply_to = None
        if isinstance(reference, dict) and isinstance(reference.get("messageId"), str):
            reply_to = reference["messageId"]
        messages.append(
            ExportMessage(
                id=_str(msg, "id", path) or "",
                type=_str(msg, "type", path, optional=True) or "Default",
                created_ms=_time(msg, "timestamp", path) or 0,
                edited_ms=_time(msg, "timestampEdited", path, optional=True),
                content=_str(msg, "content", path, empty=True) or "",
                author_id=_str(author, "id", f"{path}.author") or "",
                author_is_bot=is_bot,
                mentions=mentions,
                reply_to_id=reply_to,
                author_name=_author_name(author, f"{path}.author"),
            )
        )
    return Export(guild_id or "", channel_id or "", channel_type, messages)


def read_export(path: Path) -> Export:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError("$", f"cannot read {path}: {type(exc).__name__}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExportError(
            "$", f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    return parse_export(data)


# -- importing --------------------------------------------------------------------------------


class ImportRefused(Exception):
    """The export cannot go into memory as asked (the channel is not enabled, ...)."""


class ExportMismatch(ImportRefused):
    """The export is of another guild or channel than the one named: a usage error."""


def check_target(
    export: Export,
    *,
    guild_id: str,
    channel_id: str | None,
    allow_other_guild: bool = False,
    allow_other_channel: bool = False,
) -> None:
    """Refuse an export of another guild (or, when a channel is named, another channel):
    its messages would be stored, searched and kept under the wrong guild's policy."""
    if export.guild_id != guild_id and not allow_other_guild:
        raise ExportMismatch(
            f"the export is of guild {export.guild_id} (its guild.id), not guild {guild_id} "
            f"(--guild); nothing was imported. Check --guild, or add --allow-other-guild to "
            f"store its messages under guild {guild_id} anyway"
        )
    if channel_id is not None and export.channel_id != channel_id and not allow_other_channel:
        raise ExportMismatch(
            f"the export is of channel {export.channel_id} (its channel.id), not channel "
            f"{channel_id} (--channel); nothing was imported. Leave out --channel, or add "
            f"--allow-other-channel to store its messages under channel {channel_id} anyway"
        )


async def run_import(
    kernel: Any,
    export: Export,
    *,
    guild_id: str,
    channel_id: str | None = None,
    progress: Callable[[int], None] | None = None,
    allow_other_guild: bool = False,
    allow_other_channel: bool = False,
) -> ImportReport:
    from gigi_memory.privacy.erasures import Erased
    from gigi_memory.privacy.withheld_spans import WithheldSpans
    from gigi_memory.service import service_of

    check_target(
        export,
        guild_id=guild_id,
        channel_id=channel_id,
        allow_other_guild=allow_other_guild,
        allow_other_channel=allow_other_channel,
    )
    channel = channel_id or export.channel_id
    if export.channel_type in NEVER_CHANNEL_TYPES:
        raise ImportRefused(
            f"the export is of {NEVER_CHANNEL_TYPES[export.channel_type]}: never remembered"
        )
    if "memory" not in await kernel.plugin_state.enabled_plugins(guild_id):
        raise ImportRefused(
            f"the memory plugin is not enabled in guild {guild_id}: "
            f"gigi plugins enable memory --guild {guild_id}"
        )
    svc = service_of(kernel)
    if not svc.cache.loaded:
        await svc.start()
    mode = svc.cache.channel(guild_id, channel)
    if mode is None or mode.mode != "on" or not svc.cache.retention_of(guild_id, mode):
        raise ImportRefused(
            f"channel {channel} is not remembered: gigi memory enable --guild {guild_id} "
            f"--channel {channel} --retention-days N first"
        )
    if await kernel.channels.get(guild_id, channel) == "secure":
        raise ImportRefused(f"channel {channel} is secure: nothing is remembered from it")
    withheld = await WithheldSpans(kernel, guild_id).load(channel)
    report = ImportReport(guild_id, channel, total=len(export.messages))
    existing = await _existing(svc, guild_id, [m.id for m in export.messages])
    erased = await Erased.load(kernel, svc, guild_id)
    async with svc.engine.connect() as conn:  # the writer checks again, after what is queued
        marks = await tombstones.load(conn, guild_id, [m.id for m in export.messages])
    queued: list[str] = []
    seen: set[str] = set()
    names = svc.cache.guild(guild_id).storage != "metadata_only"
    latest = int(time.time() * 1000) + FUTURE_SLACK_MS
    for done, msg in enumerate(export.messages, start=1):
        reason = _implausible(msg, latest) or _skip(svc, guild_id, channel, msg, withheld)
        if reason is None and erased.before(msg.author_id, msg.created_ms):
            reason = "authors who asked to be forgotten"
        if reason is None:
            reason = tombstones.blocks(
                marks.get(msg.id), tombstones.copy_time_of_export(msg.created_ms, msg.edited_ms)
            )
        if reason is None and (msg.id in existing or msg.id in seen):
            report.already += 1
        elif reason is not None:
            report.skipped[reason] += 1
        else:
            seen.add(msg.id)
            svc.writer.enqueue(_op(guild_id, channel, msg, svc))
            if names:  # search finds members by the names they wrote under
                svc.authors.note(guild_id, msg.author_id, msg.author_name, msg.created_ms)
            queued.append(msg.id)
            if len(queued) % BATCH == 0:
                await svc.writer.flush()
        if progress is not None:
            progress(done)
    await svc.writer.flush()
    await svc.authors.flush()
    report.imported = len(await _existing(svc, guild_id, queued)) if queued else 0
    failed = len(queued) - report.imported
    if failed:
        report.skipped["not written (see the log)"] += failed
    return report


def _implausible(msg: ExportMessage, latest_ms: int) -> str | None:
    """A message Discord could not have sent: refused, not clamped (a time moved or a text
    cut would be stored as if the author had written it so; 9999 would never expire)."""
    if msg.created_ms > latest_ms or (msg.edited_ms or 0) > latest_ms:
        return "future timestamp"
    if len(msg.content) > MAX_CONTENT_CHARS:
        return "too long"
    return None


def _skip(svc: Any, guild_id: str, channel: str, msg: ExportMessage, withheld: Any) -> str | None:
    if msg.type not in CONVERSATION_TYPES:
        return "system messages"
    paused_or_secure = withheld.reason(msg.created_ms, channel)
    if paused_or_secure is not None:
        return paused_or_secure
    gate = svc.cache.gate(
        guild_id=guild_id,
        channel_id=channel,
        parent_id=None,
        kind="text",
        is_bot=msg.author_is_bot,
        created_ms=msg.created_ms,
        live=False,
    )
    if gate.ingest:
        return None
    return {"bot or webhook": "bots", "past retention": "past retention"}.get(
        gate.reason, gate.reason
    )


def _op(guild_id: str, channel: str, msg: ExportMessage, svc: Any) -> Op:
    mode = svc.cache.channel(guild_id, channel)
    return Op(
        "create",
        guild_id,
        {
            "message_id": msg.id,
            "channel_id": channel,
            "parent_id": None,
            "author_id": msg.author_id,
            "surface": "discord",
            "reply_to_id": msg.reply_to_id,
            "created_ms": msg.created_ms,
            "edited_ms": msg.edited_ms,
            "copy_ms": tombstones.copy_time_of_export(msg.created_ms, msg.edited_ms),
            "text": msg.content,
            "mentions": msg.mentions,
            "retention_days": svc.cache.retention_of(guild_id, mode),
            "storage": svc.cache.guild(guild_id).storage,
        },
    )


async def _existing(svc: Any, guild_id: str, ids: list[str]) -> set[str]:
    m = tables.messages
    found: set[str] = set()
    unique = list(dict.fromkeys(ids))
    async with svc.engine.connect() as conn:
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            found.update(
                (
                    await conn.scalars(
                        sa.select(m.c.message_id).where(
                            m.c.guild_id == guild_id, m.c.message_id.in_(part)
                        )
                    )
                ).all()
            )
    return found
