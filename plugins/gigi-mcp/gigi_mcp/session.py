"""One long-lived MCP session per server: started lazily, restarted with backoff.

An owner task enters the SDK ``Client`` (anyio needs enter and exit in one task) and holds it
until the session is stopped or broken; calls run from the callers' tasks. A crash, a closed
transport or an HTTP 404 for a stale session id breaks the session; the next call starts a new
one unless the server is inside its backoff window, in which case it fails fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gigi_core import ToolExecutionError
from gigi_mcp.config import ServerConfig
from gigi_mcp.errors import McpConfigError, ServerUnavailable
from gigi_mcp.pins import definition_of
from gigi_mcp.sealed import Opener, resolve

log = logging.getLogger(__name__)
Listing = Callable[[str, dict[str, dict[str, Any]]], None]
CONNECT_TIMEOUT = float(os.environ.get("GIGI_MCP_CONNECT_TIMEOUT_SECONDS", "30"))
BACKOFF_MAX = float(os.environ.get("GIGI_MCP_BACKOFF_MAX_SECONDS", "60"))
_PAGE_CAP = 50


def is_stale_session(exc: BaseException) -> bool:
    """The SDK's spelling of an HTTP 404 for a session id the server no longer knows."""
    from mcp import MCPError

    return isinstance(exc, MCPError) and "session terminated" in str(exc.error.message).lower()


def is_protocol_answer(exc: BaseException) -> bool:
    """A JSON-RPC error the server sent on purpose (the session itself is fine)."""
    from mcp import MCPError

    return (
        isinstance(exc, MCPError)
        and not is_stale_session(exc)
        and exc.error.code
        not in (
            -32000,  # connection closed
            -32001,  # request timeout
        )
    )


class ServerSession:
    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        on_listing: Listing,
        log_dir: Path | None,
        secrets: Opener | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.secrets = secrets  # opens sealed values at each start; None: env references only
        self.on_listing = on_listing
        self.log_dir = log_dir
        self.failures = 0
        self.retry_at = 0.0
        self.last_error: str | None = None
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- state ----------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        if self._client is None or self._owner is None or self._owner.done():
            return False
        return not _transport_closed(self._client)

    def down_reason(self) -> str | None:
        """Why the server's tools are unavailable right now, or None."""
        wait = self.retry_at - time.monotonic()
        if self.connected or wait <= 0:
            return None
        return (
            f"the MCP server {self.name!r} is unavailable ({self.last_error}); "
            f"Gigi tries again in {wait:.0f}s"
        )

    # -- lifecycle ------------------------------------------------------------------------
    async def client(self) -> Any:
        """The live client, starting the session if needed (one start at a time)."""
        if self.connected:
            return self._client
        async with self._lock:
            if self.connected:
                return self._client
            if self._owner is not None:  # closed while idle: clean up before starting anew
                log.info("mcp server %s: the session ended while idle; restarting", self.name)
                await self.stop()
            reason = self.down_reason()
            if reason is not None:
                raise ServerUnavailable(reason)
            await self._start()
            return self._client

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.create_task(self._own(ready, self._stop), name=f"mcp:{self.name}")
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                await asyncio.shield(ready)
        except BaseException as exc:
            self._stop.set()
            self._owner.cancel()  # a server that never answers must not keep a task around
            self._fail(exc if isinstance(exc, Exception) else TimeoutError("cancelled"))
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise ServerUnavailable(
                f"cannot start the MCP server {self.name!r}: {self.last_error}",
                hint="`gigi mcp refresh` shows the error; the server's stderr is in "
                f"GIGI_HOME/mcp/logs/{self.name}.log",
            ) from None
        self.failures = 0
        self.last_error = None

    def _fail(self, exc: BaseException) -> None:
        self.failures += 1
        delay = min(BACKOFF_MAX, 0.5 * 2 ** (self.failures - 1))
        self.retry_at = time.monotonic() + delay
        # This reaches the model (tool errors, deny reasons): our own config errors (written
        # never to quote a value) as they are, anything else by class; the log has more.
        self.last_error = str(exc) if isinstance(exc, McpConfigError) else type(exc).__name__
        self._client = None
        log.warning("mcp server %s failed (%s); retry in %.1fs", self.name, _describe(exc), delay)

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        from mcp import Client

        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = Client(
                    transport, cache=None, message_handler=self._on_message, mode="auto"
                )
                await stack.enter_async_context(client)
                definitions = await list_definitions(client)
                self.on_listing(self.name, definitions)
                self._client = client
                if not ready.done():
                    ready.set_result(None)
                async with asyncio.TaskGroup() as group:
                    group.create_task(self._listen(client))
                    await stop.wait()
                    raise _Stopped
        except* _Stopped:
            pass
        except* BaseException as group:
            exc = group.exceptions[0]
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            elif not stop.is_set():  # the session died by itself (not an error while closing)
                self._fail(exc)
        finally:
            self._client = None

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        env, headers = await resolve(self.config, self.name, self.secrets)  # never logged
        if self.config.stdio is not None:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=self.config.stdio[0],
                args=self.config.stdio[1:],
                env=env,  # merged onto the SDK's safe default set
                cwd=self.config.cwd,
            )
            errlog = stack.enter_context(self._errlog())
            return stdio_client(params, errlog=errlog)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # The SDK's own timeouts (a response stream may stay open), our headers; no redirects.
        http = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(30.0, read=300.0),
            follow_redirects=False,
        )
        await stack.enter_async_context(http)
        return streamable_http_client(self.config.url or "", http_client=http)

    def _errlog(self) -> Any:
        if self.log_dir is None:
            return open(os.devnull, "w")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        path = self.log_dir / f"{self.name}.log"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "a", encoding="utf-8")

    async def _listen(self, client: Any) -> None:
        """2026-07-28 servers announce tool changes on a subscription; legacy ones by message."""
        from mcp.client.subscriptions import ListenNotSupportedError

        caps = getattr(client.server_capabilities, "tools", None)
        if caps is None or not getattr(caps, "list_changed", False):
            return
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    await self._relist(client)
        except ListenNotSupportedError:
            return
        except Exception as exc:
            log.info("mcp server %s: change subscription ended (%s)", self.name, _describe(exc))

    async def _on_message(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/tools/list_changed":
            client = self._client
            if client is not None:  # keep a reference: a bare task may be collected mid-run
                task = asyncio.get_running_loop().create_task(self._relist(client))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _relist(self, client: Any) -> None:
        try:
            self.on_listing(self.name, await list_definitions(client))
        except Exception as exc:
            log.warning("mcp server %s: re-listing tools failed (%s)", self.name, _describe(exc))

    async def stop(self) -> None:
        owner, self._owner = self._owner, None
        if self._stop is not None:
            self._stop.set()
        if owner is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                async with asyncio.timeout(10):
                    await owner
            if not owner.done():
                owner.cancel()
        self._client = None

    async def broken(self, exc: BaseException) -> None:
        """The transport failed under a call: drop the session so the next call restarts it."""
        self._fail(exc)
        await self.stop()

    # -- calls ----------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """``tools/call``; a stale session is restarted and the call sent once more (the server
        never saw it), any other transport failure breaks the session and is reported."""
        for attempt in (1, 2):
            client = await self.client()
            try:
                return await client.call_tool(tool, arguments)
            except asyncio.CancelledError:
                raise  # the SDK has told the server (notifications/cancelled)
            except Exception as exc:
                if is_protocol_answer(exc):
                    # The session is fine; the server refused this call (unknown tool, ...).
                    message = str(getattr(exc, "error", exc).message)[:500]
                    raise ToolExecutionError(
                        f"the MCP server {self.name!r} refused the call: {message}"
                    ) from None
                stale = is_stale_session(exc)
                await self.broken(exc)
                if stale and attempt == 1:
                    self.retry_at = 0.0
                    continue
                raise ServerUnavailable(
                    f"the MCP server {self.name!r} failed during the call ({_describe(exc)}); "
                    "it is restarted for the next call"
                ) from None
        raise AssertionError("unreachable")


class _Stopped(Exception):
    pass


def _transport_closed(client: Any) -> bool:
    """The transport reached EOF while idle (a child that died between calls): a call sent
    now would fail before reaching anyone, so the session is restarted instead. Reads the
    SDK's dispatcher state; if the SDK stops exposing it, a dead session is found by the
    call that fails on it, as before."""
    try:
        dispatcher = getattr(client.session, "_dispatcher", None)
    except Exception:
        return False
    return getattr(dispatcher, "_closed", False) is True


async def list_definitions(client: Any) -> dict[str, dict[str, Any]]:
    """Every tool, all pages, as approval sees them."""
    out: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        for tool in page.tools:
            out[tool.name] = definition_of(tool)
        cursor = page.next_cursor
        if not cursor:
            break
    return out


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
