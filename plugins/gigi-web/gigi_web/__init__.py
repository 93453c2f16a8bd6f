"""Gigi's admin web dashboard: ``gigi web`` serves it (``cli``), ``app.create_app`` builds it.

Hook implementations only; the web stack loads when ``gigi web`` runs, never at plugin load.
"""

from __future__ import annotations

from typing import Any

from gigi_core import hookimpl


@hookimpl
def register_commands(cli: Any) -> None:
    from gigi_web.cli import web_command

    cli.add_command(web_command)
