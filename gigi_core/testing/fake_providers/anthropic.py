"""Fake Anthropic Messages API server (``POST /v1/messages``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gigi_core.testing.fake_providers.common import FakeToolCall
from gigi_core.testing.fake_providers.models import ANTHROPIC_MODELS, anthropic_models
from gigi_core.testing.fake_providers.server import FakeProviderServer, RecordedRequest, Reply

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def message_body(
    *,
    text: str | None = None,
    tool_calls: Sequence[FakeToolCall] = (),
    stop_reason: str | None = "end_turn",
    thinking: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "claude-fake",
) -> dict[str, Any]:
    """A Messages API body; tool inputs are objects (raw strings pass through as given)."""
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig_fake"})
    if text is not None:
        content.append({"type": "text", "text": text})
    for i, call in enumerate(tool_calls):
        block: dict[str, Any] = {"type": "tool_use", "name": call.name}
        if call.arguments is not None:
            block["input"] = call.arguments_object()
        call_id = call.call_id(i, prefix="toolu_fake_")
        if call_id is not None:
            block["id"] = call_id
        content.append(block)
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage
        or {
            "input_tokens": 11,
            "output_tokens": 7,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


class FakeAnthropic(FakeProviderServer):
    """Speaks Anthropic's Messages format; the key travels in ``x-api-key``."""

    base_path = ""
    key_header = "x-api-key"

    #: What ``GET /v1/models`` lists (``models_page_size`` a page) when nothing is scripted.
    models: tuple[str, ...] | list[str] = ANTHROPIC_MODELS
    models_page_size = 2

    def route_of(self, method: str, path: str) -> str | None:
        if method == "GET":
            return "models" if path == "/v1/models" else None
        return "chat" if path == "/v1/messages" else None

    def default_reply(self, request: RecordedRequest) -> Reply:
        if request.route == "models":
            return Reply(200, anthropic_models(self.models, request, self.models_page_size))
        return super().default_reply(request)

    def image_parts(self, request: RecordedRequest) -> list[tuple[str, str]]:
        """``image`` blocks with a base64 source as (media_type, data)."""
        body = request.json if isinstance(request.json, dict) else {}
        pairs = []
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                source = block.get("source") if isinstance(block, dict) else None
                if block.get("type") == "image" and isinstance(source, dict):
                    if source.get("type") == "base64":
                        pairs.append((str(source.get("media_type")), str(source.get("data"))))
        return pairs

    def error_json(self, status: int, message: str, **extra: Any) -> Any:
        error: dict[str, Any] = {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}
        error.update(extra)
        return {"type": "error", "error": error, "request_id": "req_fake_anthropic"}

    def reply_message(self, body: Any, *, status: int = 200, delay: float = 0.0) -> Any:
        """Queue a raw Messages body."""
        return self.enqueue(Reply(status, body, delay=delay, route="chat"))

    def reply_text(self, text: str, *, stop_reason: str = "end_turn", **kwargs: Any) -> Any:
        """A text answer (``thinking=`` adds a signed thinking block before it)."""
        return self.reply_message(message_body(text=text, stop_reason=stop_reason, **kwargs))

    def reply_tool_calls(self, *calls: FakeToolCall, text: str | None = None) -> Any:
        """``tool_use`` blocks with ``stop_reason: tool_use``."""
        return self.reply_message(message_body(text=text, tool_calls=calls, stop_reason="tool_use"))

    def reply_refusal(self, text: str = "") -> Any:
        """``stop_reason: refusal`` (streaming classifiers stop the turn)."""
        return self.reply_message(message_body(text=text or None, stop_reason="refusal"))

    def reply_overloaded(self, *, times: int = 1) -> Any:
        """529 ``overloaded_error``."""
        return self.reply_error(529, "Overloaded", times=times)

    def reply_spend_limit(self) -> Any:
        """A 429 that must not be retried: the workspace's spend limit is reached."""
        return self.reply_error(
            429,
            "You have reached your specified workspace API usage limits.",
            details={"error_code": "enforced_spend_limit_reached"},
        )
