"""The console's ``/llm policy channel|role|show``: per-place and per-role model policies of
the console guild, decided by the policy engine as on Discord (the operator holds them).

Options are ``name=value`` words; ``prompt=`` takes the rest of the line, so it comes
last. A place is ``KIND:ID`` (default: the console's own channel). Every other ``/llm``
line goes to the budget commands (``console_budget``).
"""

from __future__ import annotations

from typing import Any

from gigi_core import GigiError
from gigi_core.default_plugins import console_budget
from gigi_core.llm import Place

ConsoleSurface = Any  # ``console.ConsoleSurface``, typed loosely (see console_budget)

SELECT = "llm.provider.select"
READ = ("llm.provider.write", SELECT, "llm.provider.test", "llm.usage.read")
OPTIONS = {
    "channel": {"place", "purpose", "profile", "model", "answer", "clear", "prompt"},
    "role": {"role", "allow", "clear"},
    "show": {"place"},
}
USAGE = (
    "Usage: /llm policy channel [place=KIND:ID] [purpose=P profile=P|model=M] "
    "[answer=mention|replies|every] [clear=model|prompt|answer|all] [prompt=TEXT (last)]; "
    "/llm policy role role=ID allow=M,M | clear=yes; /llm policy show [place=KIND:ID ...] "
    "(nearest first; KIND thread, channel, forum, category or guild)"
)


class PolicyUsage(GigiError):
    """A policy command the console cannot read; says what to type."""


def _options(verb: str, rest: str) -> tuple[dict[str, str], list[Place]]:
    """name=value words (``prompt=`` takes the rest of the line) and every ``place=``."""
    head, sep, prompt = rest.partition("prompt=")
    out: dict[str, str] = {"prompt": prompt.strip()} if sep else {}
    places: list[Place] = []
    for word in head.split():
        name, eq, value = word.partition("=")
        if not eq or not value:
            raise PolicyUsage(f"{word!r} is not name=value", hint=USAGE)
        if name not in OPTIONS[verb]:
            known = ", ".join(sorted(OPTIONS[verb]))
            raise PolicyUsage(f"/llm policy {verb} has no option {name!r} (options: {known})")
        if name == "place":
            places.append(Place.parse(value))
        else:
            out[name] = value
    if sep and "prompt" not in OPTIONS[verb]:
        raise PolicyUsage(f"/llm policy {verb} has no option 'prompt'", hint=USAGE)
    return out, places


async def _allowed(console: ConsoleSurface, capabilities: tuple[str, ...]) -> bool:
    """Any one of ``capabilities`` will do; a refusal says the last reason."""
    reason = ""
    for capability in capabilities:
        decision = await console.kernel.policy.capability(
            console.actor, capability, console.guild_id
        )
        if decision.allowed:
            return True
        reason = decision.reason
    console.say(f"Not allowed: {reason}.")
    return False


def _here(console: ConsoleSurface, places: list[Place]) -> tuple[Place, ...]:
    return tuple(places) or (Place("channel", console.channel_id),)


async def cmd_llm(console: ConsoleSurface, rest: str) -> None:
    """``/llm policy ...`` here; anything else is a budget command."""
    words = rest.split(maxsplit=2)
    if not words or words[0] != "policy":
        await console_budget.cmd_llm(console, rest)
        return
    if len(words) < 2 or words[1] not in OPTIONS:
        console.say(USAGE)
        return
    verb = words[1]
    opts, places = _options(verb, words[2] if len(words) > 2 else "")
    if not await _allowed(console, READ if verb == "show" else (SELECT,)):
        return
    llm, guild, by = console.kernel.llm, console.guild_id, console.actor.id
    if verb == "show":
        chain = _here(console, places)
        view = await llm.places.show(guild, chain)
        for line in show_lines(view, chain):
            console.say(line)
        return
    if verb == "role":
        if "role" not in opts or (("allow" in opts) == ("clear" in opts)):
            raise PolicyUsage("/llm policy role needs role=ID and allow=M,M or clear=yes")
        models = None if "clear" in opts else opts["allow"].split(",")
        policy = await llm.places.set_role(guild, opts["role"], models, by=by)
        allowed = ", ".join(policy.models) if policy else "any model (no limit)"
        console.say(f"role {opts['role']} may use: {allowed}.")
        return
    if len(places) > 1:
        raise PolicyUsage("/llm policy channel sets one place=KIND:ID")
    place = _here(console, places)[0]
    policy = await llm.places.set_place(
        guild,
        place,
        purpose=opts.get("purpose"),
        profile=opts.get("profile"),
        model=opts.get("model"),
        prompt=opts.get("prompt"),
        answer=opts.get("answer"),
        clear=opts.get("clear"),
        by=by,
    )
    models = ", ".join(f"{k} -> {v}" for k, v in policy.models.items()) or "inherited"
    said = f"{len(policy.prompt)} characters" if policy.prompt else "inherited"
    console.say(
        f"{place}: models {models}; instructions {said}; answers {policy.answer or 'inherited'}."
    )


def show_lines(view: Any, chain: tuple[Place, ...]) -> list[str]:
    """Each effective value and where it came from, then the role policies and budgets."""
    e = view.effective
    lines = [f"Policy at {' > '.join(str(p) for p in chain)}:"]
    lines.append(f"  answers: {e.answer.value} (from {e.answer.where})")
    said = f"{len(e.prompt.value)} characters" if e.prompt.value else "none"
    lines.append(f"  instructions: {said} (from {e.prompt.where})")
    for purpose, chosen in e.models.items():
        lines.append(f"  {purpose}: {chosen.value} (from {chosen.source})")
    if not e.models:
        lines.append("  models: the guild's profiles (default)")
    for role in view.roles:
        lines.append(f"  role {role.role_id} may use: {', '.join(role.models)}")
    for s in view.role_budgets:
        b = s.budget
        lines.append(f"  role {b.scope_id} budget ({b.window}): {s.spent:,} of {b.limit:,} spent")
    return lines
