"""A logging filter that keeps credentials out of every log line, Gigi's and its libraries'.

With ``--debug`` the transport loggers (``httpx``, ``httpcore.*``) write request and
response headers; an endpoint may echo a key in a header or an error body. The filter
rewrites each record's message (and its traceback text) before any handler formats it:

* values of credential headers (``authorization``, ``x-api-key``, ``x-goog-api-key``,
  ``cookie``, ...) in the shapes httpcore logs them, and ``Bearer ...`` tokens;
* strings shaped like provider keys (``sk-...``, ``sk-ant-...``, Google's ``AIza...``)
  and Discord bot tokens;
* every key the owned LLM client sent recently, with its fragments of 8 characters or
  more (``gigi_core.llm.scrub``).

Install it on a handler (``handler.addFilter(SecretFilter())``) to cover every logger
whose records that handler emits; ``protect_transport_loggers()`` also puts it on the
transport loggers themselves, so embedders that never call ``install`` are covered too.
"""

from __future__ import annotations

import logging
import re
from typing import Any

REDACTED = "[redacted]"
TRANSPORT_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)
_HEADER_NAMES = (
    r"(?:proxy-)?authorization|x-api-key|x-goog-api-key|api-key|x-auth-token|"
    r"(?:set-)?cookie|x-[a-z0-9-]*(?:key|token|secret)"
)
# httpcore: [(b'authorization', b'Bearer sk-...'), ...]; plain text: "authorization: ..."
_HEADER_TUPLE = re.compile(rf"""(?i)(b?['"](?:{_HEADER_NAMES})['"]\s*,\s*b?)(['"])(.*?)(\2)""")
_HEADER_LINE = re.compile(
    rf"""(?im)(\b(?:{_HEADER_NAMES})\s*[:=]\s*)([^\s'",;)]+(?: [^\s'",;)]+)?)"""
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,}|xai-[A-Za-z0-9_-]{16,}|"
    r"gsk_[A-Za-z0-9]{16,}|ghp_[A-Za-z0-9]{20,}|"
    r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,})"  # Discord bot tokens
)


def redact(text: str) -> str:
    """``text`` with credential headers, bearer tokens, key shapes and known keys removed."""
    if not text:
        return text
    text = _HEADER_TUPLE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(4)}", text)
    text = _HEADER_LINE.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _KEY_SHAPES.sub(REDACTED, text)
    from gigi_core.llm.scrub import scrub_remembered

    return scrub_remembered(text)


class SecretFilter(logging.Filter):
    """Rewrites records in place (message, arguments, traceback); never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_gigi_redacted", False):
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the raw parts, redacted
            message = f"{record.msg} {record.args}"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        record._gigi_redacted = True
        return True


_FILTER = SecretFilter()


def protect_transport_loggers() -> None:
    """Put the filter on the httpx and httpcore loggers (idempotent)."""
    for name in TRANSPORT_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, SecretFilter) for f in logger.filters):
            logger.addFilter(_FILTER)


def install(*handlers: Any) -> None:
    """Filter ``handlers`` (default: the root logger's) and the transport loggers."""
    protect_transport_loggers()
    for handler in handlers or tuple(logging.getLogger().handlers):
        if not any(isinstance(f, SecretFilter) for f in handler.filters):
            handler.addFilter(_FILTER)
