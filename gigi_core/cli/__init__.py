"""The ``gigi`` command. Subcommands live in modules named for what they manage."""

from gigi_core.cli.main import cli, main

__all__ = ["cli", "main"]
