"""The dashboard's settings: where it is served, how it reaches Discord, its limits."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from gigi_core import ConfigError

DISCORD_API = "https://discord.com/api/v10"
DISCORD_AUTHORIZE = "https://discord.com/oauth2/authorize"


def _number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, like {default:g}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be above 0, like {default:g}")
    return value


@dataclass(frozen=True)
class WebSettings:
    """Everything ``create_app`` needs besides the kernel; ``from_env`` fills it for operators."""

    base_url: str
    client_id: str
    client_secret: str
    bot_token: str
    discord_api: str = DISCORD_API
    authorize_url: str = DISCORD_AUTHORIZE
    session_key: str = ""  # signs cookies; empty: derived from the kernel's secret key
    session_hours: float = 8.0
    session_recheck_seconds: float = 5.0  # a stored session is re-read at most this late
    max_body_bytes: int = 64 * 1024
    rate_per_minute: float = 240.0
    rate_burst: float = 60.0
    member_ttl: float = 30.0  # seconds a member's Discord permissions are trusted
    max_sessions: int = 50_000  # signed-in sessions kept in the store
    max_anonymous_sessions: int = 10_000  # sign-ins in flight, capped apart from those
    dev: bool = False

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"--base-url must be an http(s) URL like https://gigi.example.org, "
                f"not {self.base_url!r}"
            )
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))

    @property
    def origin(self) -> str:
        """Scheme://host[:port] of the base URL: what a same-site form's Origin header says."""
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def secure_cookies(self) -> bool:
        return self.base_url.startswith("https://")

    @property
    def redirect_uri(self) -> str:
        return f"{self.base_url}/auth/callback"

    @classmethod
    def from_env(cls, base_url: str, *, dev: bool = False) -> WebSettings:
        """Operators set GIGI_WEB_CLIENT_ID, GIGI_WEB_CLIENT_SECRET and GIGI_DISCORD_TOKEN;
        ``dev`` needs none of them (a local fake Discord signs you in)."""
        env = os.environ
        limits = {
            "max_body_bytes": int(_number("GIGI_WEB_MAX_BODY_BYTES", 64 * 1024)),
            "rate_per_minute": _number("GIGI_WEB_RATE_PER_MINUTE", 240.0),
            "rate_burst": _number("GIGI_WEB_RATE_BURST", 60.0),
            "session_hours": _number("GIGI_WEB_SESSION_HOURS", 8.0),
            "session_recheck_seconds": _number("GIGI_WEB_SESSION_RECHECK_SECONDS", 5.0),
        }
        if env.get("GIGI_WEB_SESSION_KEY"):
            limits["session_key"] = env["GIGI_WEB_SESSION_KEY"]  # type: ignore[assignment]
        if dev:
            api = base_url.rstrip("/") + "/_dev/discord"
            return cls(
                base_url=base_url,
                client_id="dev-client",
                client_secret="dev-secret",
                bot_token="dev-bot-token",
                discord_api=api + "/api",
                authorize_url=api + "/oauth2/authorize",
                dev=True,
                **limits,  # type: ignore[arg-type]
            )
        missing = [
            name
            for name in ("GIGI_WEB_CLIENT_ID", "GIGI_WEB_CLIENT_SECRET", "GIGI_DISCORD_TOKEN")
            if not env.get(name)
        ]
        if missing:
            raise ConfigError(
                f"set {', '.join(missing)} (your Discord application's OAuth2 client id and "
                "secret, and the bot token) to serve the dashboard, or run `gigi web --dev` "
                "to try it with a local fake sign-in"
            )
        return cls(
            base_url=base_url,
            client_id=env["GIGI_WEB_CLIENT_ID"],
            client_secret=env["GIGI_WEB_CLIENT_SECRET"],
            bot_token=env["GIGI_DISCORD_TOKEN"],
            discord_api=env.get("GIGI_WEB_DISCORD_API", DISCORD_API),
            authorize_url=env.get("GIGI_WEB_DISCORD_AUTHORIZE", DISCORD_AUTHORIZE),
            **limits,  # type: ignore[arg-type]
        )
