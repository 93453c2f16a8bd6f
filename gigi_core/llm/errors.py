"""ProviderError and the helpers that turn a provider's error body into one.

The provider's own words are the message (trimmed, HTML stripped): model ids are free
strings, so "unknown model" must read as the provider wrote it, never as a catalogue.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from gigi_core.errors import GigiError

ErrorClass = Literal[
    "bad_request",
    "auth",
    "permission",
    "not_found",
    "credit",
    "rate_limited",
    "overloaded",
    "server",
    "timeout",
    "conflict",
    "network",
    "config",
    "invalid_response",
    "provider_error",
    "unsupported",
]
ERROR_CLASSES: tuple[str, ...] = get_args(ErrorClass)
#: What moves a failover list on when admins name nothing: failures of the provider, not
#: of the request (``gigi_core.llm.failover_store``).
FAILOVER_DEFAULT_ON: tuple[str, ...] = ("rate_limited", "overloaded", "server", "timeout")

MAX_MESSAGE_CHARS = 2000
#: How much of a provider's text is kept (then scrubbed, then trimmed): bounds the work.
MAX_SCRUBBED_CHARS = 64_000
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

# Codes that mean "no money left" even when they arrive as a 429: never retried.
_CREDIT_MARKERS = (
    "insufficient_quota",
    "spend_limit",
    "billing_hard_limit",
    "insufficient_credits",
    "billing_error",
)


class ProviderError(GigiError):
    """A provider call failed; ``provider_message`` is the provider's text, verbatim but trimmed.

    ``secrets`` (the keys the call sent) are scrubbed from the text *before* it is
    trimmed, fragments of 8 characters or more included, so a cut never leaves most of
    a key behind; ``rescrubbed`` repeats that with more keys from the untrimmed text.
    """

    def __init__(
        self,
        provider: str,
        provider_message: str,
        *,
        error_class: ErrorClass,
        status: int | None = None,
        retryable: bool = False,
        request_id: str | None = None,
        retry_after: float | None = None,
        code: str | None = None,
        attempts: int = 1,
        hint: str | None = None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        from gigi_core.llm.scrub import scrub

        self.provider = provider
        self._untrimmed = scrub(provider_message[:MAX_SCRUBBED_CHARS], secrets)
        self.provider_message = trim(self._untrimmed)
        self.error_class: ErrorClass = error_class
        self.status = status
        self.retryable = retryable
        self.request_id = request_id
        self.retry_after = retry_after
        self.code = code
        self.attempts = attempts
        where = f"HTTP {status}" if status is not None else error_class
        super().__init__(f"{provider} error ({where}): {self.provider_message}", hint=hint)

    def rescrubbed(self, secrets: tuple[str, ...]) -> ProviderError:
        """The same error with ``secrets`` scrubbed from its untrimmed text, then trimmed."""
        from gigi_core.llm.scrub import scrub

        hint = scrub(self.hint, secrets) if self.hint else self.hint
        clean = ProviderError(
            self.provider,
            self._untrimmed,
            error_class=self.error_class,
            status=self.status,
            retryable=self.retryable,
            request_id=self.request_id,
            retry_after=self.retry_after,
            code=self.code,
            attempts=self.attempts,
            hint=hint,
            secrets=secrets,
        )
        return clean

    def to_dict(self) -> dict[str, Any]:
        """Metadata for usage/audit rows: no bodies beyond the trimmed provider message."""
        return {
            "provider": self.provider,
            "status": self.status,
            "error_class": self.error_class,
            "retryable": self.retryable,
            "request_id": self.request_id,
            "code": self.code,
            "attempts": self.attempts,
        }


@dataclass(frozen=True)
class ErrorDetails:
    """What could be read out of an error body, whatever the provider's format."""

    message: str
    code: str | None = None
    status: int | None = None
    retry_delay: float | None = None
    credit: bool = False


def trim(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Cut ``text`` to ``limit`` characters, saying so, so one error never floods a log or chat."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + " … [truncated]"


_SCRIPT_STYLE = re.compile(r"(?is)<(script|style|head)\b.*?</\1\s*>")
_TAG = re.compile(r"(?s)<[^>]*>")
_SPACE = re.compile(r"\s+")


def looks_like_html(text: str, content_type: str | None = None) -> bool:
    """True for gateway error pages and other HTML bodies."""
    if content_type and "html" in content_type.lower():
        return True
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype", "<html", "<head", "<body")) or "<html" in head


def strip_html(text: str) -> str:
    """Keep only the readable text of an HTML page (titles and paragraphs, no markup)."""
    text = _SCRIPT_STYLE.sub(" ", text)
    text = _TAG.sub(" ", text)
    return _SPACE.sub(" ", html.unescape(text)).strip()


def classify_status(status: int) -> ErrorClass:
    """The short error class for an HTTP status."""
    if status == 401:
        return "auth"
    if status == 402:
        return "credit"
    if status == 403:
        return "permission"
    if status == 404:
        return "not_found"
    if status == 408:
        return "timeout"
    if status == 409:
        return "conflict"
    if status == 429:
        return "rate_limited"
    if status == 529:
        return "overloaded"
    if status >= 500:
        return "server"
    return "bad_request"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def parse_duration(value: Any) -> float | None:
    """Parse Google's protobuf Duration text (``"46s"``, ``"1.5s"``) into seconds."""
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):  # {"seconds": 46, "nanos": 0}
        try:
            return float(value.get("seconds", 0)) + float(value.get("nanos", 0)) / 1e9
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", value)
        if match:
            return float(match.group(1))
    return None


def _has_credit_marker(*values: Any) -> bool:
    for value in values:
        if isinstance(value, str) and any(m in value.lower() for m in _CREDIT_MARKERS):
            return True
    return False


def error_details(body: Any) -> ErrorDetails | None:
    """Read an error out of an OpenAI, OpenRouter, Anthropic or Gemini JSON body, else None."""
    if not isinstance(body, dict):
        return None
    err = body.get("error")
    if isinstance(err, str):
        return ErrorDetails(message=err)
    if not isinstance(err, dict):
        return None
    message = _as_text(err.get("message")) or _as_text(err)
    meta = err.get("metadata")
    if isinstance(meta, dict) and meta.get("raw") not in (None, ""):
        who = meta.get("provider_name")
        prefix = f"{message} ({who})" if who else message
        message = f"{prefix}: {_as_text(meta['raw'])}"
    code_value = err.get("code")
    status = code_value if isinstance(code_value, int) and 100 <= code_value <= 599 else None
    kind = err.get("type") or err.get("status")
    code = _as_text(kind) if kind else (_as_text(code_value) if code_value is not None else None)
    retry_delay = None
    credit = _has_credit_marker(err.get("type"), err.get("code"))
    details = err.get("details")
    if isinstance(details, dict):  # Anthropic: {"error_code": "enforced_spend_limit_reached"}
        credit = credit or _has_credit_marker(details.get("error_code"))
    elif isinstance(details, list):  # Gemini: google.rpc.* detail objects
        for item in details:
            if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
                retry_delay = parse_duration(item.get("retryDelay"))
    return ErrorDetails(
        message=message, code=code, status=status, retry_delay=retry_delay, credit=credit
    )


def body_message(text: str, content_type: str | None, status: int | None = None) -> str:
    """The readable message of a non-JSON error body (HTML stripped, empty bodies named)."""
    if looks_like_html(text, content_type):
        stripped = strip_html(text)
        return stripped or f"HTML error page (HTTP {status})"
    return text.strip() or f"empty response body (HTTP {status})"
