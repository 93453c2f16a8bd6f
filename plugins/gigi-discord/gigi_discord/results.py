"""How the results of exact commands read on Discord: sentences, listings and files.

The runtime returns tool results verbatim (``Reply.citations``). For manifest-declared
commands a few result shapes are conventions every surface understands:

- ``{"message": "..."}``: the sentence to show (still code-written, never the model's);
- ``{"file": "name.json", "data": ...}``: ``data`` is sent as a JSON file, never inlined;
  for the actions in ``DM_FILES`` (a member's own data export) the file goes by DM, with
  an ephemeral attachment only if the DM fails;
- ``{"job": {"id": ..., "follow": true}}``: the reply is edited with the job's progress
  until it ends (``gigi_discord.job_follow``);
- the privacy statements (``gigi.privacy.info``) and deletion counts (``gigi.privacy.delete``)
  get readable listings. Any other result is shown as JSON, as ``/agent call`` does.
"""

from __future__ import annotations

import io
import json
import logging
import re
from dataclasses import dataclass, field, replace
from typing import Any

import discord

from gigi_core.surfaces import Citation, Reply, followed_job
from gigi_discord.job_follow import follow, poll_seconds

log = logging.getLogger(__name__)

DM_FILES = frozenset({"gigi.privacy.export"})
MAX_FILE_BYTES = 8 * 1024 * 1024  # under Discord's smallest upload limit for bots


@dataclass
class Presented:
    """A reply with its results turned into text, plus the files to attach or DM."""

    reply: Reply
    files: list[tuple[str, bytes]] = field(default_factory=list)
    dm_files: list[tuple[str, bytes]] = field(default_factory=list)


def safe_filename(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name.strip()).lstrip(".")[:90] or "gigi-data"
    return cleaned if cleaned.endswith(".json") else cleaned + ".json"


def json_file(data: Any) -> bytes:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True, default=str).encode()


def _statements(result: dict[str, Any]) -> str:
    lines = []
    for item in result.get("plugins") or []:
        if not isinstance(item, dict):
            continue
        name = item.get("plugin") or item.get("name") or "?"
        statement = item.get("data_statement") or "No statement."
        lines.append(f"**{name}**: {statement}")
    if not lines:
        return "No plugin is enabled in this server, so Gigi keeps nothing about you here."
    head = "What Gigi keeps in this server, plugin by plugin:"
    tail = "`/gigi privacy export` sends you a copy; `/gigi privacy delete` erases it."
    return "\n".join([head, *lines, tail])


def _counts(result: dict[str, Any]) -> str:
    lines = [str(result.get("message") or f"Deleted {result.get('total', 0)} item(s).")]
    parts: dict[str, dict[str, Any]] = {"Gigi": result.get("kernel") or {}}
    parts.update(result.get("plugins") or {})
    for owner, counts in parts.items():
        shown = ", ".join(
            f"{n} {what.replace('_', ' ')}" for what, n in sorted(counts.items()) if n
        )
        if shown:
            lines.append(f"- **{owner}**: {shown}")
    for plugin in sorted(result.get("errors") or {}):
        lines.append(f"- **{plugin}** could not delete its data; the operator's log says why.")
    return "\n".join(lines)


def _as_text(citation: Citation) -> str | None:
    """The readable form of one result, or None to keep it as JSON."""
    result = citation.result
    if not isinstance(result, dict):
        return None
    if citation.tool == "gigi.privacy.info":
        return _statements(result)
    if citation.tool == "gigi.privacy.delete" and "total" in result:
        return _counts(result)
    message = result.get("message")
    return message if isinstance(message, str) and message.strip() else None


def present(reply: Reply) -> Presented:
    texts = [reply.text.strip()] if reply.text.strip() else []
    kept: list[Citation] = []
    shown = Presented(reply)
    for citation in reply.citations:
        result = citation.result
        if isinstance(result, dict) and isinstance(result.get("file"), str) and "data" in result:
            name = safe_filename(result["file"])
            target = shown.dm_files if citation.tool in DM_FILES else shown.files
            target.append((name, json_file(result["data"])))
            continue
        text = _as_text(citation)
        if text is None:
            kept.append(citation)
        else:
            texts.append(text)
    shown.reply = replace(reply, text="\n\n".join(texts), citations=kept)
    return shown


def _discord_files(files: list[tuple[str, bytes]]) -> list[discord.File]:
    return [discord.File(io.BytesIO(data), filename=name) for name, data in files]


async def send_dm_files(user: discord.abc.User, files: list[tuple[str, bytes]], where: str) -> bool:
    """Whether the member got the files by DM (closed DMs and blocks are normal)."""
    try:
        await user.send(
            f"Here is the data Gigi holds about you in {where}, as you asked.",
            files=_discord_files(files),
            allowed_mentions=discord.AllowedMentions.none(),
        )
    except discord.HTTPException as exc:
        log.info("could not DM a data export: %s", type(exc).__name__)
        return False
    return True


async def send_result(
    interaction: discord.Interaction[Any],
    reply: Reply,
    *,
    bot: Any,
    ephemeral: bool,
    admin: bool = False,
) -> None:
    """Follow up a deferred interaction with a command's (or a confirmation's) result."""
    from gigi_discord.render import send_reply

    shown = present(reply)
    files = list(shown.files)
    notes: list[str] = []
    if shown.dm_files:
        if sum(len(d) for _, d in shown.dm_files) > MAX_FILE_BYTES:
            notes.append(
                "Your data is too large to send on Discord. The operator can export it for "
                "you with `gigi privacy export`."
            )
        else:
            where = f"**{interaction.guild.name}**" if interaction.guild else "this conversation"
            if await send_dm_files(interaction.user, shown.dm_files, where):
                names = ", ".join(n for n, _ in shown.dm_files)
                notes.append(f"I sent you your data by direct message ({names}).")
            else:
                files += shown.dm_files
                notes.append(
                    "I could not send you a direct message (your privacy settings may block "
                    "them), so the file is attached here; only you can see it."
                )
        ephemeral = True  # a member's own data is never shown to the channel
    elif sum(len(d) for _, d in files) > MAX_FILE_BYTES:
        files = []
        notes.append("The result is too large to attach on Discord.")
    text = "\n\n".join([shown.reply.text, *notes]).strip()
    sent = await send_reply(
        interaction,
        replace(shown.reply, text=text),
        bot=bot,
        admin=admin,
        files=_discord_files(files) if files else None,
        ephemeral=ephemeral,
    )
    job_id = followed_job(reply)
    if job_id is not None and sent:
        last = sent[-1]
        bot.spawn(follow(bot.kernel, last, last.content, job_id, every=poll_seconds()))
