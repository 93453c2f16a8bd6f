"""``gigi llm policy channel|role`` and the place part of ``gigi llm policy show``.

A place is written ``KIND:ID`` (thread, channel, forum, category, or guild for the guild's
own default). ``show`` takes the request's chain the way Discord knows it, nearest first:
``--place thread:T --place channel:C --place category:K``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gigi_core.cli.common import UsageFailure, echo_json, with_kernel
from gigi_core.llm.channel_policy import ANSWER_MODES, CLEARABLE, PLACE_KINDS, Place
from gigi_core.llm.records import PURPOSES

if TYPE_CHECKING:
    from gigi_core.llm.policy_admin import PolicyView

PLACE_HELP = f"KIND:ID, KIND one of {', '.join(PLACE_KINDS)}."


def parse_places(raw: tuple[str, ...]) -> tuple[Place, ...]:
    try:
        return tuple(Place.parse(p) for p in raw)
    except Exception as exc:
        raise UsageFailure(f"--place: {exc}") from None


@click.command("channel")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--place", "place_text", required=True, help=PLACE_HELP)
@click.option("--purpose", type=click.Choice(PURPOSES), help="The purpose to override here.")
@click.option("--profile", type=click.Choice(PURPOSES), help="Serve it with this guild profile.")
@click.option("--model", help="Serve it with this model id on the purpose's own guild key.")
@click.option("--prompt", help="Extra instructions for Gigi here ('' removes them).")
@click.option(
    "--prompt-file",
    "prompt_file",
    type=click.File("r", encoding="utf-8"),
    callback=lambda _ctx, _param, value: value.read() if value is not None else None,
    help="The same, read from a file ('-' for stdin).",
)
@click.option("--answer", type=click.Choice(ANSWER_MODES), help="When Gigi answers here.")
@click.option("--clear", type=click.Choice(CLEARABLE), help="Inherit this again from the parent.")
@click.option("--by", help="Who did it (for the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def policy_channel(
    kernel: Any,
    guild: str,
    place_text: str,
    purpose: str | None,
    profile: str | None,
    model: str | None,
    prompt: str | None,
    prompt_file: str | None,
    answer: str | None,
    clear: str | None,
    by: str | None,
    as_json: bool,
) -> None:
    """Set or clear a place's model override, instructions or answer mode."""
    [place] = parse_places((place_text,))
    if prompt is not None and prompt_file is not None:
        raise UsageFailure("give --prompt or --prompt-file, not both")
    if prompt_file is not None:
        prompt = prompt_file
    policy = await kernel.llm.places.set_place(
        guild,
        place,
        purpose=purpose,
        profile=profile,
        model=model,
        prompt=prompt,
        answer=answer,
        clear=clear,
        by=by,
    )
    if as_json:
        echo_json(policy.as_dict())
        return
    models = ", ".join(f"{k} -> {v}" for k, v in policy.models.items()) or "inherited"
    prompt_state = f"{len(policy.prompt)} characters" if policy.prompt else "inherited"
    click.echo(
        f"{policy.place} in guild {guild}: models {models}; instructions {prompt_state}; "
        f"answers {policy.answer or 'inherited'}."
    )


@click.command("role")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--role", required=True, help="Role id.")
@click.option("--allow", help="Comma-separated model ids or profile purposes the role may use.")
@click.option("--clear", is_flag=True, help="Remove the role's policy (no limit again).")
@click.option("--by", help="Who did it (for the audit log).")
@with_kernel
async def policy_role(
    kernel: Any, guild: str, role: str, allow: str | None, clear: bool, by: str | None
) -> None:
    """Which models the members holding a role may use (admins are never held)."""
    if clear == (allow is not None):
        raise UsageFailure("give exactly one of --allow A,B or --clear")
    models = None if clear else [m.strip() for m in (allow or "").split(",")]
    policy = await kernel.llm.places.set_role(guild, role, models, by=by)
    if policy is None:
        click.echo(f"role {role} in guild {guild}: no model limit.")
    else:
        click.echo(f"role {role} in guild {guild} may use: {', '.join(policy.models)}.")


def view_lines(view: PolicyView) -> list[str]:
    """``policy show``'s place part: each effective value, then where it came from."""
    e = view.effective
    where = " > ".join(str(p) for p in view.places) or "(the guild itself)"
    lines = [f"at {where}:"]
    lines.append(f"  answers: {e.answer.value} (from {e.answer.where})")
    if e.prompt.value:
        lines.append(f"  instructions: {len(e.prompt.value)} characters (from {e.prompt.where})")
    else:
        lines.append("  instructions: none (default)")
    for purpose, chosen in e.models.items():
        lines.append(f"  {purpose}: {chosen.value} (from {chosen.where} {chosen.source.id})")
    if not e.models:
        lines.append("  models: the guild's profiles (default)")
    for role in view.roles:
        lines.append(f"  role {role.role_id} may use: {', '.join(role.models)}")
    for s in view.role_budgets:
        b = s.budget
        lines.append(f"  role {b.scope_id} budget: {s.spent:,} of {b.limit:,} tokens {b.window}")
    return lines
