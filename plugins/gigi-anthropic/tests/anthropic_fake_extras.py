"""Reply bodies FakeAnthropic's builders do not cover (candidates for gigi_core.testing).

``message_body`` makes one thinking block before the text; real replies also carry
redacted thinking, interleaved thinking between tool calls and ``pause_turn`` turns
with server tool blocks.
"""

from __future__ import annotations

from typing import Any

API_KEY = "sk-ant-test-0123456789"

USAGE = {
    "input_tokens": 880,
    "output_tokens": 89,
    "cache_creation_input_tokens": 5,
    "cache_read_input_tokens": 40,
}


def thinking_block(
    text: str, signature: str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
) -> dict:
    """A signed thinking block as the API returns it."""
    return {"type": "thinking", "thinking": text, "signature": signature}


def redacted_thinking_block(data: str = "EmwKAhgBEgy3va3pzix/LafPsn4a") -> dict:
    """Thinking the safety system encrypted: opaque, must be echoed unchanged."""
    return {"type": "redacted_thinking", "data": data}


def message(content: list[dict[str, Any]], stop_reason: str | None, **extra: Any) -> dict:
    """A full Messages body around ``content``."""
    body: dict[str, Any] = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(USAGE),
    }
    body.update(extra)
    return body


def interleaved_tool_use_body() -> dict:
    """thinking, tool_use (no id), redacted thinking, tool_use: order must survive the echo."""
    return message(
        [
            thinking_block("I need the weather first."),
            {"type": "tool_use", "name": "get_weather", "input": {"city": "Oslo"}},
            redacted_thinking_block(),
            {"type": "tool_use", "id": "toolu_01B", "name": "get_time", "input": {}},
        ],
        "tool_use",
    )


def pause_turn_body() -> dict:
    """A long server-tool turn the API paused; it continues when sent back unchanged."""
    return message(
        [
            {"type": "text", "text": "Searching."},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "web_search",
                "input": {"query": "oslo weather"},
            },
        ],
        "pause_turn",
    )
