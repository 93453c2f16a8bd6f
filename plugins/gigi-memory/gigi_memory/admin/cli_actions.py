"""``gigi memory enable|disable|status|purge|policy``: the admin commands from a shell.

Each runs the manifest action the slash command runs, through ``kernel.agent.direct``
(validated, policy-checked and audited like a slash command; the handlers are the same).
A destructive action waits for the kernel's confirmation, which the operator gives at the
terminal (or with ``--yes``); without a terminal and without ``--yes`` nothing is asked and
nothing is done.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

OPERATOR = "operator"


@dataclass(frozen=True)
class Who:
    """Who acts: the operator (a guild admin) unless ``--user`` names a member."""

    user: str | None
    roles: tuple[str, ...]
    admin: bool

    def actor(self) -> Any:
        from gigi_core import Actor

        if self.user is None:
            return Actor(id=OPERATOR, is_admin=True)
        return Actor(id=self.user, roles=frozenset(self.roles), is_admin=self.admin)


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options every admin command takes."""
    for option in reversed(
        (
            click.option("--guild", "guild_id", required=True, help="The guild (server) id."),
            click.option(
                "--user", help="Act as this member (their grants apply); default: the operator."
            ),
            click.option(
                "--role", "roles", multiple=True, help="A role --user holds (repeatable)."
            ),
            click.option("--admin", is_flag=True, help="--user is a guild admin."),
            click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
        )
    ):
        fn = option(fn)
    return fn


def add_admin_commands(memory: click.Group) -> None:
    @memory.command("enable")
    @click.option("--channel", "channel_id", required=True, help="The channel to remember.")
    @click.option(
        "--retention-days",
        type=click.IntRange(1, 3650),
        help="Days to keep its messages (default: the server's).",
    )
    @_common
    @click.pass_context
    def enable(ctx: click.Context, channel_id: str, retention_days: int | None, **kw: Any) -> None:
        """Remember a channel from now on (a retention is needed: this one or the server's)."""
        args = {"channel": channel_id} | _given(retention_days=retention_days)
        result = _call(ctx, "memory.enable", args, channel_id=channel_id, **kw)
        _show(result, kw["as_json"], _enabled_text)

    @memory.command("disable")
    @click.option("--channel", "channel_id", required=True, help="The channel to stop remembering.")
    @_common
    @click.pass_context
    def disable(ctx: click.Context, channel_id: str, **kw: Any) -> None:
        """Stop remembering a channel; what is stored stays until its retention ends or a purge."""
        result = _call(ctx, "memory.disable", {"channel": channel_id}, channel_id=channel_id, **kw)
        _show(result, kw["as_json"], _disabled_text)

    @memory.command("status")
    @_common
    @click.pass_context
    def status(ctx: click.Context, **kw: Any) -> None:
        """The policy, every channel's mode and stored messages, the writer, vectors, syncs."""
        _show(_call(ctx, "memory.status", {}, **kw), kw["as_json"], _status_text)

    @memory.command("purge")
    @click.option("--channel", "channel_id", help="Purge this channel (and its threads).")
    @click.option("--everything", is_flag=True, help="Purge every channel of the guild.")
    @click.option("--yes", is_flag=True, help="Do it without asking (required without a terminal).")
    @_common
    @click.pass_context
    def purge(
        ctx: click.Context, channel_id: str | None, everything: bool, yes: bool, **kw: Any
    ) -> None:
        """Delete what memory holds for a channel or the whole guild (settings are kept).

        Destructive: asks for confirmation, as /memory purge does.
        """
        if bool(channel_id) == everything:
            raise click.UsageError("give exactly one of --channel C or --everything")
        if not yes and not _terminal():
            raise click.UsageError("refusing to purge without --yes (no terminal to ask)")
        where = f"channel {channel_id}" if channel_id else "every channel"
        question = (
            f"Delete everything memory holds for {where} of guild {kw['guild_id']}? "
            "This cannot be undone."
        )
        args = {"channel": channel_id} if channel_id else {"everything": True}
        result = _call(
            ctx, "memory.purge", args, channel_id=channel_id, approve=(yes, question), **kw
        )
        _show(result, kw["as_json"], _purged_text)

    @memory.command("policy")
    @click.option("--enabled/--disabled", "enabled", default=None, help="Memory on or off.")
    @click.option(
        "--retention-days", type=click.IntRange(1, 3650), help="Default days to keep messages."
    )
    @click.option(
        "--storage",
        type=click.Choice(["encrypted", "index_only", "metadata_only"]),
        help="What is kept of each message's text (a stricter mode rewrites what is stored).",
    )
    @click.option("--allow-bots/--no-allow-bots", default=None, help="Remember bots' messages.")
    @click.option(
        "--embeddings", type=click.Choice(["local", "profile", "off"]), help="Vector source."
    )
    @click.option("--redact-emails/--no-redact-emails", default=None, help="Mask e-mails.")
    @click.option("--redact-phones/--no-redact-phones", default=None, help="Mask phone numbers.")
    @click.option("--redact-add", metavar="REGEX", help="Also mask matches of REGEX.")
    @click.option("--redact-remove", metavar="REGEX", help="Remove one of the guild's patterns.")
    @_common
    @click.pass_context
    def policy(ctx: click.Context, **kw: Any) -> None:
        """Show (no options) or change the guild's memory policy."""
        names = (
            "enabled",
            "retention_days",
            "storage",
            "allow_bots",
            "embeddings",
            "redact_emails",
            "redact_phones",
            "redact_add",
            "redact_remove",
        )
        args = _given(**{n: kw.pop(n) for n in names})
        _show(_call(ctx, "memory.policy", args, **kw), kw["as_json"], _policy_text)


def _terminal() -> bool:
    """Whether someone can be asked (stdin is a terminal)."""
    return sys.stdin.isatty()


def _given(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _call(
    ctx: click.Context,
    action: str,
    args: dict[str, Any],
    *,
    guild_id: str,
    user: str | None,
    roles: tuple[str, ...],
    admin: bool,
    as_json: bool,
    channel_id: str | None = None,
    approve: tuple[bool, str] | None = None,
) -> Any:
    import asyncio  # here, not at import: `gigi plugins list` stays a cold start

    from gigi_core import GigiError

    root = ctx.find_root().obj
    who = Who(user, roles, admin)
    try:
        return asyncio.run(
            _direct(
                getattr(root, "database_url", None),
                getattr(root, "home", None),
                action,
                args,
                who,
                guild_id,
                channel_id,
                approve,
            )
        )
    except GigiError as exc:
        raise click.ClickException(exc.text_for("shell")) from None


async def _direct(
    url: str | None,
    home: str | None,
    action: str,
    args: dict[str, Any],
    who: Who,
    guild_id: str,
    channel_id: str | None,
    approve: tuple[bool, str] | None,
) -> Any:
    import asyncio

    from gigi_core import Kernel
    from gigi_core.surfaces import Request

    actor = who.actor()
    kernel = await Kernel.open(url, home)
    try:
        request = Request(
            actor=actor,
            guild_id=guild_id,
            channel_id=channel_id,
            kind="direct",
            text="",
            surface="shell",
        )
        reply = await kernel.agent.direct(request, action, args)
        if reply.status == "awaiting_confirmation":
            yes, question = approve or (False, f"Run {action}?")
            if not yes and not await asyncio.to_thread(click.confirm, question):
                await kernel.agent.reject(reply.run_id, actor)
                raise click.ClickException("not confirmed; nothing was done")
            reply = await kernel.agent.confirm(reply.run_id, actor)
        if not reply.citations:  # the call did not run (a refusal without a typed error)
            raise click.ClickException(reply.text or f"{action} did not run ({reply.status})")
        return reply.citations[0].result
    finally:
        await kernel.close()


# -- output for people (``--json`` prints the result itself) ----------------------------------


def _show(result: Any, as_json: bool, text: Callable[[dict[str, Any]], list[str]]) -> None:
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
        return
    for line in text(result):
        click.echo(line)


def _enabled_text(r: dict[str, Any]) -> list[str]:
    return [
        f"channel {r['channel_id']}: remembered from now on, kept {r['retention_days']} days "
        f"({r['retention_source']}); since {r['remembering_since']}",
        r["note"],
    ]


def _disabled_text(r: dict[str, Any]) -> list[str]:
    return [f"channel {r['channel_id']}: off (was {r['was']})", r["note"]]


def _purged_text(r: dict[str, Any]) -> list[str]:
    where = f"channel {r['channel_id']}" if r["purged"] == "channel" else "every channel"
    return [f"purged {r['messages']:,} message(s) of {where}"]


def _policy_lines(p: dict[str, Any]) -> list[str]:
    redaction = p.get("redaction") or {}
    masks = [k for k in ("emails", "phones") if redaction.get(k)]
    patterns = redaction.get("patterns") or []
    return [
        f"memory {'on' if p['enabled'] else 'off'}; "
        + (
            f"default retention {p['retention_days']} days"
            if p["retention_days"]
            else "no default retention"
        )
        + f"; storage {p['storage']}; bots "
        f"{'remembered' if p['allow_bots'] else 'not remembered'}; embeddings {p['embeddings']}",
        "masked besides keys and tokens: "
        + (", ".join(masks) or "nothing")
        + (f"; own patterns: {', '.join(patterns)}" if patterns else ""),
    ]


def _policy_text(r: dict[str, Any]) -> list[str]:
    lines = _policy_lines(r["policy"])
    lines.append(f"changed: {', '.join(r['changed'])}" if r["changed"] else "(nothing changed)")
    for key, label in (("rewritten", "messages rewritten"), ("vectors_deleted", "vectors deleted")):
        if key in r:
            lines.append(f"{label}: {r[key]:,}")
    if r.get("note"):
        lines.append(r["note"])
    return lines


def _status_text(r: dict[str, Any]) -> list[str]:
    lines = _policy_lines(r["policy"])
    channels = r["channels"]
    lines.append(f"channels ({len(channels)}):" if channels else "channels: none remembered")
    for c in channels:
        days = f"{c['retention_days']} days" if c["retention_days"] else "no retention"
        lines.append(
            f"  {c['channel_id']}: {c['mode']}, {days}, {c['messages']:,} message(s)"
            + (f" ({c['oldest']} .. {c['newest']})" if c["messages"] else "")
        )
    w = r["writer"]
    lines.append(
        f"writer: {w['queued']:,} queued, lag {w['lag_seconds']} s, {w['written']:,} written, "
        f"{w['dropped']:,} dropped, {w['failed']:,} failed, {w['retries']:,} retries"
        + (f", last error {w['last_error']}" if w["last_error"] else "")
    )
    v = r["vectors"]
    lines.append(
        f"vectors: {v['source']}"
        + (f" ({v['model']})" if v.get("model") else "")
        + (
            f", {v['messages_without_vectors']:,} message(s) not embedded yet"
            if v.get("messages_without_vectors") is not None
            else ""
        )
    )
    for s in r["syncs"]:
        lines.append(
            f"sync {s['channel_id']}: {s['status']}, {s['pages']} page(s), {s['seen']:,} read, "
            f"{s['imported']:,} remembered, {s['skipped']:,} skipped"
            + (f", {s['error']}" if s["error"] else "")
        )
    purge = r["last_purge"]
    lines.append(
        f"last retention purge: {purge['at']} ({purge['messages']:,} message(s))"
        if purge["at"]
        else "last retention purge: never"
    )
    return lines
