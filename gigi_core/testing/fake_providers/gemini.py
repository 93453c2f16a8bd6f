"""Fake Gemini API server: ``models/{model}:generateContent`` and embeddings."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

from gigi_core.testing.fake_providers.common import AUTO, FakeToolCall, fake_vector
from gigi_core.testing.fake_providers.images import png_bytes
from gigi_core.testing.fake_providers.models import GEMINI_MODELS, gemini_models
from gigi_core.testing.fake_providers.server import FakeProviderServer, RecordedRequest, Reply

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_PATH = re.compile(r"^/v1beta/models/(?P<model>[^:]+):(?P<method>[A-Za-z]+)$")


def generate_body(
    *,
    text: str | None = None,
    tool_calls: Sequence[FakeToolCall] = (),
    finish_reason: str | None = "STOP",
    thought_signature: str | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A GenerateContentResponse; calls carry no id unless the FakeToolCall sets one."""
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"text": text})
    for call in tool_calls:
        function_call: dict[str, Any] = {"name": call.name}
        if call.arguments is not None:
            function_call["args"] = call.arguments_object()
        if call.id not in (None, AUTO):
            function_call["id"] = call.id
        part: dict[str, Any] = {"functionCall": function_call}
        if thought_signature is not None:
            part["thoughtSignature"] = thought_signature
        parts.append(part)
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    return {
        "candidates": [candidate],
        "modelVersion": "gemini-fake",
        "responseId": "resp_fake",
        "usageMetadata": usage
        or {
            "promptTokenCount": 11,
            "candidatesTokenCount": 7,
            "thoughtsTokenCount": 3,
            "totalTokenCount": 21,
        },
    }


class FakeGemini(FakeProviderServer):
    """Speaks the Gemini REST format; the key travels in ``x-goog-api-key`` (or ``?key=``)."""

    base_path = ""
    key_header = "x-goog-api-key"

    def __init__(self, *, api_key: str | None = None, embedding_dimension: int = 8) -> None:
        super().__init__(api_key=api_key)
        self.embedding_dimension = embedding_dimension

    #: What ``GET /v1beta/models`` lists (``models_page_size`` a page) when nothing is scripted.
    models: tuple[str, ...] | list[str] = GEMINI_MODELS
    models_page_size = 2

    def route_of(self, method: str, path: str) -> str | None:
        if method == "GET":
            return "models" if path == "/v1beta/models" else None
        match = _PATH.match(path)
        if match is None:
            return None
        return {
            "generateContent": "chat",
            "embedContent": "embeddings",
            "batchEmbedContents": "embeddings",
        }.get(match.group("method"))

    def image_parts(self, request: RecordedRequest) -> list[tuple[str, str]]:
        """``inlineData`` parts of the contents as (mimeType, data)."""
        body = request.json if isinstance(request.json, dict) else {}
        pairs = []
        for content in body.get("contents") or []:
            for part in (content or {}).get("parts") or []:
                inline = part.get("inlineData") if isinstance(part, dict) else None
                if isinstance(inline, dict):
                    pairs.append((str(inline.get("mimeType", "")), str(inline.get("data", ""))))
        return pairs

    def no_images_message(self, model: str) -> str:
        return f"Image input modality is not enabled for models/{model}"

    def reply_image(self, *pictures: bytes, text: str | None = "Here you go.") -> Any:
        """An image model's answer: ``inlineData`` parts (a tiny PNG by default)."""
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        for picture in pictures or (png_bytes(),):
            encoded = base64.b64encode(picture).decode("ascii")
            parts.append({"inlineData": {"mimeType": "image/png", "data": encoded}})
        body = generate_body()
        body["candidates"][0]["content"]["parts"] = parts
        return self.reply_generate(body)

    def key_of(self, request: RecordedRequest) -> str | None:
        return request.headers.get(self.key_header) or (request.query.get("key") or [None])[0]

    def error_json(self, status: int, message: str, **extra: Any) -> Any:
        error: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": _STATUS_NAMES.get(status, "UNKNOWN"),
        }
        error.update(extra)
        return {"error": error}

    def default_reply(self, request: RecordedRequest) -> Reply:
        if request.route == "models":
            return Reply(200, gemini_models(self.models, request, self.models_page_size))
        if request.route == "embeddings" and isinstance(request.json, dict):
            items = request.json.get("requests") or [request.json]
            vectors = [
                {"values": fake_vector(_first_text(item), self.embedding_dimension)}
                for item in items
            ]
            if "requests" in request.json:
                return Reply(200, {"embeddings": vectors})
            return Reply(200, {"embedding": vectors[0]})
        return super().default_reply(request)

    # ------------------------------------------------------------ builders

    def reply_generate(self, body: Any, *, status: int = 200, delay: float = 0.0) -> Any:
        """Queue a raw GenerateContentResponse."""
        return self.enqueue(Reply(status, body, delay=delay, route="chat"))

    def reply_text(self, text: str, **kwargs: Any) -> Any:
        """A text answer."""
        return self.reply_generate(generate_body(text=text, **kwargs))

    def reply_tool_calls(self, *calls: FakeToolCall, thought_signature: str | None = None) -> Any:
        """``functionCall`` parts (finishReason STOP, as Gemini sends)."""
        return self.reply_generate(
            generate_body(tool_calls=calls, thought_signature=thought_signature)
        )

    def reply_malformed_function_call(self) -> Any:
        """finishReason MALFORMED_FUNCTION_CALL with no usable parts."""
        return self.reply_generate(generate_body(finish_reason="MALFORMED_FUNCTION_CALL"))

    def reply_blocked(self, reason: str = "SAFETY") -> Any:
        """No candidates; the prompt was blocked (``promptFeedback.blockReason``)."""
        return self.reply_generate({"promptFeedback": {"blockReason": reason}})

    def reply_rate_limited(
        self,
        *,
        retry_after: float | None = None,
        retry_after_date: float | None = None,
        retry_after_ms: float | None = None,
        retry_delay: str | None = None,
        message: str = "You exceeded your current quota. Please retry later.",
        times: int = 1,
    ) -> Any:
        """429 RESOURCE_EXHAUSTED; ``retry_delay`` (e.g. ``"46s"``) adds a RetryInfo detail."""
        if retry_delay is None:
            return super().reply_rate_limited(
                retry_after=retry_after,
                retry_after_date=retry_after_date,
                retry_after_ms=retry_after_ms,
                message=message,
                times=times,
            )
        details = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel"}],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
        ]
        return self.reply_error(429, message, times=times, details=details)


def _first_text(item: Any) -> str:
    try:
        return str(item["content"]["parts"][0]["text"])
    except (KeyError, IndexError, TypeError):
        return ""
