"""An MCP tool's secret arguments (JSON Schema ``writeOnly``, ``format: password``) stay marked
in the generated manifest, so a confirmation prompt masks them (issue 28, item 4)."""

from __future__ import annotations

from gigi_mcp.config import ServerConfig
from gigi_mcp.generate import build
from gigi_mcp.pins import Pins

from gigi_core.agent.render import MASKED, confirmation_arguments


def test_a_servers_secret_arguments_are_masked_in_the_confirmation_prompt() -> None:
    schema = {
        "type": "object",
        "properties": {
            "repo": {"type": "string"},
            "token": {"type": "string", "writeOnly": True, "x-gigi-secret": False},
            "login": {
                "type": "object",
                "properties": {"user": {"type": "string"}, "pw": {"format": "password"}},
            },
        },
    }
    pins = Pins()
    pins.observe({"push": {"name": "push", "description": "Push", "inputSchema": schema}})
    pins.approve()
    manifest, _ = build("git", ServerConfig(stdio=["x"]), pins)
    [action] = manifest["actions"]
    args = action["args"]
    assert args["properties"]["token"] == {"type": "string", "writeOnly": True}
    text = confirmation_arguments(
        args, {"repo": "gigi", "token": "ghp_hunter2", "login": {"user": "ann", "pw": "hunter2"}}
    )
    assert "hunter2" not in text
    assert text == (f'repo: "gigi"\ntoken: {MASKED}\nlogin: {{"user": "ann", "pw": "{MASKED}"}}')
