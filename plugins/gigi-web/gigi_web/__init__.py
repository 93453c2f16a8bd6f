"""Gigi's admin web dashboard: ``gigi web`` serves it (``cli``), ``app.create_app`` builds it.

Hook implementations only; the web stack loads when ``gigi web`` runs, never at plugin load.
The plugin owns one table, ``web_sessions`` (``migrations/``): the dashboard's sign-ins.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from gigi_core import hookimpl


@hookimpl
def register_manifests(register: Any) -> None:
    register(files(__name__) / "gigi.yaml")


@hookimpl
def register_migrations(register: Any) -> None:
    register("web", files(__name__) / "migrations")


@hookimpl
def register_jobs(register: Any) -> None:
    # Expired sessions also go when read and, in each `gigi web` process, every 10 minutes;
    # this hourly sweep covers a dashboard nobody opens (it runs where a worker runs).
    register("web.sessions_sweep", _sweep, schedule="41 * * * *", retries=0, timeout=60)


async def _sweep(ctx: Any) -> None:
    from gigi_web.sessions import sweep_expired

    await sweep_expired(ctx.kernel.db.engine)


@hookimpl
def register_commands(cli: Any) -> None:
    from gigi_web.cli import web_command

    cli.add_command(web_command)
