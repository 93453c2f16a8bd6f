"""The console's ``/llm models provider=LABEL`` (what one of the console guild's keys can
call) and ``/llm failover set|show|clear`` (which of its own keys a failing call moves on
to), decided by the policy engine as on Discord. Every other ``/llm`` line goes on to the
policy and budget commands (``console_policy``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gigi_core import GigiError
from gigi_core.default_plugins import console_policy

ConsoleSurface = Any  # ``console.ConsoleSurface``, typed loosely (see console_budget)

SELECT = "llm.provider.select"
ANY = ("llm.provider.write", SELECT, "llm.provider.test")
OPTIONS = {
    "models": {"provider", "refresh"},
    "set": {"purpose", "order", "on"},
    "show": {"purpose"},
    "clear": {"purpose"},
}
USAGE = (
    "Usage: /llm models provider=LABEL|PROVIDER [refresh=yes]; "
    "/llm failover set purpose=P order=LABEL[:MODEL],... [on=rate_limited,server,...]; "
    "/llm failover show [purpose=P]; /llm failover clear purpose=P"
)


class ModelsUsage(GigiError):
    """A models or failover line the console cannot read; says what to type."""


def _options(verb: str, words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in words:
        name, eq, value = word.partition("=")
        if not eq or not value:
            raise ModelsUsage(f"{word!r} is not name=value", hint=USAGE)
        if name not in OPTIONS[verb]:
            known = ", ".join(sorted(OPTIONS[verb]))
            line = "/llm models" if verb == "models" else f"/llm failover {verb}"
            raise ModelsUsage(f"{line} has no option {name!r} (options: {known})", hint=USAGE)
        out[name] = value
    return out


def _need(opts: dict[str, str], name: str, line: str) -> str:
    if name not in opts:
        raise ModelsUsage(f"{line} needs {name}=...", hint=USAGE)
    return opts[name]


async def cmd_llm(console: ConsoleSurface, rest: str) -> None:
    """``/llm models ...`` and ``/llm failover ...`` here; anything else goes on."""
    words = rest.split()
    if not words or words[0] not in ("models", "failover"):
        await console_policy.cmd_llm(console, rest)
        return
    if words[0] == "models":
        await _models(console, _options("models", words[1:]))
        return
    if len(words) < 2 or words[1] not in ("set", "show", "clear"):
        console.say(USAGE)
        return
    await _failover(console, words[1], _options(words[1], words[2:]))


async def _models(console: ConsoleSurface, opts: dict[str, str]) -> None:
    which = _need(opts, "provider", "/llm models")
    refresh = opts.get("refresh", "no")
    if refresh not in ("yes", "no"):
        raise ModelsUsage(f"refresh={refresh!r}: use yes or no")
    if not await console_policy._allowed(console, ANY):
        return
    owner = f"guild:{console.guild_id}"
    found = await console.kernel.llm.list_models(owner, which, refresh=refresh == "yes")
    when = datetime.fromtimestamp(found.fetched_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    state = "cached, fetched" if found.cached else "fetched"
    console.say(
        f"{found.label} ({found.provider}) can call {len(found.models)} models ({state} {when}):"
    )
    for model in found.models:
        extra = f" ({model.display_name})" if model.display_name not in (None, model.id) else ""
        console.say(f"  {model.id}{extra}")


async def _failover(console: ConsoleSurface, verb: str, opts: dict[str, str]) -> None:
    if not await console_policy._allowed(console, ANY if verb == "show" else (SELECT,)):
        return
    llm, owner, by = console.kernel.llm, f"guild:{console.guild_id}", console.actor.id
    if verb == "set":
        purpose = _need(opts, "purpose", "/llm failover set")
        order = _need(opts, "order", "/llm failover set")
        plan = await llm.set_failover(owner, purpose, order, opts.get("on"), by=by)
        console.say(f"Failover for {plan.describe()}.")
    elif verb == "show":
        plans = await llm.failover(owner, opts.get("purpose"))
        if not plans:
            console.say("No failover lists here (/llm failover set).")
        for plan in plans:
            console.say(f"  {plan.describe()}")
    else:
        purpose = _need(opts, "purpose", "/llm failover clear")
        await llm.clear_failover(owner, purpose, by=by)
        console.say(f"Removed the {purpose} failover list.")
