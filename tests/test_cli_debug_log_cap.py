"""What ``gigi --debug`` lets through: Gigi's own DEBUG records and the HTTP transport's
(headers, keys redacted), but no library's DEBUG records, which carry statement values
(aiosqlite), gateway payloads (discord.py), request bodies (discord.http) and protocol
messages (the MCP client): message text, prompts and tool arguments (issue 28)."""

from __future__ import annotations

import io
import logging

import pytest

from gigi_core.cli.logsetup import console_handler

TEXT = "canarymessagetext"


def emitted(handler: logging.Handler, name: str, level: int) -> str:
    stream = io.StringIO()
    handler.setStream(stream)  # type: ignore[attr-defined]
    record = logging.LogRecord(name, level, __file__, 1, "said %s", (TEXT,), None)
    if handler.filter(record):
        handler.emit(record)
    return stream.getvalue()


@pytest.mark.parametrize(
    "name",
    [
        "aiosqlite",
        "sqlalchemy.engine.Engine",
        "psycopg",
        "discord.gateway",
        "discord.http",
        "mcp.client.sse",
        "mcp.client.streamable_http",
        "openai._base_client",
        "websockets.client",
        "some_other_library",
    ],
)
def test_a_librarys_debug_records_are_held_back_its_info_is_not(name: str) -> None:
    handler = console_handler(debug=True)
    assert emitted(handler, name, logging.DEBUG) == ""
    assert TEXT in emitted(handler, name, logging.INFO)


@pytest.mark.parametrize(
    "name", ["gigi_core.jobs", "gigi_memory", "gigi_mcp.bridge", "httpcore.http11", "httpx"]
)
def test_gigis_own_and_the_transports_debug_records_pass(name: str) -> None:
    assert f"DEBUG {name}: said {TEXT}" in emitted(console_handler(debug=True), name, 10)


def test_keys_are_still_redacted() -> None:
    handler = console_handler(debug=True)
    stream = io.StringIO()
    handler.setStream(stream)  # type: ignore[attr-defined]
    record = logging.LogRecord(
        "httpcore.http11", logging.DEBUG, __file__, 1, "authorization: Bearer %s", ("x" * 30,), None
    )
    if handler.filter(record):
        handler.emit(record)
    assert "x" * 30 not in stream.getvalue() and "[redacted]" in stream.getvalue()
