"""``gigi mcp add|list|remove|refresh|approve|show``: the operator's side of the bridge.

Changes take effect the next time Gigi starts (manifests are generated when plugins load).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click


def _root(ctx: click.Context) -> Path:
    from gigi_mcp.config import mcp_home

    return mcp_home(getattr(ctx.find_root().obj, "home", None))


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


def add_commands(cli: Any) -> None:
    @cli.group("mcp")
    def mcp() -> None:
        """MCP servers whose tools Gigi offers (see docs/mcp.md)."""

    @mcp.command("add")
    @click.argument("name")
    @click.option("--stdio", help='The command that starts the server, e.g. "uvx mcp-server-git".')
    @click.option("--url", help="The server's streamable HTTP endpoint.")
    @click.option(
        "--env", "env", multiple=True, help="KEY=ENVVAR: pass $ENVVAR to the child as KEY."
    )
    @click.option(
        "--header", "headers", multiple=True, help="NAME=ENVVAR: send $ENVVAR as header NAME."
    )
    @click.option("--timeout", type=float, help="Seconds per call (default 30).")
    @click.option("--replace", is_flag=True, help="Replace a server of that name.")
    @click.option("--no-connect", is_flag=True, help="Do not list the tools now.")
    @click.option("--json", "as_json", is_flag=True)
    @click.pass_context
    def add(
        ctx: click.Context,
        name: str,
        stdio: str | None,
        url: str | None,
        env: tuple[str, ...],
        headers: tuple[str, ...],
        timeout: float | None,
        replace: bool,
        no_connect: bool,
        as_json: bool,
    ) -> None:
        """Attach a server; its tools are listed but not approved (run `gigi mcp approve`)."""
        from gigi_mcp import ops
        from gigi_mcp.errors import McpConfigError

        root = _root(ctx)
        try:
            ops.add_server(
                root,
                name,
                stdio=stdio,
                url=url,
                env=ops.parse_pairs(env, "env"),
                headers=ops.parse_pairs(headers, "header"),
                timeout=timeout,
                replace=replace,
            )
        except McpConfigError as exc:
            raise _fail(exc) from None
        listed = None if no_connect else _refresh_one(root, name, quiet=as_json)
        if as_json:
            click.echo(json.dumps({"added": name, "tools": listed}, indent=2))
        else:
            click.echo(f"added MCP server {name!r} (plugin mcp_{name})")
            if listed is not None:
                click.echo(f"{len(listed)} tool(s); review and approve: gigi mcp approve {name}")

    @mcp.command("list")
    @click.option("--json", "as_json", is_flag=True)
    @click.pass_context
    def list_(ctx: click.Context, as_json: bool) -> None:
        """Servers, their tools, safety classes and approval state."""
        from gigi_mcp import ops
        from gigi_mcp.errors import McpConfigError

        try:
            rows = ops.describe(_root(ctx))
        except McpConfigError as exc:
            raise _fail(exc) from None
        if as_json:
            click.echo(json.dumps(rows, indent=2))
            return
        if not rows:
            click.echo("no MCP servers (gigi mcp add NAME --stdio CMD | --url URL)")
        for row in rows:
            state = "approved" if row["approved"] else "not approved"
            click.echo(f"{row['name']}  {row['transport']}  {row['target']}  {state}")
            if row["error"]:
                click.echo(f"  not loaded: {row['error']}")
            for tool in row["tools"]:
                click.echo(
                    f"  {tool['action']:<40} {tool['status']:<9} {tool['safety']:<11} "
                    f"confirm={tool['confirm']}"
                )

    @mcp.command("remove")
    @click.argument("name")
    @click.option("--json", "as_json", is_flag=True)
    @click.pass_context
    def remove(ctx: click.Context, name: str, as_json: bool) -> None:
        """Detach a server and forget its approvals."""
        from gigi_mcp import ops

        if not ops.remove_server(_root(ctx), name):
            raise click.ClickException(f"no MCP server {name!r}")
        if as_json:
            click.echo(json.dumps({"removed": name}))
        else:
            click.echo(f"removed MCP server {name!r}")

    @mcp.command("refresh")
    @click.argument("name", required=False)
    @click.option("--json", "as_json", is_flag=True)
    @click.pass_context
    def refresh(ctx: click.Context, name: str | None, as_json: bool) -> None:
        """List the tools again; changed definitions are quarantined until approved."""
        from gigi_mcp.config import load_config

        root = _root(ctx)
        names = [name] if name else sorted(load_config(root).servers)
        out = {n: _refresh_one(root, n, quiet=as_json) for n in names}
        if as_json:
            click.echo(json.dumps(out, indent=2))

    @mcp.command("approve")
    @click.argument("name")
    @click.option("--yes", is_flag=True, help="Approve without asking (for scripts).")
    @click.option("--json", "as_json", is_flag=True, help="Print the diff and outcome as JSON.")
    @click.pass_context
    def approve(ctx: click.Context, name: str, yes: bool, as_json: bool) -> None:
        """Show what changed since the last approval, then pin the server's definitions."""
        from gigi_mcp import ops
        from gigi_mcp.errors import McpConfigError
        from gigi_mcp.pins import load_pins

        root = _root(ctx)
        _refresh_one(root, name, quiet=True)
        pins = load_pins(root, name)
        diff = pins.diff()
        changed = bool(diff) or not pins.is_approved
        if as_json and changed and not yes:
            raise click.ClickException("--json cannot ask: add --yes to approve")
        if changed and not as_json:
            click.echo(diff or "(no tools)")
            if not yes and not click.confirm(f"Approve these definitions of {name!r}?"):
                raise click.ClickException("not approved")
        if changed:
            try:
                ops.approve(root, name)
            except McpConfigError as exc:
                raise _fail(exc) from None
        if as_json:
            out = {"server": name, "approved": changed, "tools": len(pins.observed), "diff": diff}
            click.echo(json.dumps(out, indent=2))
        elif changed:
            click.echo(f"approved {len(pins.observed)} tool(s) of {name!r}; restart Gigi to apply")
        else:
            click.echo(f"{name}: nothing changed since the last approval")

    @mcp.command("show")
    @click.argument("name")
    @click.pass_context
    def show(ctx: click.Context, name: str) -> None:
        """Print the generated manifest of mcp_NAME (NAME or mcp_NAME)."""
        from gigi_mcp.generate import manifest_path

        server = name.removeprefix("mcp_")
        path = manifest_path(_root(ctx), server)
        if not path.exists():
            raise click.ClickException(
                f"no manifest for {name!r} (run `gigi mcp refresh {server}`)"
            )
        click.echo(path.read_text(encoding="utf-8"), nl=False)


def _refresh_one(root: Path, name: str, *, quiet: bool = False) -> list[dict[str, Any]]:
    from gigi_mcp import ops
    from gigi_mcp.errors import McpConfigError, ServerUnavailable

    try:
        import asyncio  # here, not at import: `gigi plugins list` stays cold

        done = asyncio.run(ops.refresh(root, name))
    except (McpConfigError, ServerUnavailable) as exc:
        raise _fail(exc) from None
    rows = next(r for r in ops.describe(root) if r["name"] == name)["tools"]
    if not quiet:
        click.echo(f"{name}: {len(done.pins.observed)} tool(s) listed")
        for tool in done.quarantined:
            click.echo(f"  quarantined: {tool} (changed since approval)")
    return rows
