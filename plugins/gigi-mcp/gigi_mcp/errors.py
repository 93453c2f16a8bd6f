"""The bridge's errors: each names the server, file or field the operator must fix."""

from __future__ import annotations

from gigi_core import ConfigError, ToolExecutionError


class McpConfigError(ConfigError):
    """The servers file or a ``gigi mcp`` argument is wrong."""


class ServerUnavailable(ToolExecutionError):
    """The server could not be reached; its tools are unavailable until it is back."""


class ToolQuarantined(ToolExecutionError):
    """The tool's definition differs from the approved one."""
