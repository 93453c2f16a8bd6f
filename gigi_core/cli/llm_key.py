"""``gigi llm key``: a member's own provider keys (owner ``user:<id>``), for the operator.

The same as ``/llm key`` on Discord and the console: the key comes in through an
environment variable or stdin (never an argument), is sealed, and never comes back out.
Whether a member's key is used in a guild is that guild's policy (``gigi llm policy set
--personal-keys``); a DM outside any guild may always use it.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from gigi_core.cli.common import echo_json, pass_state, table, with_kernel


def _user_id(ctx: Any, param: Any, value: str) -> str:
    value = value.strip()
    if not value or any(c.isspace() or c == ":" for c in value):
        raise click.BadParameter("give the member's user id, e.g. --user 123456789", param=param)
    return value


def _user_option(fn: Any) -> Any:
    return click.option(
        "--user", required=True, metavar="ID", callback=_user_id, help="The member's user id."
    )(fn)


@click.group("key")
def key_group() -> None:
    """A member's own API keys: add, test, prefer, remove, list."""


@key_group.command("add")
@_user_option
@click.option("--provider", required=True, help="A registered provider (gigi llm providers).")
@click.option("--label", required=True, help="Name unique among the member's active keys.")
@click.option("--model", help="Also answer for the member with this model on the new key.")
@click.option("--base-url", help="Endpoint for compatible servers or proxies.")
@click.option("--api-key-env", metavar="VAR", help="Read the key from this environment variable.")
@click.option("--api-key-stdin", is_flag=True, help="Read the key from the first line of stdin.")
@pass_state
def key_add(
    state: Any,
    user: str,
    provider: str,
    label: str,
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    api_key_stdin: bool,
) -> None:
    """Store the member's key, sealed with GIGI_SECRET_KEY."""
    from gigi_core.cli.llm import _read_key, _with

    key = _read_key(api_key_env, api_key_stdin)

    async def body(kernel: Any) -> Any:
        return await kernel.llm.personal.add(
            user, provider, label, key, base_url=base_url, model=model
        )

    cred = _with(state, body)
    then = (
        f" It answers for them with {model}."
        if model
        else f" Next: `gigi llm key prefer --user {user} --label {cred.label} --model <model id>`."
    )
    click.echo(
        f"Added key {cred.label} ({cred.provider}) for user {user}, "
        f"fingerprint …{cred.fingerprint_suffix}.{then}"
    )


@key_group.command("list")
@_user_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def key_list(kernel: Any, user: str, as_json: bool) -> None:
    """The member's keys (label, provider, fingerprint suffix, status); never the key."""
    views = await kernel.llm.personal.keys(user)
    rows = [v.credential.as_dict() | {"preferred_for": list(v.preferred_for)} for v in views]
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo(f"User {user} has no keys (`gigi llm key add --user {user} ...`).")
        return
    for r in rows:
        r["fingerprint"] = f"…{r['fingerprint_suffix']}"
        r["answers"] = ", ".join(r["preferred_for"]) or "-"
        r["last_test"] = r["last_test_status"] or "-"
    table(rows, ["label", "provider", "fingerprint", "status", "last_test", "answers"])


@key_group.command("test")
@_user_option
@click.option("--label", required=True)
@click.option("--model", help="Model to test with (default: the model the key answers with).")
@with_kernel
async def key_test(kernel: Any, user: str, label: str, model: str | None) -> None:
    """Make one tiny real call with the member's key and record the result."""
    result = await kernel.llm.personal.test(user, label, model=model)
    if result.ok:
        click.echo(f"OK: {label} answered with model {result.model} in {result.latency_ms:.0f} ms.")
        return
    click.echo(
        f"FAILED ({result.error_class}): {label} ({result.provider}), model {result.model}: "
        f"{result.message}",
        err=True,
    )
    sys.exit(1)


@key_group.command("prefer")
@_user_option
@click.option("--label", required=True, help="The member's key that should answer for them.")
@click.option("--model", required=True, help="Model id on that key.")
@with_kernel
async def key_prefer(kernel: Any, user: str, label: str, model: str) -> None:
    """Answer for the member with this key and model (where the guild allows personal keys)."""
    profiles = await kernel.llm.personal.prefer(user, label, model)
    purposes = ", ".join(p.purpose for p in profiles)
    click.echo(f"User {user} now uses {label} with {model} ({purposes}).")


@key_group.command("remove")
@_user_option
@click.option("--label", required=True)
@with_kernel
async def key_remove(kernel: Any, user: str, label: str) -> None:
    """Revoke the member's key; its sealed copy is destroyed."""
    purposes = await kernel.llm.personal.remove(user, label)
    click.echo(f"Removed key {label} of user {user}; the sealed key is destroyed.")
    if purposes:
        click.echo(
            f"Their {', '.join(purposes)} profile now has no key: requests billed to them fail "
            f"until `gigi llm key prefer --user {user}` names another key.",
            err=True,
        )
