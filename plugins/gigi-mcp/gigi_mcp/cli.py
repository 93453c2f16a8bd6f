"""``gigi mcp add|list|remove|refresh|approve|show``: the operator's side of the bridge.

Changes take effect the next time Gigi starts (manifests are generated when plugins load).
Commands that touch a server with sealed secrets open the store (``gigi_mcp.sealed``); the
others stay file-only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

T = TypeVar("T")


def _root(ctx: click.Context) -> Path:
    from gigi_mcp.config import mcp_home

    return mcp_home(getattr(ctx.find_root().obj, "home", None))


def _fail(exc: Exception) -> click.ClickException:
    from gigi_core import GigiError

    return click.ClickException(exc.text_for("shell") if isinstance(exc, GigiError) else str(exc))


def _run(ctx: click.Context, needs_store: bool, body: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``body(kernel)`` with the store open when sealed secrets are involved, else
    ``body(None)``; Gigi's errors become a message and an exit code, never a traceback."""
    import asyncio  # here, not at import: `gigi plugins list` stays cold

    from gigi_core import GigiError

    async def main() -> T:
        if not needs_store:
            return await body(None)
        from gigi_core import Kernel

        obj = ctx.find_root().obj
        kernel = await Kernel.open(getattr(obj, "database_url", None), getattr(obj, "home", None))
        try:
            return await body(kernel)
        finally:
            await kernel.close()

    try:
        return asyncio.run(main())
    except GigiError as exc:
        raise _fail(exc) from None


def _read_secrets(keys: list[str], from_env: dict[str, str]) -> dict[str, str]:
    """Each value from ``--secret-env KEY=VAR`` or stdin (a hidden prompt on a terminal, else
    one line per key in order): never from the command line, where `ps` and shells keep it."""
    import sys

    from gigi_mcp.config import ENV_NAME

    stdin = sys.stdin  # click's test runner swaps it too
    values: dict[str, str] = {}
    for key in keys:
        if key in from_env:
            var = from_env[key]
            if not ENV_NAME.match(var):
                # never echo the right side: a value typed where a name belongs is a secret
                raise click.ClickException(
                    f"--secret-env {key}=...: expected KEY=ENVVAR (the name of a variable)"
                )
            value = os.environ.get(var, "")
            source = f"the environment variable {var}"
        elif stdin is not None and stdin.isatty():
            value = click.prompt(f"value of the secret {key}", hide_input=True, err=True)
            source = "the prompt"
        else:
            value = stdin.readline().rstrip("\r\n") if stdin is not None else ""
            source = "stdin"
        if not value:
            raise click.ClickException(
                f"the secret {key} is empty (read from {source}); give it on stdin or with "
                f"--secret-env {key}=ENVVAR"
            )
        values[key] = value
    return values


def _has_secrets(root: Path, name: str | None = None) -> bool:
    from gigi_mcp.config import load_config

    servers = load_config(root).servers
    return any(cfg.secrets for n, cfg in servers.items() if name is None or n == name)


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
    @click.option(
        "--secret", "secrets", multiple=True, help="KEY: seal a value (read from stdin) as KEY."
    )
    @click.option(
        "--secret-env",
        "secret_env",
        multiple=True,
        help="KEY=ENVVAR: seal the value of $ENVVAR (read now) as KEY.",
    )
    @click.option(
        "--secret-header",
        "secret_headers",
        multiple=True,
        help="NAME=KEY: send the sealed secret KEY as header NAME (HTTP servers).",
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
        secrets: tuple[str, ...],
        secret_env: tuple[str, ...],
        secret_headers: tuple[str, ...],
        timeout: float | None,
        replace: bool,
        no_connect: bool,
        as_json: bool,
    ) -> None:
        """Attach a server; its tools are listed but not approved (run `gigi mcp approve`).

        Sealed secrets are read from --secret-env or stdin and sealed in the store before the
        servers file names them; the file records only their keys."""
        from gigi_mcp import sealed, server_admin
        from gigi_mcp.errors import McpConfigError

        root = _root(ctx)
        try:
            from_env = server_admin.parse_pairs(secret_env, "secret-env", quiet=True)
            to_headers = server_admin.parse_pairs(secret_headers, "secret-header", "KEY")
            keys = list(dict.fromkeys([*secrets, *from_env, *to_headers.values()]))
            server = server_admin.new_server(
                root,
                name,
                stdio=stdio,
                url=url,
                env=server_admin.parse_pairs(env, "env"),
                headers=server_admin.parse_pairs(headers, "header"),
                timeout=timeout,
                replace=replace,
                secrets=keys,
                secret_headers=to_headers,
            )
            had_secrets = _has_secrets(root, name)
        except McpConfigError as exc:
            raise _fail(exc) from None
        values = _read_secrets(keys, from_env)  # before anything is written

        async def body(kernel: Any) -> tuple[dict[str, str], Any]:
            prints: dict[str, str] = {}
            if kernel is not None:
                prints = await sealed.seal(kernel, name, values)
            server_admin.save_server(root, name, server)
            if kernel is not None:  # a replaced server's keys that are gone now
                await sealed.forget(kernel, name, keep=frozenset(keys))
            if no_connect:
                return prints, None
            return prints, await server_admin.refresh(
                root, name, sealed.opener(kernel) if kernel is not None else None
            )

        prints, done = _run(ctx, bool(keys) or had_secrets, body)
        listed = None if done is None else _report(root, done, quiet=as_json)
        if as_json:
            out = {"added": name, "secrets": prints, "tools": listed}
            click.echo(json.dumps(out, indent=2))
        else:
            click.echo(f"added MCP server {name!r} (plugin mcp_{name})")
            for key, fp in sorted(prints.items()):
                click.echo(f"sealed secret {key} (fingerprint {fp})")
            if listed is not None:
                click.echo(f"{len(listed)} tool(s); review and approve: gigi mcp approve {name}")

    @mcp.command("list")
    @click.option("--json", "as_json", is_flag=True)
    @click.pass_context
    def list_(ctx: click.Context, as_json: bool) -> None:
        """Servers, their tools, safety classes and approval state."""
        from gigi_mcp import sealed, server_admin
        from gigi_mcp.errors import McpConfigError

        root = _root(ctx)
        try:
            needs_store = _has_secrets(root)
        except McpConfigError as exc:
            raise _fail(exc) from None

        async def body(kernel: Any) -> list[dict[str, Any]]:
            prints = await sealed.fingerprints(kernel) if kernel is not None else None
            return server_admin.describe(root, prints)

        rows = _run(ctx, needs_store, body)
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
            for key, fp in sorted(row["secrets"].items()):
                click.echo(f"  secret {key}: " + (f"sealed, fingerprint {fp}" if fp else "missing"))
            for tool in row["tools"]:
                click.echo(
                    f"  {tool['action']:<40} {tool['status']:<9} {tool['safety']:<11} "
                    f"confirm={tool['confirm']}"
                )
                if tool.get("refused"):
                    click.echo(f"    refused: {tool['refused']}")

    @mcp.command("remove")
    @click.argument("name")
    @click.option("--json", "as_json", is_flag=True)
    @click.pass_context
    def remove(ctx: click.Context, name: str, as_json: bool) -> None:
        """Detach a server, forget its approvals and delete its sealed secrets."""
        from gigi_mcp import sealed, server_admin
        from gigi_mcp.errors import McpConfigError

        root = _root(ctx)
        try:
            needs_store = _has_secrets(root, name)
        except McpConfigError as exc:
            raise _fail(exc) from None

        async def body(kernel: Any) -> list[str]:
            gone = await sealed.forget(kernel, name) if kernel is not None else []
            if not server_admin.remove_server(root, name):
                raise click.ClickException(f"no MCP server {name!r}")
            return gone

        gone = _run(ctx, needs_store, body)
        if as_json:
            click.echo(json.dumps({"removed": name, "secrets_removed": gone}))
        else:
            click.echo(f"removed MCP server {name!r}")
            if gone:
                click.echo(f"deleted {len(gone)} sealed secret(s): {', '.join(gone)}")

    @mcp.command("refresh")
    @click.argument("name", required=False)
    @click.option("--json", "as_json", is_flag=True)
    @click.pass_context
    def refresh(ctx: click.Context, name: str | None, as_json: bool) -> None:
        """List the tools again; changed definitions are quarantined until approved."""
        from gigi_mcp.config import load_config

        root = _root(ctx)
        names = [name] if name else sorted(load_config(root).servers)
        out = {n: _refresh_one(ctx, root, n, quiet=as_json) for n in names}
        if as_json:
            click.echo(json.dumps(out, indent=2))

    @mcp.command("approve")
    @click.argument("name")
    @click.option("--yes", is_flag=True, help="Approve without asking (for scripts).")
    @click.option("--json", "as_json", is_flag=True, help="Print the diff and outcome as JSON.")
    @click.pass_context
    def approve(ctx: click.Context, name: str, yes: bool, as_json: bool) -> None:
        """Show what changed since the last approval, then pin the server's definitions."""
        from gigi_mcp import server_admin
        from gigi_mcp.errors import McpConfigError
        from gigi_mcp.pins import load_pins

        root = _root(ctx)
        _refresh_one(ctx, root, name, quiet=True)
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
                server_admin.approve(root, name)
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


def _refresh_one(
    ctx: click.Context, root: Path, name: str, *, quiet: bool = False
) -> list[dict[str, Any]]:
    from gigi_mcp import sealed, server_admin
    from gigi_mcp.errors import McpConfigError

    try:
        needs_store = _has_secrets(root, name)
    except McpConfigError as exc:
        raise _fail(exc) from None

    async def body(kernel: Any) -> server_admin.Refreshed:
        return await server_admin.refresh(root, name, sealed.opener(kernel) if kernel else None)

    return _report(root, _run(ctx, needs_store, body), quiet=quiet)


def _report(root: Path, done: Any, *, quiet: bool) -> list[dict[str, Any]]:
    """Print what a listing found (unless ``quiet``); returns the server's tool rows."""
    from gigi_mcp import server_admin
    from gigi_mcp.invisible import clean_text

    name = done.server
    rows = next(r for r in server_admin.describe(root) if r["name"] == name)["tools"]
    if not quiet:
        click.echo(f"{name}: {len(done.pins.observed)} tool(s) listed")
        for tool in done.quarantined:
            click.echo(f"  quarantined: {clean_text(tool)} (changed since approval)")
        for row in rows:
            if row.get("refused"):
                click.echo(f"  refused: {row['action']}: {row['refused']}")
    return rows
