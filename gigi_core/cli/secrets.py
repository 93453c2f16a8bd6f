"""``gigi secrets``: key generation and rotation for sealed secrets."""

from __future__ import annotations

import click

from gigi_core.cli.common import CliState, pass_state, run


@click.group("secrets")
def secrets_group() -> None:
    """Manage the key that seals secrets (GIGI_SECRET_KEY)."""


@secrets_group.command("generate-key")
def generate_key() -> None:
    """Print a new random key for GIGI_SECRET_KEY."""
    from gigi_core.store.sealing import generate_key as new_key

    click.echo(new_key())


@secrets_group.command("rotate")
@pass_state
def rotate(state: CliState) -> None:
    """Re-seal every secret with the current key (old keys in GIGI_SECRET_KEYS_RETIRED)."""

    async def body() -> int:
        kernel = await state.open_kernel()
        try:
            async with kernel.db.session() as s:
                return await kernel.secrets.rotate(s)
        finally:
            await kernel.close()

    click.echo(f"Re-sealed {run(body())} secret(s) with the current key.")


COMMANDS = [secrets_group]
