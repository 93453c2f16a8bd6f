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

from gigi_core.llm import url_guard
from gigi_core.llm.errors import (
    ProviderError,
    body_message,
    classify_status,
    error_details,
    looks_like_html,
)
from gigi_core.llm.logfilter import protect_transport_loggers
from gigi_core.llm.retry import RetryPolicy, is_retryable_status, retry_hint
from gigi_core.llm.scrub import remember_secrets, secret_values
from gigi_core.llm.settings import (
    ATTEMPT_TIMEOUT_ENV,
    CALL_TIMEOUT_ENV,
    MAX_RESPONSE_BYTES_ENV,
    LlmSettings,
)

protect_transport_loggers()  # httpx/httpcore debug lines never show a key, whoever logs them

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

    Every attempt has a deadline (start to last body byte: a server trickling one byte
    per read timeout is still cut off) and so has the whole call, retry waits included;
    reply bodies are capped. ``settings`` defaults to ``LlmSettings.from_env()``.
    Pass ``sleep`` to make waits observable in tests and ``http`` to use your own client.
    """

    def __init__(
        self,
        *,
        retry: RetryPolicy | None = None,
        timeout: float | httpx.Timeout | None = None,
        sleep: Sleep | None = None,
        http: httpx.AsyncClient | None = None,
        settings: LlmSettings | None = None,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.settings = settings or LlmSettings.from_env()
        self._sleep = sleep or asyncio.sleep
        self._http = http

    async def get_json(
        self,
        url: str,
        *,
        provider: str,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        read_timeout: float | None = None,
    ) -> JsonReply:
        """GET ``url`` (e.g. a models listing) with the same retries, deadlines and caps."""
        if params:
            url = str(httpx.URL(url).copy_merge_params(dict(params)))
        return await self.post_json(
            url, None, provider=provider, headers=headers, read_timeout=read_timeout, method="GET"
        )

    async def post_json(
        self,
        url: str,
        payload: Any,
        *,
        provider: str,
        headers: Mapping[str, str] | None = None,
        read_timeout: float | None = None,
        method: str = "POST",
    ) -> JsonReply:
        """POST ``payload`` and return the decoded 2xx body, retrying what is worth retrying."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.call_timeout
        secrets = secret_values(headers or {})
        remember_secrets(secrets)
        attempt = 0
        while True:
            attempt += 1
            left = deadline - loop.time()
            try:
                return await self._attempt(
                    url, payload, provider, headers, read_timeout, attempt, left, secrets, method
                )
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
                if wait >= deadline - loop.time():
                    err.retryable = False
                    err.hint = (
                        f"no time left to retry within the call's "
                        f"{self.settings.call_timeout:g}s deadline ({CALL_TIMEOUT_ENV})"
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
        left: float,
        secrets: tuple[str, ...],
        method: str = "POST",
    ) -> JsonReply:
        limit = self.settings.attempt_timeout
        if read_timeout is not None:
            limit = min(limit, read_timeout)
        whole_call = left <= limit
        limit = max(min(limit, left), 0.0)
        content = (
            None
            if method == "GET"
            else json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
        )
        try:
            async with asyncio.timeout(limit):
                status, got, data, where = await self._exchange(
                    url, content, provider, headers, read_timeout, secrets, method
                )
        except TimeoutError:
            if whole_call:
                why = f"the call's {self.settings.call_timeout:g}s deadline ({CALL_TIMEOUT_ENV})"
            else:
                source = "the request's timeout" if limit == read_timeout else ATTEMPT_TIMEOUT_ENV
                why = f"the {limit:g}s deadline per attempt ({source})"
            raise ProviderError(
                provider,
                f"no complete reply from {url} within {why}",
                error_class="timeout",
                retryable=not whole_call,
                secrets=secrets,
            ) from None
        return self._read(status, got, data, where, provider, attempt, secrets)

    async def _exchange(
        self,
        url: str,
        content: bytes | None,
        provider: str,
        headers: Mapping[str, str] | None,
        read_timeout: float | None,
        secrets: tuple[str, ...],
        method: str = "POST",
    ) -> tuple[int, httpx.Headers, bytes | None, str]:
        """Send and read the body up to the cap: ``data`` is None when a 2xx body exceeds it."""
        client = self._http or shared_http_client()
        effective: Any = read_timeout if read_timeout is not None else self.timeout
        if effective is None:
            effective = DEFAULT_TIMEOUT
        sent = {"accept": "application/json"}
        if content is not None:
            sent["content-type"] = "application/json"
        sent.update(headers or {})
        cap = self.settings.max_response_bytes
        try:
            pin = await url_guard.pin(url, provider)  # keys added from a surface only
            if pin is None:
                request = client.build_request(
                    method, url, content=content, headers=sent, timeout=effective
                )
            else:  # to the address just checked, whatever the name resolves to next
                sent["host"] = pin.host_header
                request = client.build_request(
                    method,
                    pin.url,
                    content=content,
                    headers=sent,
                    timeout=effective,
                    extensions={"sni_hostname": pin.sni} if pin.sni else None,
                )
            response = await client.send(request, stream=True)
            try:
                declared = response.headers.get("content-length", "")
                too_big = declared.isdigit() and int(declared) > cap
                ok = 200 <= response.status_code < 300
                data = None if ok and too_big else await _read_capped(response, cap)
                where = url if pin is not None else str(request.url)  # the name, not the address
                return response.status_code, response.headers, data, where
            finally:
                await response.aclose()
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise ProviderError(
                provider,
                f"invalid base URL {url!r}: {exc}",
                error_class="config",
                hint="check the credential's base URL",
                secrets=secrets,
            ) from exc
        except httpx.TimeoutException as exc:
            raise ProviderError(
                provider,
                f"request timed out ({type(exc).__name__}) calling {url}",
                error_class="timeout",
                retryable=True,
                secrets=secrets,
            ) from exc
        except httpx.TransportError as exc:
            raise ProviderError(
                provider,
                f"could not reach {url}: {type(exc).__name__}: {exc}",
                error_class="network",
                retryable=True,
                secrets=secrets,
            ) from exc

    def _read(
        self,
        status: int,
        headers: httpx.Headers,
        data: bytes | None,
        where: str,
        provider: str,
        attempt: int,
        secrets: tuple[str, ...],
    ) -> JsonReply:
        if data is None:
            cap = self.settings.max_response_bytes
            raise ProviderError(
                provider,
                f"the reply is larger than the {cap} byte cap ({MAX_RESPONSE_BYTES_ENV})",
                error_class="invalid_response",
                status=status,
                request_id=request_id_of(headers),
                hint=f"raise {MAX_RESPONSE_BYTES_ENV} if such replies are expected",
            )
        text = _decode(data, headers)
        content_type = headers.get("content-type")
        body: Any = None
        try:
            body = json.loads(text) if text.strip() else None
        except (ValueError, RecursionError):
            body = None
        if 200 <= status < 300:
            if body is None:
                message = body_message(text, content_type, status)
                raise ProviderError(
                    provider,
                    f"reply was not JSON: {message}",
                    error_class="invalid_response",
                    status=status,
                    request_id=request_id_of(headers),
                    secrets=secrets,
                )
            if not embedded_error(body):
                return JsonReply(status, headers, body, request_id_of(headers, body), attempt)
        raise self._error(status, headers, where, provider, body, text, secrets)

    def _error(
        self,
        http_status: int,
        headers: httpx.Headers,
        where: str,
        provider: str,
        body: Any,
        text: str,
        secrets: tuple[str, ...],
    ) -> ProviderError:
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
                message = f"{message} [HTML error page from {where}]"
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
            secrets=secrets,
        )


async def _read_capped(response: httpx.Response, cap: int) -> bytes | None:
    """The body, or None once it passes ``cap`` bytes (an error body is cut there instead)."""
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > cap:
            if 200 <= response.status_code < 300:
                return None
            chunks.append(chunk[: max(cap - (total - len(chunk)), 0)])
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _decode(data: bytes, headers: httpx.Headers) -> str:
    charset = "utf-8"
    content_type = headers.get("content-type", "")
    for param in content_type.split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.lower() == "charset" and value:
            charset = value.strip("\"'")
    try:
        return data.decode(charset, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")
