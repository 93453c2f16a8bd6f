"""The operator's server list: ``GIGI_HOME/mcp/servers.json``, validated with pydantic.

Secret values never live in this file: ``env`` and ``headers`` map a name to the
*environment variable* that holds the value, and ``secrets`` / ``secret_headers`` name values
sealed in the store (``gigi_mcp.sealed``); both are read when the server is started.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gigi_mcp.catalogue import mcp_home
from gigi_mcp.errors import McpConfigError

__all__ = ["mcp_home"]  # re-exported: the CLI and tests find GIGI_HOME/mcp here

SERVER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,27}$")  # mcp_<name> stays within 32 characters
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What an env reference may be: a conventional variable name. Mixed-case or long strings
# (ghp_..., sk_live_...) are token-shaped: refused, and never repeated in a message.
VAR_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
SECRET_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # sealed as "<server>:<KEY>"
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]+$")
Safety = Literal["read_only", "write", "destructive", "external"]
Confirm = Literal["never", "policy", "always"]
DEFAULT_TIMEOUT = 30.0


class ToolOverride(BaseModel):
    """What an operator decided for one tool; hints can tighten it, never loosen it."""

    model_config = ConfigDict(extra="forbid")

    safety: Safety | None = None
    capability: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
    confirm: Confirm | None = None
    timeout_seconds: float | None = Field(default=None, gt=0, le=600)


class ServerConfig(BaseModel):
    """One MCP server: exactly one of ``stdio`` (argv) or ``url`` (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid")

    stdio: list[str] | None = None
    url: str | None = None
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)  # child's KEY -> operator's ENVVAR
    headers: dict[str, str] = Field(default_factory=dict)  # HTTP header -> operator's ENVVAR
    secrets: list[str] = Field(default_factory=list)  # sealed KEYs; a stdio child gets each as KEY
    secret_headers: dict[str, str] = Field(default_factory=dict)  # HTTP header -> sealed KEY
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT, gt=0, le=600)
    tools: dict[str, ToolOverride] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if (self.stdio is None) == (self.url is None):
            raise ValueError("give exactly one of stdio (a command) or url")
        if self.stdio is not None and not self.stdio:
            raise ValueError("stdio: the command is empty")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ValueError("url: must start with http:// or https://")
        if (self.headers or self.secret_headers) and self.url is None:
            raise ValueError("headers: only an HTTP server (url) takes headers")
        self._check_secrets()
        return self

    def _check_secrets(self) -> None:
        """Sealed keys are names like env keys; each must reach the server exactly one way."""
        for key in self.secrets:
            if not SECRET_KEY.match(key):
                raise ValueError(f"secrets: {key!r} must be a name like API_TOKEN (not a value)")
        if len(set(self.secrets)) != len(self.secrets):
            raise ValueError("secrets: a key is listed twice")
        if clash := sorted(set(self.secrets) & set(self.env)):
            raise ValueError(f"secrets: {clash[0]} is also in env; give it one source")
        for header, key in self.secret_headers.items():
            if not HEADER_NAME.match(header) or key not in self.secrets:
                raise ValueError(
                    f"secret_headers: {header}={key} must be HEADER=KEY with KEY in secrets"
                )
        if clash := sorted(set(self.headers) & set(self.secret_headers)):
            raise ValueError(f"secret_headers: {clash[0]} is also in headers; give it one source")
        if self.url is not None and (
            unused := sorted(set(self.secrets) - {*self.secret_headers.values()})
        ):
            raise ValueError(
                f"secrets: {unused[0]} is sent nowhere (an HTTP server gets sealed secrets "
                "only as secret_headers)"
            )

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        # Never echo what was typed on the right: an operator may have pasted the secret.
        for key, var in value.items():
            if not ENV_NAME.match(key):
                raise ValueError("env: a key must be a variable name (KEY=ENVVAR)")
            if not VAR_NAME.match(var):
                raise ValueError(
                    f"env.{key} must name an environment variable in capitals (KEY=ENVVAR); "
                    "what was given looks like a value, so it was not stored"
                )
        return value

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key, var in value.items():
            if not HEADER_NAME.match(key):
                raise ValueError("headers: a key must be a header name (HEADER=ENVVAR)")
            if not VAR_NAME.match(var):
                raise ValueError(
                    f"headers.{key} must name an environment variable in capitals "
                    "(HEADER=ENVVAR); what was given looks like a value, so it was not stored"
                )
        return value

    @property
    def transport(self) -> str:
        return "stdio" if self.stdio is not None else "http"

    def child_env(self, server: str) -> dict[str, str]:
        """The variables the config names, read now; a missing one is the operator's to fix."""
        return {key: _env(var, server, "env", key) for key, var in self.env.items()}

    def http_headers(self, server: str) -> dict[str, str]:
        """The headers whose values come from the environment (sealed ones: ``sealed``)."""
        return {key: _env(var, server, "headers", key) for key, var in self.headers.items()}


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: dict[str, ServerConfig] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, ServerConfig]) -> dict[str, ServerConfig]:
        for name in value:
            check_server_name(name)
        return value


def _env(var: str, server: str, field: str, key: str) -> str:
    value = os.environ.get(var)
    if value is None:
        raise McpConfigError(
            f"server {server!r}: {field}.{key} names the environment variable {var}, "
            "which is not set",
            hint=f"export {var}=... before starting Gigi",
        )
    return value


def check_server_name(name: str) -> str:
    if not SERVER_NAME.match(name):
        raise McpConfigError(
            f"server name {name!r} must match ^[a-z][a-z0-9_]*$ and have at most 28 characters",
            hint="it becomes the plugin name mcp_<name>",
        )
    return name


def config_path(root: Path) -> Path:
    return root / "servers.json"


def load_config(root: Path) -> McpConfig:
    path = config_path(root)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return McpConfig()
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read ({exc})") from None
    try:
        return McpConfig.model_validate(json.loads(raw))
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise McpConfigError(f"{path}: {where}: {first['msg']}") from None


def save_config(root: Path, config: McpConfig) -> None:
    write_json(config_path(root), config.model_dump(mode="json", exclude_defaults=True))


def write_json(path: Path, data: object) -> None:
    """Atomic (write then rename) and private: the file names which variables hold secrets."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
