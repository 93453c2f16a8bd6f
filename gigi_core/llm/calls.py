"""Helpers around one provider call: who/where metadata, params, fallback rule, key scrubbing.

Kept apart from ``service.py`` so the service reads as the list of what it offers.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gigi_core.llm.errors import ProviderError
from gigi_core.llm.scrub import MIN_FRAGMENT, holds_secret, scrub, scrub_value
from gigi_core.llm.types import ChatRequest, ChatResponse, ToolCall
from gigi_core.llm.usage import UsageRecord

if TYPE_CHECKING:
    from gigi_core.llm.channel_policy import Place
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
    request_id: str | None,
    actor: Actor | str | None,
    guild_id: str | None,
    channel_id: str | None,
    places: Sequence[Place] = (),
) -> dict[str, Any]:
    """Who and where a call is for; the roles and admin flag (as the surface reported them)
    and the place chain (thread, its channel or forum, ...) decide which budgets cover it
    and are never stored."""
    is_actor = not (isinstance(actor, str) or actor is None)
    return {
        "request_id": request_id or uuid.uuid4().hex,
        "actor_id": actor_id(actor),
        "guild_id": guild_id,
        "channel_id": channel_id,
        "places": tuple(places),
        "roles": actor.roles if is_actor else frozenset(),  # type: ignore[union-attr]
        "admin": actor.is_admin if is_actor else False,  # type: ignore[union-attr]
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
    """Providers sometimes echo the key back; it must not reach a log, a reply or a table.

    The key and its fragments of 8 characters or more are removed from the error's
    untrimmed text, which is trimmed only afterwards.
    """
    if len(key) < MIN_FRAGMENT:
        return err
    return err.rescrubbed((key,))


def scrubbed_any(exc: Exception, key: str) -> Exception:
    if len(key) >= MIN_FRAGMENT and holds_secret(str(exc), (key,)):
        return RuntimeError(f"{type(exc).__name__} in provider (message withheld: held the key)")
    return exc


def _clean_call(call: ToolCall, keys: tuple[str, ...]) -> ToolCall:
    return call.model_copy(
        update={
            "arguments": scrub_value(call.arguments, keys),
            "raw_arguments": scrub(call.raw_arguments, keys),
            "parse_error": scrub(call.parse_error, keys) if call.parse_error else None,
            "provider_data": scrub_value(call.provider_data, keys),
        }
    )


def scrubbed_response(response: Any, key: str) -> Any:
    """A chat reply with the key (and its long fragments) removed from everything readable.

    An endpoint can echo the ``Authorization`` header inside a 200 completion: text,
    reasoning, refusal, tool-call arguments and unsigned provider blocks are scrubbed.
    """
    if len(key) < MIN_FRAGMENT or not isinstance(response, ChatResponse):
        return response
    keys = (key,)
    if not holds_secret(response.model_dump_json(), keys):
        return response
    return response.model_copy(
        update={
            "text": scrub(response.text, keys) if response.text else response.text,
            "reasoning": scrub(response.reasoning, keys) if response.reasoning else None,
            "refusal": scrub(response.refusal, keys) if response.refusal else None,
            "tool_calls": [_clean_call(c, keys) for c in response.tool_calls],
            "provider_data": scrub_value(response.provider_data, keys),
        }
    )


#: Replies larger than this many characters are scrubbed off the event loop.
SCRUB_IN_THREAD_CHARS = 256_000


async def scrubbed_reply(response: Any, key: str) -> Any:
    """``scrubbed_response``, in a worker thread when the reply is large."""
    if not isinstance(response, ChatResponse):
        return response
    size = len(response.text or "") + len(response.reasoning or "")
    size += sum(len(c.raw_arguments) for c in response.tool_calls)
    if size > SCRUB_IN_THREAD_CHARS:
        return await asyncio.to_thread(scrubbed_response, response, key)
    return scrubbed_response(response, key)
