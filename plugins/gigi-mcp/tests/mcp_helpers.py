"""Helpers for the bridge's tests: attach the test servers, approve them, open a kernel."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from gigi_mcp import server_admin
from gigi_mcp.config import config_path

from gigi_core import Actor
from gigi_core.testing import open_test_kernel

SERVERS = Path(__file__).parent / "servers"
ADMIN = Actor(id="admin1", is_admin=True)
MEMBER = Actor(id="member1")


def python_server(script: str) -> str:
    return shlex.join([sys.executable, str(SERVERS / script)])


def attach(home: Path, name: str, stdio: str, **kwargs: Any) -> None:
    server_admin.add_server(
        home,
        name,
        stdio=stdio,
        url=kwargs.pop("url", None),
        env=kwargs.pop("env", {}),
        headers=kwargs.pop("headers", {}),
        **kwargs,
    )


def set_tool_overrides(home: Path, server: str, tools: dict[str, dict[str, Any]]) -> None:
    """Edit the servers file as an operator would."""
    path = config_path(home)
    data = json.loads(path.read_text())
    data["servers"][server]["tools"] = tools
    path.write_text(json.dumps(data))


async def listed_and_approved(
    home: Path, name: str, *, approve: bool = True
) -> server_admin.Refreshed:
    done = await server_admin.refresh(home, name)
    if approve:
        server_admin.approve(home, name)
    return done


@asynccontextmanager
async def bridge_kernel(
    tmp_path: Path,
    database_url: str | None,
    *enabled: str,
    allow_external: bool = False,
    secret_key: str | None = None,
) -> AsyncIterator[Any]:
    """A kernel with the mcp plugin loaded (manifests generated now) and servers enabled in g1;
    pass the same ``secret_key`` to reopen what an earlier kernel sealed."""
    async with open_test_kernel(
        tmp_path, plugins=["mcp"], database_url=database_url, secret_key=secret_key
    ) as kernel:
        for server in enabled:
            await kernel.enable_plugin("g1", f"mcp_{server}", allow_external=allow_external)
        yield kernel


async def call(kernel: Any, action: str, args: dict[str, Any], actor: Actor = ADMIN) -> Any:
    outcome = await kernel.call_tool(action, args, actor=actor, guild_id="g1", channel_id="c1")
    return outcome.result


async def eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Poll for evidence a server process leaves behind (it runs beside the test)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


def new_secret_key() -> str:
    """An operator key in GIGI_SECRET_KEY's format: 32 random bytes, URL-safe base64."""
    import base64
    import os

    return base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")


def spec_of(kernel: Any, action: str) -> Any:
    return kernel.registry.actions[action]
