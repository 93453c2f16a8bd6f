"""Helpers around one provider call: who/where metadata, params, fallback rule, key scrubbing.

Kept apart from ``service.py`` so the service reads as the list of what it offers.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from gigi_core.llm.errors import ProviderError
from gigi_core.llm.types import ChatRequest
from gigi_core.llm.usage import UsageRecord

if TYPE_CHECKING:
    from gigi_core.policy.actor import Actor

# Failures another model on the same key might not have; auth, credit, network and config
# failures would fail the fallback the same way, so they are raised at once.
FALLBACK_ON = frozenset(
    {
        "bad_request",
        "not_found",
        "server",
        "overloaded",
        "rate_limited",
        "timeout",
        "invalid_response",
        "provider_error",
        "unsupported",
    }
)


def actor_id(actor: Actor | str | None) -> str | None:
    return actor if isinstance(actor, str) or actor is None else actor.id


def ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def where(
    request_id: str | None, actor: Actor | str | None, guild_id: str | None, channel_id: str | None
) -> dict[str, Any]:
    return {
        "request_id": request_id or uuid.uuid4().hex,
        "actor_id": actor_id(actor),
        "guild_id": guild_id,
        "channel_id": channel_id,
    }


def failed(record: UsageRecord, error_class: str) -> UsageRecord:
    return UsageRecord(**{**record.__dict__, "status": "error", "error_class": error_class})


def apply_params(request: ChatRequest, params: dict[str, Any]) -> ChatRequest:
    """Profile params fill what the request left unset; the request's own values win."""
    update: dict[str, Any] = {}
    for name, value in params.items():
        if name == "provider_options" and isinstance(value, dict):
            update[name] = {**value, **request.provider_options}
        elif name in ChatRequest.model_fields and name not in ("model", "messages"):
            if getattr(request, name) in (None, [], {}):
                update[name] = value
    if not update:
        return request
    return ChatRequest.model_validate({**request.model_dump(by_alias=True), **update})


def scrubbed(err: ProviderError, key: str) -> ProviderError:
    """Providers sometimes echo the key back; it must not reach a log, a reply or a table."""
    if len(key) < 8 or key not in err.provider_message:
        return err
    clean = ProviderError(
        err.provider,
        err.provider_message.replace(key, "[redacted]"),
        error_class=err.error_class,
        status=err.status,
        retryable=err.retryable,
        request_id=err.request_id,
        retry_after=err.retry_after,
        code=err.code,
        attempts=err.attempts,
        hint=err.hint,
    )
    return clean


def scrubbed_any(exc: Exception, key: str) -> Exception:
    if len(key) >= 8 and key in str(exc):
        return RuntimeError(f"{type(exc).__name__} in provider (message withheld: held the key)")
    return exc
