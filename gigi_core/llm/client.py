"""The owned HTTP client: one pooled httpx.AsyncClient per event loop and the single retry layer.

Providers build payloads and parse replies; everything about transport, retries and
turning failures into ``ProviderError`` lives here so every provider behaves alike.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from gigi_core.llm.errors import (
    ProviderError,
    body_message,
    classify_status,
    error_details,
    looks_like_html,
)
from gigi_core.llm.retry import RetryPolicy, is_retryable_status, retry_hint

DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=180.0, write=30.0, pool=10.0)
DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)
_REQUEST_ID_HEADERS = ("request-id", "x-request-id", "x-goog-request-id", "x-generation-id")

Sleep = Callable[[float], Awaitable[None]]

_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def shared_http_client() -> httpx.AsyncClient:
    """The process's pooled client for the running loop (one per loop: pools are loop-bound)."""
    loop = asyncio.get_running_loop()
    client = _shared.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            timeout=DEFAULT_TIMEOUT, limits=DEFAULT_LIMITS, follow_redirects=False
        )
        _shared[loop] = client
    return client


async def close_shared_http_client() -> None:
    """Close the running loop's pooled client (the kernel calls this on shutdown)."""
    client = _shared.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()


@dataclass(frozen=True)
class JsonReply:
    """A successful reply: status, headers, the decoded JSON body and the request id."""

    status: int
    headers: Mapping[str, str]
    body: Any
    request_id: str | None
    attempts: int


def request_id_of(headers: Mapping[str, str], body: Any = None) -> str | None:
    """The provider's request id from the usual headers, else from an error body."""
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return value
    if isinstance(body, dict) and isinstance(body.get("request_id"), str):
        return body["request_id"]
    return None


def embedded_error(body: Any) -> bool:
    """True when a 2xx body is really an error (OpenRouter) rather than a result."""
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict | str):
        return False
    return not any(body.get(key) for key in ("choices", "candidates", "content", "data", "output"))


class LlmHttpClient:
    """POSTs JSON with retries; raises ``ProviderError`` with the provider's own message.

    Pass ``sleep`` to make waits observable in tests and ``http`` to use your own client.
    """

    def __init__(
        self,
        *,
        retry: RetryPolicy | None = None,
        timeout: float | httpx.Timeout | None = None,
        sleep: Sleep | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._sleep = sleep or asyncio.sleep
        self._http = http

    async def post_json(
        self,
        url: str,
        payload: Any,
        *,
        provider: str,
        headers: Mapping[str, str] | None = None,
        read_timeout: float | None = None,
    ) -> JsonReply:
        """POST ``payload`` and return the decoded 2xx body, retrying what is worth retrying."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._attempt(url, payload, provider, headers, read_timeout, attempt)
            except ProviderError as err:
                err.attempts = attempt
                if not err.retryable or attempt >= self.retry.max_attempts:
                    raise
                wait = self.retry.delay(attempt, err.retry_after)
                if wait is None:
                    err.retryable = False
                    err.hint = (
                        f"the provider asked to wait {err.retry_after:.0f}s, more than the "
                        f"{self.retry.max_retry_wait:.0f}s cap; try later or another model"
                    )
                    raise
                await self._sleep(wait)

    async def _attempt(
        self,
        url: str,
        payload: Any,
        provider: str,
        headers: Mapping[str, str] | None,
        read_timeout: float | None,
        attempt: int,
    ) -> JsonReply:
        client = self._http or shared_http_client()
        effective: Any = read_timeout if read_timeout is not None else self.timeout
        if effective is None:
            effective = DEFAULT_TIMEOUT
        content = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
        sent = {"content-type": "application/json", "accept": "application/json"}
        sent.update(headers or {})
        try:
            response = await client.post(url, content=content, headers=sent, timeout=effective)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise ProviderError(
                provider,
                f"invalid base URL {url!r}: {exc}",
                error_class="config",
                hint="check the credential's base URL",
            ) from exc
        except httpx.TimeoutException as exc:
            raise ProviderError(
                provider,
                f"request timed out ({type(exc).__name__}) calling {url}",
                error_class="timeout",
                retryable=True,
            ) from exc
        except httpx.TransportError as exc:
            raise ProviderError(
                provider,
                f"could not reach {url}: {type(exc).__name__}: {exc}",
                error_class="network",
                retryable=True,
            ) from exc
        return self._read(response, provider, attempt)

    def _read(self, response: httpx.Response, provider: str, attempt: int) -> JsonReply:
        headers = response.headers
        text = response.text
        content_type = headers.get("content-type")
        body: Any = None
        try:
            body = json.loads(text) if text.strip() else None
        except ValueError:
            body = None
        status = response.status_code
        if 200 <= status < 300:
            if body is None:
                message = body_message(text, content_type, status)
                raise ProviderError(
                    provider,
                    f"reply was not JSON: {message}",
                    error_class="invalid_response",
                    status=status,
                    request_id=request_id_of(headers),
                )
            if not embedded_error(body):
                return JsonReply(status, headers, body, request_id_of(headers, body), attempt)
        raise self._error(response, provider, body, text)

    def _error(
        self, response: httpx.Response, provider: str, body: Any, text: str
    ) -> ProviderError:
        headers = response.headers
        http_status = response.status_code
        details = error_details(body)
        in_body = 200 <= http_status < 300
        if in_body:  # an error inside a 200: its own code, when it has one, decides
            status = details.status if details else None
        else:
            status = http_status
        if details is not None:
            message = details.message
        else:
            message = body_message(text, headers.get("content-type"), http_status)
            if looks_like_html(text, headers.get("content-type")):
                message = f"{message} [HTML error page from {response.request.url}]"
        error_class = classify_status(status) if status is not None else "provider_error"
        credit = bool(details and details.credit)
        if credit:
            error_class = "credit"
        retryable = status is not None and is_retryable_status(status) and not credit
        if headers.get("x-should-retry", "").lower() == "false":
            retryable = False
        return ProviderError(
            provider,
            message,
            error_class=error_class,
            status=status,
            retryable=retryable,
            request_id=request_id_of(headers, body),
            retry_after=retry_hint(headers, details.retry_delay if details else None),
            code=details.code if details else None,
        )
