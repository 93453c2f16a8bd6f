"""Servers' secrets sealed in the store: ``kernel.plugin_secrets("mcp")``, one row per
``<server>:<KEY>``.

The servers file records only that ``KEY`` is sealed; the value is opened when a session
starts and goes to the child's environment or an HTTP header, never to a file, a log line,
a listing or the generated manifest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from gigi_mcp.config import ServerConfig
from gigi_mcp.errors import McpConfigError

OWNER = "mcp"  # the plugin's entry-point name: every server's secrets share one owner
Opener = Callable[[str], Awaitable[str | None]]  # sealed name -> plaintext, or None if unset


def sealed_name(server: str, key: str) -> str:
    return f"{server}:{key}"


def store(kernel: Any) -> Any:
    return kernel.plugin_secrets(OWNER)


def opener(kernel: Any) -> Opener:
    """What a session calls to open a value when it starts (never earlier, never cached)."""
    open_: Opener = store(kernel).open
    return open_


async def resolve(
    config: ServerConfig, server: str, open_: Opener | None
) -> tuple[dict[str, str], dict[str, str]]:
    """The child's extra environment and the HTTP headers: env-var references read now,
    sealed keys opened now. A missing one names the server and the key, never a value."""
    env, headers = config.child_env(server), config.http_headers(server)
    if not config.secrets:
        return env, headers
    if open_ is None:
        raise McpConfigError(
            f"server {server!r} has sealed secrets, which only a command with the store open "
            "can read",
            hint="run it through `gigi mcp ...` or a running Gigi",
        )
    values: dict[str, str] = {}
    for key in config.secrets:
        value = await open_(sealed_name(server, key))
        if value is None:
            raise McpConfigError(
                f"server {server!r}: the sealed secret {key} is not in the store",
                hint=f"seal it again: gigi mcp add {server} ... --secret {key} --replace",
            )
        values[key] = value
    if config.stdio is not None:
        env |= values
    headers |= {header: values[key] for header, key in config.secret_headers.items()}
    return env, headers


async def seal(kernel: Any, server: str, values: dict[str, str]) -> dict[str, str]:
    """Seal each value; returns KEY -> fingerprint (what may be shown)."""
    secrets = store(kernel)
    return {key: await secrets.put(sealed_name(server, key), v) for key, v in values.items()}


async def fingerprints(kernel: Any) -> dict[str, dict[str, str]]:
    """server -> KEY -> fingerprint, for `gigi mcp list`."""
    out: dict[str, dict[str, str]] = {}
    for name, fp in (await store(kernel).fingerprints()).items():
        server, sep, key = name.partition(":")
        if sep:
            out.setdefault(server, {})[key] = fp
    return out


async def forget(kernel: Any, server: str, keep: frozenset[str] = frozenset()) -> list[str]:
    """Delete the server's sealed secrets except ``keep``; returns the keys deleted."""
    secrets = store(kernel)
    gone = sorted(set((await fingerprints(kernel)).get(server, {})) - keep)
    for key in gone:
        await secrets.delete(sealed_name(server, key))
    return gone
