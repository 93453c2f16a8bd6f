"""``gigi llm``: providers, credentials, model profiles, guild policy and usage.

Keys come in through an environment variable or stdin, never as an argument (arguments
end up in shell history and process listings), and never come back out.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from gigi_core.cli.common import UsageFailure, echo_json, pass_state, run, table, with_kernel
from gigi_core.cli.llm_budget import budget_group
from gigi_core.cli.llm_key import key_group
from gigi_core.cli.llm_models import failover_group, models_command
from gigi_core.cli.llm_policy import parse_places, policy_channel, policy_role, view_lines
from gigi_core.llm.records import PURPOSES


def _owner_option(required: bool) -> Any:
    return click.option(
        "--owner",
        required=required,
        metavar="tenant|guild:ID|user:ID",
        help="Who owns (and pays for) it.",
    )


def _by_option(fn: Any) -> Any:
    return click.option("--by", help="Who did it (for the audit log).")(fn)


@click.group("llm")
def llm_group() -> None:
    """LLM providers, credentials, model profiles, policy and usage."""


@llm_group.command("providers")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_state
def providers(state: Any, as_json: bool) -> None:
    """Registered providers and what they support."""
    registry = state.plugins().registry
    rows = [p.describe() for p in registry.all_providers()]
    if as_json:
        echo_json(rows)
        return
    flat = [
        {
            "name": r["name"],
            "supports": ", ".join(k for k, v in r["supports"].items() if v) or "-",
            "base_url": r.get("default_base_url") or "(set per credential)",
            "key": "yes" if r.get("requires_key", True) else "no",
            "defaults": ", ".join(f"{k}={v}" for k, v in (r.get("default_models") or {}).items())
            or "-",
            "description": r["description"],
        }
        for r in rows
    ]
    table(flat, ["name", "supports", "base_url", "key", "defaults", "description"])


# -- credentials ---------------------------------------------------------------------------


@llm_group.group("credential")
def credential_group() -> None:
    """Provider keys owned by a guild, a user or the tenant (write-only)."""


def _read_key(api_key_env: str | None, api_key_stdin: bool) -> str:
    if bool(api_key_env) == api_key_stdin:
        raise UsageFailure("give exactly one of --api-key-env VAR or --api-key-stdin")
    if api_key_env:
        value = os.environ.get(api_key_env)
        if value is None:
            raise UsageFailure(f"environment variable {api_key_env} is not set")
        return value
    return sys.stdin.readline().strip()


@credential_group.command("add")
@_owner_option(required=True)
@click.option("--provider", required=True, help="A registered provider (gigi llm providers).")
@click.option("--label", required=True, help="Name unique among the owner's active credentials.")
@click.option("--base-url", help="Endpoint for compatible servers or proxies.")
@click.option("--api-key-env", metavar="VAR", help="Read the key from this environment variable.")
@click.option("--api-key-stdin", is_flag=True, help="Read the key from the first line of stdin.")
@_by_option
@pass_state
def credential_add(
    state: Any,
    owner: str,
    provider: str,
    label: str,
    base_url: str | None,
    api_key_env: str | None,
    api_key_stdin: bool,
    by: str | None,
) -> None:
    """Store a provider key, sealed with GIGI_SECRET_KEY."""
    key = _read_key(api_key_env, api_key_stdin)

    async def body(kernel: Any) -> Any:
        return await kernel.llm.add_credential(
            owner, provider, label, key, base_url=base_url, by=by
        )

    cred = _with(state, body)
    click.echo(
        f"Added credential {cred.label} ({cred.provider}) for {cred.owner}, "
        f"fingerprint …{cred.fingerprint_suffix}."
    )


@credential_group.command("rotate")
@_owner_option(required=True)
@click.option("--label", required=True, help="The credential whose key is replaced.")
@click.option("--api-key-env", metavar="VAR", help="Read the new key from this variable.")
@click.option(
    "--api-key-stdin", is_flag=True, help="Read the new key from the first line of stdin."
)
@_by_option
@pass_state
def credential_rotate(
    state: Any,
    owner: str,
    label: str,
    api_key_env: str | None,
    api_key_stdin: bool,
    by: str | None,
) -> None:
    """Replace a credential's key in place; profiles keep pointing at it."""
    key = _read_key(api_key_env, api_key_stdin)

    async def body(kernel: Any) -> Any:
        return await kernel.llm.rotate_credential(owner, label, key, by=by)

    cred = _with(state, body)
    click.echo(
        f"Rotated credential {cred.label} of {cred.owner}: new fingerprint "
        f"…{cred.fingerprint_suffix}. Calls that start now use the new key."
    )


@credential_group.command("list")
@_owner_option(required=False)
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked credentials.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def credential_list(
    kernel: Any, owner: str | None, include_revoked: bool, as_json: bool
) -> None:
    """Label, provider, fingerprint suffix and status; never the key."""
    creds = await kernel.llm.list_credentials(owner, include_revoked=include_revoked)
    rows = [c.as_dict() for c in creds]
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        r["fingerprint"] = f"…{r['fingerprint_suffix']}"
        r["last_test"] = r["last_test_status"] or "-"
    table(rows, ["owner", "label", "provider", "fingerprint", "status", "last_test", "base_url"])


@credential_group.command("revoke")
@_owner_option(required=True)
@click.option("--label", required=True)
@_by_option
@with_kernel
async def credential_revoke(kernel: Any, owner: str, label: str, by: str | None) -> None:
    """Revoke a credential; its sealed key is destroyed and its label freed."""
    purposes = await kernel.llm.revoke_credential(owner, label, by=by)
    click.echo(f"Revoked credential {label} of {owner}.")
    if purposes:
        click.echo(
            f"Warning: the {', '.join(purposes)} profile(s) of {owner} used it and now fail "
            "until `gigi llm profile set` points them at another credential.",
            err=True,
        )


@credential_group.command("test")
@_owner_option(required=True)
@click.option("--label", required=True)
@click.option("--model", help="Model to test with (default: the model of a profile using it).")
@_by_option
@with_kernel
async def credential_test(
    kernel: Any, owner: str, label: str, model: str | None, by: str | None
) -> None:
    """Make one tiny real call with the key and record the result."""
    result = await kernel.llm.test_credential(owner, label, model=model, by=by)
    if result.ok:
        click.echo(
            f"OK: {result.label} ({result.provider}) answered with model {result.model} "
            f"in {result.latency_ms:.0f} ms."
        )
        return
    click.echo(
        f"FAILED ({result.error_class}): {result.label} ({result.provider}), model "
        f"{result.model}: {result.message}",
        err=True,
    )
    sys.exit(1)


# -- profiles ------------------------------------------------------------------------------


@llm_group.group("profile")
def profile_group() -> None:
    """Which credential and model each owner uses per purpose."""


@profile_group.command("set")
@_owner_option(required=True)
@click.option("--purpose", required=True, type=click.Choice(PURPOSES))
@click.option("--credential", "credential", required=True, help="Label of the owner's credential.")
@click.option("--model", required=True, help="Model id (a free string, as the provider names it).")
@click.option("--fallback-model", help="Tried on the same credential when the model fails.")
@click.option(
    "--budget-fallback-model",
    help="A cheaper model on the same credential that answers once a budget is spent.",
)
@click.option("--input-price", type=float, help="Price per million input tokens.")
@click.option("--output-price", type=float, help="Price per million output tokens.")
@click.option("--currency", help="The prices' currency code (USD unless given).")
@click.option("--params-json", help='Request defaults, e.g. {"temperature": 0.2}.')
@click.option("--disable", is_flag=True, help="Keep the profile but do not use it.")
@_by_option
@with_kernel
async def profile_set(
    kernel: Any,
    owner: str,
    purpose: str,
    credential: str,
    model: str,
    fallback_model: str | None,
    budget_fallback_model: str | None,
    input_price: float | None,
    output_price: float | None,
    currency: str | None,
    params_json: str | None,
    disable: bool,
    by: str | None,
) -> None:
    """Create or replace the owner's profile for a purpose."""
    from gigi_core.cli.common import parse_json_option

    params = parse_json_option(params_json, "--params-json")
    if params is not None and not isinstance(params, dict):
        raise UsageFailure("--params-json must be a JSON object")
    profile = await kernel.llm.set_profile(
        owner,
        purpose,
        credential,
        model,
        fallback_model=fallback_model,
        params=params,
        enabled=not disable,
        by=by,
        budget_fallback_model=budget_fallback_model,
        input_price=input_price,
        output_price=output_price,
        currency=currency,
    )
    fallback = f", fallback {profile.fallback_model}" if profile.fallback_model else ""
    if profile.budget_fallback_model:
        fallback += f", {profile.budget_fallback_model} once a budget is spent"
    if profile.input_price is not None:
        fallback += (
            f", {profile.input_price:g} / {profile.output_price:g} {profile.currency} "
            "per million input / output tokens"
        )
    click.echo(
        f"{profile.owner} {purpose}: {profile.model}{fallback} via {profile.credential_label} "
        f"({profile.provider})."
    )
    warning = await kernel.llm.model_warning(owner, credential, model)
    if warning:
        click.echo(f"Warning: {warning}", err=True)


@profile_group.command("remove")
@_owner_option(required=True)
@click.option("--purpose", required=True, type=click.Choice(PURPOSES))
@_by_option
@with_kernel
async def profile_remove(kernel: Any, owner: str, purpose: str, by: str | None) -> None:
    """Delete the owner's profile for a purpose; its credential stays (revoke it apart)."""
    if await kernel.llm.remove_profile(owner, purpose, by=by):
        click.echo(f"Removed the {purpose} profile of {owner}.")
    else:
        click.echo(f"{owner} has no {purpose} profile; nothing changed.")


@profile_group.command("list")
@_owner_option(required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def profile_list(kernel: Any, owner: str | None, as_json: bool) -> None:
    """Model profiles, per owner and purpose."""
    rows = [p.as_dict() for p in await kernel.llm.list_profiles(owner)]
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        r["credential"] = r["credential_label"]
        r["fallback"] = r["fallback_model"] or "-"
        r["enabled"] = "yes" if r["enabled"] else "no"
    table(rows, ["owner", "purpose", "provider", "credential", "model", "fallback", "enabled"])


# -- policy and usage ----------------------------------------------------------------------


@llm_group.group("policy")
def policy_group() -> None:
    """LLM policy: personal keys, tenant fallback, and per-place and per-role policies."""


policy_group.add_command(policy_channel)
policy_group.add_command(policy_role)


@policy_group.command("set")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--personal-keys", type=click.Choice(["off", "dm-only", "guild-allowed"]))
@click.option(
    "--tenant-fallback/--no-tenant-fallback",
    default=None,
    help="Let this guild use the tenant's profiles when it has none of its own.",
)
@_by_option
@with_kernel
async def policy_set(
    kernel: Any,
    guild: str,
    personal_keys: str | None,
    tenant_fallback: bool | None,
    by: str | None,
) -> None:
    """Change a guild's LLM policy (unset options keep their value)."""
    policy = await kernel.llm.set_policy(
        guild, personal_keys=personal_keys, tenant_fallback=tenant_fallback, by=by
    )
    _echo_policy(policy)


@policy_group.command("show")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option(
    "--place", "places", multiple=True, help="KIND:ID, nearest first (thread, channel, category)."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def policy_show(kernel: Any, guild: str, places: tuple[str, ...], as_json: bool) -> None:
    """A guild's LLM policy, and what applies at a place and where each value came from."""
    policy = await kernel.llm.policy(guild)
    view = await kernel.llm.places.show(guild, parse_places(places))
    if as_json:
        echo_json(policy.as_dict() | view.as_dict())
    else:
        _echo_policy(policy)
        click.echo("\n".join(view_lines(view)))


def _echo_policy(policy: Any) -> None:
    click.echo(
        f"guild {policy.guild_id}: personal keys {policy.personal_keys}, "
        f"tenant fallback {'on' if policy.tenant_fallback else 'off'}."
    )


@llm_group.command("usage")
@click.option(
    "--owner", metavar="guild:ID", help="The guild whose usage to show, as elsewhere in gigi llm."
)
@click.option("--guild", help="Guild (server) id: the same as --owner guild:ID.")
@click.option("--since", help="7d, 24h, 30m, 2w or an ISO date/time (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def usage(
    kernel: Any, owner: str | None, guild: str | None, since: str | None, as_json: bool
) -> None:
    """Calls and tokens by provider, model, purpose and status; then each budget's spend
    against its limit in the current window (``--json``: the usage rows only, as before;
    budgets in ``gigi llm budget show --json``)."""
    from gigi_core.llm.usage import parse_since

    guild = _usage_guild(owner, guild)

    rows = [r.as_dict() for r in await kernel.llm.usage(guild, parse_since(since))]
    if as_json:
        echo_json(rows)
        return
    budgets = [b.summary() for b in await kernel.llm.budget_status(guild)]
    table(
        rows,
        [
            "provider",
            "model",
            "purpose",
            "status",
            "calls",
            "input_tokens",
            "output_tokens",
            "reasoning_tokens",
            "cached_tokens",
        ],
    )
    if not budgets:
        click.echo(f"\nNo budgets in guild {guild} (`gigi llm budget set`).")
        return
    click.echo("\nBudgets, current window:")
    for b in budgets:
        b["left"] = "each its own" if b["left"] is None else b["left"]
    table(budgets, ["scope", "window", "limit", "spent", "reserved", "left", "resets_at"])


def _usage_guild(owner: str | None, guild: str | None) -> str:
    """The guild of ``--owner guild:ID`` or ``--guild ID`` (usage is kept per guild)."""
    if owner is None and guild is None:
        raise UsageFailure("gigi llm usage needs --owner guild:ID (or --guild ID)")
    if owner is not None:
        kind, _, ident = owner.partition(":")
        if kind != "guild" or not ident:
            raise UsageFailure(f"--owner {owner}: usage is kept per guild; give --owner guild:ID")
        if guild is not None and guild != ident:
            raise UsageFailure(f"--owner {owner} and --guild {guild} name two guilds; give one")
        return ident
    assert guild is not None
    return guild


def _with(state: Any, body: Any) -> Any:
    """Like ``with_kernel`` for commands that read input before opening the kernel."""

    async def go() -> Any:
        kernel = await state.open_kernel()
        try:
            return await body(kernel)
        finally:
            await kernel.close()

    return run(go(), state)


llm_group.add_command(budget_group)
llm_group.add_command(models_command)
llm_group.add_command(failover_group)
llm_group.add_command(key_group)
COMMANDS = [llm_group]
