"""``gigi knowledge COMMAND``: the /knowledge commands from a shell, the same actions through
``kernel.call_tool`` (validation, policy, audit), e.g.
``gigi knowledge decisions --guild G --channel C --user U status=all``."""

from __future__ import annotations

import json
from typing import Any

import click

COMMANDS = (
    "status",
    "enable",
    "disable",
    "context",
    "decisions",
    "actions",
    "catchup",
    "action_update",
    "action_reassign",
    "decision_supersede",
    "decision_dismiss",
)


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def add_commands(cli: Any) -> None:
    @cli.command("knowledge", context_settings={"ignore_unknown_options": True})
    @click.argument("command", type=click.Choice(COMMANDS))
    @click.argument("args", nargs=-1)
    @click.option("--guild", "guild_id", required=True, help="The guild (server) id.")
    @click.option("--channel", "channel_id", help="The channel asked in (none: personal mode).")
    @click.option("--user", default="operator", show_default=True, help="Acting user id.")
    @click.option("--admin", is_flag=True, help="The user is a guild admin.")
    @click.pass_context
    def knowledge(
        ctx: click.Context,
        command: str,
        args: tuple[str, ...],
        guild_id: str,
        channel_id: str | None,
        user: str,
        admin: bool,
    ) -> None:
        """Run a /knowledge command; ARGS are name=value (values may be JSON). See docs/knowledge.md."""
        import asyncio

        from gigi_core import Actor, GigiError, Kernel

        values: dict[str, Any] = {}
        for arg in args:
            name, sep, raw = arg.partition("=")
            if not sep:
                raise click.UsageError(f"argument {arg!r}: write it as name=value")
            values[name] = _value(raw)
        root = ctx.find_root().obj

        async def body() -> Any:
            kernel = await Kernel.open(
                getattr(root, "database_url", None), getattr(root, "home", None)
            )
            try:
                outcome = await kernel.call_tool(
                    f"knowledge.{command}",
                    values,
                    actor=Actor(id=user, is_admin=admin),
                    guild_id=guild_id,
                    channel_id=channel_id,
                )
                return outcome.result
            finally:
                await kernel.close()

        try:
            result = asyncio.run(body())
        except GigiError as exc:
            raise click.ClickException(exc.text_for("shell")) from None
        click.echo(json.dumps(result, indent=2, default=str))
