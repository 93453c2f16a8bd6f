"""The console's model-budget commands: ``/llm budget set|show|reset|remove`` for whoever
holds the capability (the operator, admin of the console guild, does), ``/quota`` for
anyone: their own allowance. Options are ``name=value`` words, as for plugin commands;
a budget is named as on the CLI (``member=``, ``channel=``, ``role=``, ``model=``, or
``each=member|channel``; none for the whole guild) and by its ``window=``.
"""

from __future__ import annotations

from typing import Any

from gigi_core import GigiError

# The console surface (``gigi_core.default_plugins.console.ConsoleSurface``), typed loosely:
# a plugin module names no other module's internals, even for type checking.
ConsoleSurface = Any

WRITE, READ = "llm.provider.write", "llm.usage.read"
TARGETS = ("member", "channel", "role", "model")
OPTIONS = {
    "set": {
        *TARGETS,
        "each",
        "limit",
        "unit",
        "window",
        "reset_hour",
        "exempt_roles",
        "exempt_admins",
    },
    "show": set(),
    "reset": {*TARGETS, "each", "window", "subject"},
    "remove": {*TARGETS, "each", "window"},
}
USAGE = (
    "Usage: /llm budget set limit=N [unit=tokens|money] [window=daily|weekly|monthly] "
    "[member=ID|channel=ID|role=ID|model=P[/M]|each=member|channel] [reset_hour=H] "
    "[exempt_roles=ID,ID] [exempt_admins=yes|no]; /llm budget show; "
    "/llm budget reset|remove window=W [the same target] (reset: [subject=ID])"
)


class BudgetUsage(GigiError):
    """A budget command the console cannot read; says what to type."""


def _options(verb: str, words: list[str]) -> dict[str, str]:
    allowed = OPTIONS[verb]
    out: dict[str, str] = {}
    for word in words:
        name, eq, value = word.partition("=")
        if not eq or not value:
            raise BudgetUsage(f"{word!r} is not name=value", hint=USAGE)
        if name not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise BudgetUsage(f"/llm budget {verb} has no option {name!r} (options: {known})")
        out[name] = value
    return out


def _scope(opts: dict[str, str]) -> tuple[str, str | None]:
    given = [(k, opts[k]) for k in TARGETS if k in opts]
    each = opts.get("each")
    if each is not None:
        if each not in ("member", "channel"):
            raise BudgetUsage(f"each={each!r}: use each=member or each=channel")
        given.append((each, "*"))
    if len(given) > 1:
        raise BudgetUsage("give at most one of member=, channel=, role=, model=, each=")
    return given[0] if given else ("guild", None)


def _int(opts: dict[str, str], name: str) -> int | None:
    raw = opts.get(name)
    if raw is None:
        return None
    if not raw.isdigit():
        raise BudgetUsage(f"{name}={raw!r} is not a whole number")
    return int(raw)


def describe(kind: str, scope_id: str) -> str:
    """A budget's scope in plain words (ids, never names)."""
    if kind == "guild":
        return "the guild"
    if scope_id == "*":
        return f"each {kind}"
    return f"{kind} {scope_id}"


async def _require(console: ConsoleSurface, capability: str) -> bool:
    """The policy engine decides, as on Discord; a refusal says why."""
    decision = await console.kernel.policy.capability(console.actor, capability, console.guild_id)
    if not decision.allowed:
        console.say(f"Not allowed: {decision.reason}.")
    return bool(decision.allowed)


async def cmd_llm(console: ConsoleSurface, rest: str) -> None:
    words = rest.split()
    if len(words) < 2 or words[0] != "budget" or words[1] not in OPTIONS:
        console.say(USAGE)
        return
    verb, opts = words[1], _options(words[1], words[2:])
    if not await _require(console, READ if verb == "show" else WRITE):
        return
    llm, guild, by = console.kernel.llm, console.guild_id, console.actor.id
    if verb == "show":
        await _show(console)
        return
    kind, ident = _scope(opts)
    if verb == "set":
        unit = opts.get("unit", "tokens")
        if "limit" not in opts:
            raise BudgetUsage("/llm budget set needs limit=N (tokens per window)", hint=USAGE)
        if unit not in ("tokens", "money"):
            raise BudgetUsage(f"unit={unit!r}: use tokens or money (2.50)", hint=USAGE)
        limit = opts["limit"]  # read as whole tokens or an amount of money by the kernel
        admins = opts.get("exempt_admins")
        if admins is not None and admins not in ("yes", "no"):
            raise BudgetUsage(f"exempt_admins={admins!r}: use yes or no")
        roles = opts.get("exempt_roles")
        budget = await llm.set_budget(
            guild,
            kind,
            ident,
            limit=limit,
            unit=unit,
            window=opts.get("window", "daily"),
            reset_hour=_int(opts, "reset_hour"),
            exempt_roles=None if roles is None else [r for r in roles.split(",") if r],
            exempt_admins=None if admins is None else admins == "yes",
            by=by,
        )
        exempt = ", ".join(budget.exempt_roles) or "no roles"
        held = "admins exempt" if budget.exempt_admins else "admins held too"
        console.say(
            f"{describe(budget.scope_kind, budget.scope_id)}: "
            f"{budget.amount(budget.limit)}{budget.noun} "
            f"{budget.window}, resets at {budget.reset_hour:02d}:00 UTC; exempt: {exempt}; "
            f"{held}."
        )
        return
    window = opts.get("window")
    if window is None:
        raise BudgetUsage(f"/llm budget {verb} needs window=daily|weekly|monthly", hint=USAGE)
    if verb == "reset":
        rows = await llm.reset_budget(
            guild, kind, ident, window, subject=opts.get("subject"), by=by
        )
        console.say(f"Reset the {window} budget of {describe(kind, ident or '')} ({rows} row(s)).")
        return
    budget = await llm.remove_budget(guild, kind, ident, window, by=by)
    console.say(f"Removed the {budget.window} budget of {describe(kind, ident or '')}.")


async def _show(console: ConsoleSurface) -> None:
    statuses = await console.kernel.llm.budget_status(console.guild_id)
    if not statuses:
        console.say(f"No budgets in guild {console.guild_id}: /llm budget set limit=N.")
    for s in statuses:
        b = s.budget
        left = "each its own" if s.left is None else f"{b.amount(s.left)} left"
        exempt = ",".join(b.exempt_roles) + (" +admins" if b.exempt_admins else "")
        console.say(
            f"  {describe(b.scope_kind, b.scope_id)} ({b.window}): {b.amount(s.spent)} of "
            f"{b.amount(b.limit)} spent, {b.amount(s.reserved)} held, {left}; "
            f"resets {_utc(s.resets_at)}; "
            f"exempt: {exempt.strip() or 'none'}"
        )


def _utc(moment: Any) -> str:
    return str(moment.strftime("%Y-%m-%d %H:%M UTC"))


async def cmd_quota(console: ConsoleSurface, rest: str) -> None:
    """What the person at the console has left on every budget that covers them."""
    allowances = await console.kernel.llm.quota(console.guild_id, console.actor, console.channel_id)
    if not allowances:
        console.say("No model budget limits you here.")
    for a in allowances:
        b = a.budget
        name = "your own" if b.scope_id == "*" else describe(b.scope_kind, b.scope_id)
        if b.scope_kind == "member" and b.scope_id == console.actor.id:
            name = "yours"
        if a.exempt:
            state = "you are exempt"
        else:
            state = (
                f"{b.amount(a.left)} of {b.amount(b.limit)}{b.noun} left; "
                f"resets {_utc(a.resets_at)}"
            )
        console.say(f"  {name} ({b.window}): {state}")
