"""The base-URL guard for keys added by members and guild admins from a surface.

Someone who is not the operator must not make Gigi call this machine or its network. A
key they add from Discord, the console or the web is refused when its base URL's host is
local, private or link-local: by address (IPv4-mapped, NAT64, 6to4, Teredo and
IPv4-compatible forms unwrapped first), by name, or as the name resolves now; a name that
does not resolve is refused too. Such a key is flagged (``url_checked``) and every call
on it resolves and checks the host again and connects to the address it checked, so a
name that later resolves inside (DNS rebinding) reaches nothing. The operator's CLI is
free to use local URLs; ``GIGI_LLM_LOCAL_URLS=1`` lets everyone (a shared local model
server), and the older ``GIGI_PERSONAL_KEY_LOCAL_URLS=1`` still does.
"""

from __future__ import annotations

import asyncio
import contextvars
import ipaddress
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from gigi_core.llm.errors import ProviderError
from gigi_core.llm.records import LlmConfigError

#: Set to 1 by an operator whose members and guild admins may point keys at this machine
#: or its network (a shared local model server): otherwise a base URL must be public.
LOCAL_URLS_ENV = "GIGI_LLM_LOCAL_URLS"
#: The variable's earlier name, still accepted.
OLD_LOCAL_URLS_ENV = "GIGI_PERSONAL_KEY_LOCAL_URLS"
_LOCAL_NAMES = ("localhost", ".localhost", ".local", ".internal", ".lan", ".home.arpa")
_YES = ("1", "true", "yes", "on")
LOOKUP_SECONDS = 2.0
#: A checked address is reused this long for its host (the connection goes to it).
PIN_SECONDS = 30.0
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: local translators
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated IPv4-compatible ::a.b.c.d
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 IPv4-translated (SIIT)

_guarded: contextvars.ContextVar[bool] = contextvars.ContextVar("gigi_llm_url_guard", default=False)
_pins: dict[str, tuple[float, str]] = {}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


#: The ``code`` of the ``ProviderError`` a guarded call raises when its host is inside or
#: cannot be looked up: Gigi's own refusal, made before connecting, not the provider's words.
REFUSED = "gigi_url_not_public"


def refused(err: ProviderError) -> bool:
    return err.code == REFUSED


def withheld(err: ProviderError) -> str:
    """What a failed call on a guarded key may show of the target's answer: its error class
    and status, never its body (that would make whatever the URL reaches readable)."""
    if refused(err):
        return err.provider_message  # Gigi's own words, naming base_url
    status = f", HTTP {err.status}" if err.status is not None else ""
    return (
        f"the call failed ({err.error_class}{status}); the answer's text is not shown for "
        "keys added from chat or the web"
    )


def local_urls_allowed() -> bool:
    """Whether the operator lets surface-added keys use local URLs (either variable)."""
    return any(
        os.environ.get(name, "").strip().lower() in _YES
        for name in (LOCAL_URLS_ENV, OLD_LOCAL_URLS_ENV)
    )


def unwrapped(ip: Address) -> list[Address]:
    """``ip`` and every IPv4 address it carries: IPv4-mapped, IPv4-translated
    (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96), 6to4 (2002::/16), Teredo (server and client)
    and IPv4-compatible forms."""
    out: list[Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            out.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            out.append(ip.sixtofour)
        if ip.teredo is not None:
            out.extend(ip.teredo)
        if ip in _NAT64 or ip in _TRANSLATED or (ip in _COMPATIBLE and int(ip) > 1):
            out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return out


def inside(address: str) -> bool:
    """Whether ``address`` (an IP literal) is this machine, its network or not routable
    on the internet, in any of the forms that wrap an IPv4 address."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip in _NAT64_LOCAL:
        return True
    return any(not a.is_global or a.is_multicast for a in unwrapped(ip))


def _host(base_url: str) -> str:
    return (urlsplit(base_url.strip()).hostname or "").rstrip(".").lower()


def _refusal(base_url: str, why: str) -> LlmConfigError:
    return LlmConfigError(
        f"the base_url {base_url!r} {why}",
        hint="give your provider's public https:// URL as base_url; an operator who wants "
        f"keys added from chat or the web to use a local model server sets {LOCAL_URLS_ENV}=1 "
        f"(formerly {OLD_LOCAL_URLS_ENV}=1)",
    )


async def public_address(base_url: str) -> str | None:
    """The address to connect to for ``base_url``'s host, proven public: every address the
    name resolves to must be. Raises ``LlmConfigError`` naming base_url otherwise, or when
    the name does not resolve in time. None: the operator allows local URLs."""
    if local_urls_allowed():
        return None
    host = _host(base_url)
    if not host or any(host == n.lstrip(".") or host.endswith(n) for n in _LOCAL_NAMES):
        raise _refusal(base_url, "points inside the server running Gigi or its network")
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        literal = True
    except ValueError:
        literal = False
    if literal:
        found = [host]
    else:
        try:
            infos = await asyncio.wait_for(
                asyncio.get_running_loop().getaddrinfo(host, None), timeout=LOOKUP_SECONDS
            )
        except (OSError, TimeoutError, UnicodeError):
            raise _refusal(
                base_url, f"has a host Gigi could not look up ({host}), so it cannot be checked"
            ) from None
        found = [str(info[4][0]) for info in infos]
    if not found or any(inside(a) for a in found):
        raise _refusal(base_url, "points inside the server running Gigi or its network")
    # IPv4 first where the name has one: a host without an IPv6 route still connects
    return next((a for a in found if ":" not in a), found[0])


async def check_url(base_url: str | None) -> None:
    """Refuses a base URL a member or guild admin may not use (see the module doc)."""
    if base_url is not None:
        await public_address(base_url)


# -- at every call on a flagged key ------------------------------------------------------


@contextmanager
def guarding(on: bool) -> Iterator[None]:
    """Within: the owned HTTP client checks and pins every host it connects to."""
    token = _guarded.set(on)
    try:
        yield
    finally:
        _guarded.reset(token)


def active() -> bool:
    return _guarded.get()


@dataclass(frozen=True)
class Pin:
    """Where a guarded request really goes: the checked address, with the name kept for
    the Host header and TLS (SNI and certificate check)."""

    url: httpx.URL
    host_header: str
    sni: str | None


def pinned(url: httpx.URL, address: str) -> Pin:
    """``url`` sent to ``address``; pure, so the rewriting is tested on its own."""
    host = url.host
    return Pin(
        url.copy_with(host=address),
        url.netloc.decode("ascii"),
        host if url.scheme == "https" else None,
    )


async def pin(url: str, provider: str) -> Pin | None:
    """The checked address for ``url`` when the guard is on (None when off or allowed);
    raises a ``ProviderError`` (code ``REFUSED``) naming the URL otherwise."""
    if not active() or local_urls_allowed():
        return None
    parsed = httpx.URL(url)
    now = time.monotonic()
    cached = _pins.get(parsed.host)
    if cached is not None and cached[0] > now:
        return pinned(parsed, cached[1])
    try:
        address = await public_address(url)
    except LlmConfigError as exc:
        raise ProviderError(
            provider,
            f"refused to connect: {exc}",
            error_class="config",
            code=REFUSED,
            hint=str(exc.hint) if exc.hint else None,
        ) from None
    if address is None:
        return None
    if len(_pins) > 1000:
        _pins.clear()
    _pins[parsed.host] = (now + PIN_SECONDS, address)
    return pinned(parsed, address)
