"""Both protocol eras and both transports: a legacy-only server over stdio and over HTTP
(stale session -> 404 -> a new session), and a current SDK server over streamable HTTP."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gigi_mcp import server_admin
from mcp_helpers import (
    bridge_kernel,
    call,
    eventually,
    listed_and_approved,
    new_secret_key,
    python_server,
)

from gigi_core import PolicyDenied


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(app: Any) -> Iterator[str]:
    """Run an ASGI app on 127.0.0.1 in a thread (its own event loop) for one test."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the test HTTP server did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def legacy_http() -> Iterator[tuple[str, Any]]:
    from servers import legacy

    legacy.SESSIONS.clear()
    legacy.CALLS.clear()
    legacy.AUTH.clear()
    legacy.STARTED.clear()
    for url in _serve(legacy.http_app()):
        yield url, legacy


@pytest.fixture
def modern_http() -> Iterator[str]:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server = MCPServer("web")

    @server.tool(
        description="Greet someone.",
        annotations=ToolAnnotations(
            read_only_hint=True, destructive_hint=False, open_world_hint=False
        ),
    )
    def greet(name: str) -> str:
        return f"hello {name}"

    yield from _serve(server.streamable_http_app())


async def test_a_legacy_stdio_server_is_reached_through_the_fallback(
    home, tmp_path, database_url
) -> None:
    from mcp_helpers import attach

    attach(home, "old", python_server("legacy.py"))
    await listed_and_approved(home, "old")
    async with bridge_kernel(tmp_path, database_url, "old") as kernel:
        result = await call(kernel, "mcp_old.echo", {"text": "hi"})
        assert result == {"content": [{"type": "text", "text": "echo: hi"}]}
        session = kernel.__dict__["gigi_mcp"].sessions["old"]
        assert (await session.client()).protocol_version == "2025-06-18"
        assert kernel.registry.actions["mcp_old.echo"].safety.value == "read_only"
        # a legacy server announces a changed list with a notification: quarantined at once
        assert (await call(kernel, "mcp_old.mutate", {}))["content"][0]["text"] == "mutated"
        bridge = kernel.__dict__["gigi_mcp"]
        assert await eventually(lambda: "mcp_old.echo" in bridge.quarantine)
        with pytest.raises(PolicyDenied, match="quarantined"):
            await call(kernel, "mcp_old.echo", {"text": "hi"})


async def test_legacy_http_stale_session_restarts_and_headers_come_from_the_environment(
    home, tmp_path, database_url, legacy_http, monkeypatch
) -> None:
    url, legacy = legacy_http
    monkeypatch.setenv("OLD_TOKEN", "Bearer sekret-123")
    server_admin.add_server(
        home, "oldweb", stdio=None, url=url, env={}, headers={"Authorization": "OLD_TOKEN"}
    )
    await listed_and_approved(home, "oldweb")
    async with bridge_kernel(tmp_path, database_url, "oldweb") as kernel:
        assert (await call(kernel, "mcp_oldweb.echo", {"text": "one"}))["content"]
        legacy.forget_sessions()  # the server restarted: our session id is stale now
        result = await call(kernel, "mcp_oldweb.echo", {"text": "two"})
        assert result["content"][0]["text"] == "echo: two"
    assert legacy.CALLS == ["one", "two"]  # "two" ran once, on the new session
    assert len(legacy.STARTED) == 3  # the refresh's, the first session's, the restart's
    assert set(legacy.AUTH) == {"Bearer sekret-123"}
    # the secret is in the environment only: never in Gigi's files or listings
    for path in home.rglob("*"):
        if path.is_file():
            assert "sekret-123" not in path.read_text(errors="replace"), path
    assert "sekret-123" not in json.dumps(server_admin.describe(home))


async def test_a_sealed_secret_is_sent_as_the_header_the_config_names(
    home, tmp_path, database_url, legacy_http
) -> None:
    from gigi_mcp import sealed
    from gigi_mcp.errors import ServerUnavailable

    url, legacy = legacy_http
    server_admin.add_server(
        home, "oldweb", stdio=None, url=url, env={}, headers={},
        secrets=["AUTH"], secret_headers={"Authorization": "AUTH"},
    )  # fmt: skip
    key = new_secret_key()
    async with bridge_kernel(tmp_path, database_url, secret_key=key) as kernel:
        with pytest.raises(ServerUnavailable, match="sealed secret AUTH is not in the store"):
            await server_admin.refresh(home, "oldweb", sealed.opener(kernel))
        await sealed.seal(kernel, "oldweb", {"AUTH": "Bearer sealed-456"})
        await server_admin.refresh(home, "oldweb", sealed.opener(kernel))
    server_admin.approve(home, "oldweb")
    async with bridge_kernel(tmp_path, database_url, "oldweb", secret_key=key) as kernel:
        assert (await call(kernel, "mcp_oldweb.echo", {"text": "one"}))["content"]
    assert set(legacy.AUTH) == {"Bearer sealed-456"}
    for path in home.rglob("*"):
        if path.is_file():
            assert "sealed-456" not in path.read_text(errors="replace"), path
    assert "sealed-456" not in json.dumps(server_admin.describe(home))


async def test_a_current_server_over_streamable_http(home, tmp_path, database_url, modern_http):
    server_admin.add_server(home, "web", stdio=None, url=modern_http, env={}, headers={})
    await listed_and_approved(home, "web")
    async with bridge_kernel(tmp_path, database_url, "web") as kernel:
        assert (await call(kernel, "mcp_web.greet", {"name": "Ada"})) == {"result": "hello Ada"}
        session = kernel.__dict__["gigi_mcp"].sessions["web"]
        assert (await session.client()).protocol_version >= "2026"
