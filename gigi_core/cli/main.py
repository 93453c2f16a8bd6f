"""The root ``gigi`` group: global options, error handling, plugin-contributed commands."""

from __future__ import annotations

import logging
import sys
import traceback

import click

from gigi_core import __version__
from gigi_core.cli.common import CliState, fail
from gigi_core.cli.logsetup import configure as configure_logging
from gigi_core.errors import GigiError


class GigiGroup(click.Group):
    """Turns GigiErrors into one readable line and an exit code; tracebacks only with --debug."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except GigiError as error:
            if ctx.find_object(CliState) and ctx.find_object(CliState).debug:
                traceback.print_exc()
            fail(error)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:
            state = ctx.find_object(CliState)
            if state is not None and state.debug:
                traceback.print_exc()
            else:
                click.echo(
                    f"Error: {type(exc).__name__}: {exc} (rerun with --debug for details)", err=True
                )
            sys.exit(1)
        return None


@click.group(cls=GigiGroup)
@click.version_option(__version__, prog_name="gigi")
@click.option(
    "--database-url",
    envvar="GIGI_DATABASE_URL",
    help="SQLAlchemy URL (default: SQLite in GIGI_HOME).",
)
@click.option(
    "--home", envvar="GIGI_HOME", help="Data folder (default: the platform's user data dir)."
)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.pass_context
def cli(ctx: click.Context, database_url: str | None, home: str | None, debug: bool) -> None:
    """Gigi: a Discord-native agent runtime. The LLM proposes; Gigi validates and executes."""
    configure_logging(debug)  # with --debug, no library's DEBUG records (they carry data)
    state = ctx.ensure_object(CliState)
    state.database_url, state.home, state.debug = database_url or None, home or None, debug


def _add_builtin_commands() -> None:
    from gigi_core.cli import (
        audit,
        channels,
        commands,
        db,
        grants,
        manifest,
        plugins,
        privacy,
        run,
        secrets,
        tools,
    )

    builtin = (
        audit,
        channels,
        commands,
        db,
        grants,
        manifest,
        plugins,
        privacy,
        run,
        secrets,
        tools,
    )
    for module in builtin:
        for command in module.COMMANDS:
            cli.add_command(command)
    from gigi_core.cli.new_plugin import new_plugin_command

    cli.add_command(new_plugin_command, "new-plugin")
    from gigi_core.cli import install  # gigi install|uninstall|upgrade, plugins outdated|review

    install.register(cli, plugins.plugins_group)
    import importlib

    optional_modules = (
        "gigi_core.cli.llm",
        "gigi_core.cli.agent",
        "gigi_core.cli.eval",
        "gigi_core.cli.jobs",
        "gigi_core.cli.worker",
        "gigi_core.cli.dev",
        "gigi_core.cli.retrieve",
    )
    for optional in optional_modules:  # layers that land later
        try:
            module = importlib.import_module(optional)
        except ModuleNotFoundError as exc:
            if exc.name != optional:
                raise
            continue
        for command in module.COMMANDS:
            cli.add_command(command)


def _add_plugin_commands(state: CliState) -> None:
    """Plugins add commands through ``register_commands(cli)``; one failing hook is recorded."""
    loaded = state.plugins()
    for impl in reversed(loaded.pm.hook.register_commands.get_hookimpls()):
        try:
            impl.function(cli=cli)
        except Exception as exc:
            logging.getLogger(__name__).warning(
                "plugin %s failed in register_commands: %s", impl.plugin_name, exc
            )
            loaded.registry.fail(impl.plugin_name, f"hook register_commands raised {exc!r}")
            loaded.pm.unregister(name=impl.plugin_name)


_add_builtin_commands()


def main() -> None:
    state = CliState()
    if _needs_plugins(sys.argv[1:]):
        try:
            _add_plugin_commands(state)
        except GigiError as error:
            fail(error)
    cli.main(obj=state, prog_name="gigi")


def _needs_plugins(argv: list[str]) -> bool:
    """Skip plugin loading for commands that never use plugins; --help lists plugin commands."""
    words = [a for a in argv if not a.startswith("-")]
    return not (
        words
        and words[0] in {"manifest", "new-plugin", "secrets", "install", "uninstall", "upgrade"}
    )
