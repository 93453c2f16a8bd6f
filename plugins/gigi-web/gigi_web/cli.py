"""``gigi web``: serve the dashboard with uvicorn, beside ``gigi run`` or on its own
machine over the shared PostgreSQL."""

from __future__ import annotations

import logging

import click

log = logging.getLogger(__name__)


@click.command("web")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--base-url",
    help="The address people open, e.g. https://gigi.example.org (default: http://HOST:PORT). "
    "Discord redirects to BASE_URL/auth/callback; cookies are Secure when it is https.",
)
@click.option("--dev", is_flag=True, help="Try it locally: a fake Discord signs you in.")
@click.pass_context
def web_command(ctx: click.Context, host: str, port: int, base_url: str | None, dev: bool) -> None:
    """Serve the admin web dashboard (sign in with Discord)."""
    import asyncio  # here, not at import: `gigi --help` and every other command stay light

    from gigi_web.settings import WebSettings

    settings = WebSettings.from_env(base_url or f"http://{host}:{port}", dev=dev)
    root = ctx.find_root().obj
    asyncio.run(_serve(settings, host, port, root))


async def _serve(settings: object, host: str, port: int, root: object) -> None:
    import uvicorn

    from gigi_core import Kernel
    from gigi_web.app import create_app, dev_app

    kernel = await Kernel.open(getattr(root, "database_url", None), getattr(root, "home", None))
    try:
        make = dev_app if settings.dev else create_app  # type: ignore[attr-defined]
        app = make(kernel, settings)  # type: ignore[arg-type]
        # No access log: the sign-in callback's query holds the one-time code and state.
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            proxy_headers=True,
            server_header=False,
            log_level="info",
            access_log=False,
        )
        click.echo(f"Gigi dashboard on {settings.base_url}", err=True)  # type: ignore[attr-defined]
        await uvicorn.Server(config).serve()
    finally:
        await kernel.close()
