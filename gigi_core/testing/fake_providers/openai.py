"""Fake OpenAI (chat completions, Responses API, embeddings) and OpenRouter servers."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from gigi_core.testing.fake_providers.common import FakeToolCall, fake_vector
from gigi_core.testing.fake_providers.images import png_bytes
from gigi_core.testing.fake_providers.models import OPENAI_MODELS, openai_models
from gigi_core.testing.fake_providers.server import FakeProviderServer, RecordedRequest, Reply

DEFAULT_USAGE = {
    "prompt_tokens": 11,
    "completion_tokens": 7,
    "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}


def chat_completion(
    *,
    text: str | None = None,
    tool_calls: Sequence[FakeToolCall] = (),
    finish_reason: str | None = "stop",
    refusal: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "fake-model",
    message_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A chat-completions body as OpenAI returns it (non-streaming)."""
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": refusal}
    if tool_calls:
        message["tool_calls"] = [_wire_call(call, i) for i, call in enumerate(tool_calls)]
    message.update(message_extra or {})
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}],
        "usage": DEFAULT_USAGE if usage is None else usage,
    }


def _wire_call(call: FakeToolCall, index: int) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name}
    if call.arguments is not None:
        function["arguments"] = call.arguments_text()
    wire: dict[str, Any] = {"type": "function", "function": function}
    call_id = call.call_id(index)
    if call_id is not None:
        wire["id"] = call_id
    return wire


def responses_body(
    *,
    text: str | None = None,
    tool_calls: Sequence[FakeToolCall] = (),
    refusal: str | None = None,
    status: str = "completed",
    incomplete_reason: str | None = None,
    model: str = "fake-model",
    reasoning_summary: Sequence[str] = (),
    reasoning_text: Sequence[str] = (),
) -> dict[str, Any]:
    """A Responses API body (``POST /responses``); a ``reasoning`` item comes first when
    ``reasoning_summary`` (summary parts) or ``reasoning_text`` (raw reasoning, as
    open-weight models send it) is given."""
    output: list[dict[str, Any]] = []
    if reasoning_summary or reasoning_text:
        output.append(
            {
                "type": "reasoning",
                "id": "rs_fake",
                "summary": [{"type": "summary_text", "text": t} for t in reasoning_summary],
                "content": [{"type": "reasoning_text", "text": t} for t in reasoning_text],
                "encrypted_content": None,
            }
        )
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "output_text", "text": text, "annotations": []})
    if refusal is not None:
        content.append({"type": "refusal", "refusal": refusal})
    if content:
        output.append({"type": "message", "role": "assistant", "content": content})
    for i, call in enumerate(tool_calls):
        item: dict[str, Any] = {"type": "function_call", "name": call.name}
        if call.arguments is not None:
            item["arguments"] = call.arguments_text()
        call_id = call.call_id(i)
        if call_id is not None:
            item["call_id"] = call_id
        output.append(item)
    return {
        "id": "resp_fake",
        "object": "response",
        "model": model,
        "status": status,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "output": output,
        "usage": {
            "input_tokens": 11,
            "output_tokens": 7,
            "total_tokens": 18,
            "input_tokens_details": {"cached_tokens": 2},
            "output_tokens_details": {"reasoning_tokens": 3},
        },
        "error": None,
    }


def images_body(*pictures: bytes, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """An images API body (``POST /images/generations``) with ``b64_json`` pictures."""
    chosen = pictures or (png_bytes(),)
    return {
        "created": 1_700_000_000,
        "data": [{"b64_json": base64.b64encode(p).decode("ascii")} for p in chosen],
        "usage": usage or {"input_tokens": 9, "output_tokens": 272, "total_tokens": 281},
    }


def openai_image_parts(request: RecordedRequest) -> list[tuple[str, str]]:
    """Inline images of a chat-completions or Responses body as (media type, base64)."""
    body = request.json if isinstance(request.json, dict) else {}
    urls: list[str] = []
    for message in body.get("messages") or body.get("input") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "image_url":
                urls.append(str((part.get("image_url") or {}).get("url", "")))
            elif part.get("type") == "input_image":
                urls.append(str(part.get("image_url", "")))
    pairs = []
    for url in urls:
        if url.startswith("data:"):
            header, _, payload = url.partition(";base64,")
            pairs.append((header[len("data:") :], payload))
    return pairs


class FakeOpenAI(FakeProviderServer):
    """Speaks OpenAI's REST format under ``/v1``: chat completions, responses, embeddings.

    Embedding calls with nothing scripted get deterministic vectors of ``embedding_dimension``.
    """

    base_path = "/v1"

    def __init__(self, *, api_key: str | None = None, embedding_dimension: int = 8) -> None:
        super().__init__(api_key=api_key)
        self.embedding_dimension = embedding_dimension
        #: What ``GET {base}/models`` lists when no reply is scripted for it.
        self.models: list[str] = list(OPENAI_MODELS)

    def route_of(self, method: str, path: str) -> str | None:
        suffix = path[len(self.base_path) :] if path.startswith(self.base_path) else None
        if method == "GET":
            return "models" if suffix == "/models" else None
        return {
            "/chat/completions": "chat",
            "/embeddings": "embeddings",
            "/responses": "responses",
            "/images/generations": "images",
        }.get(suffix or "")

    def image_parts(self, request: RecordedRequest) -> list[tuple[str, str]]:
        """``image_url`` parts (chat) and ``input_image`` parts (Responses) with data URLs."""
        return openai_image_parts(request)

    def no_images_message(self, model: str) -> str:
        return "Invalid content type. image_url is only supported by certain models."

    def error_json(self, status: int, message: str, **extra: Any) -> Any:
        kinds = {400: "invalid_request_error", 401: "invalid_request_error", 429: "requests"}
        error = {"message": message, "type": kinds.get(status, "server_error"), "param": None}
        error["code"] = extra.pop("code", None)
        error.update(extra)
        return {"error": error}

    def default_reply(self, request: RecordedRequest) -> Reply:
        if request.route == "images":
            return Reply(200, images_body())
        if request.route == "models":
            return Reply(200, openai_models(self.models))
        if request.route == "embeddings" and isinstance(request.json, dict):
            inputs = request.json.get("input")
            texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
            return Reply(
                200, self.embeddings_body([fake_vector(t, self._dim(request)) for t in texts])
            )
        return super().default_reply(request)

    def _dim(self, request: RecordedRequest) -> int:
        wanted = request.json.get("dimensions") if isinstance(request.json, dict) else None
        return wanted if isinstance(wanted, int) and wanted > 0 else self.embedding_dimension

    # ------------------------------------------------------------ builders

    def reply_chat(
        self, body: Any, *, status: int = 200, delay: float = 0.0, times: int = 1
    ) -> Any:
        """Queue a raw chat-completions body (for shapes the helpers do not make)."""
        return self.enqueue(Reply(status, body, delay=delay, route="chat"), times=times)

    def reply_text(
        self,
        text: str,
        *,
        finish_reason: str | None = "stop",
        usage: dict[str, Any] | None = None,
        delay: float = 0.0,
        times: int = 1,
        **message_extra: Any,
    ) -> Any:
        """A plain text answer; ``message_extra`` adds fields (e.g. ``reasoning``)."""
        body = chat_completion(
            text=text, finish_reason=finish_reason, usage=usage, message_extra=message_extra
        )
        return self.reply_chat(body, delay=delay, times=times)

    def reply_tool_calls(
        self,
        *calls: FakeToolCall,
        text: str | None = None,
        finish_reason: str | None = "tool_calls",
    ) -> Any:
        """One assistant turn proposing ``calls`` (parallel when several)."""
        body = chat_completion(text=text, tool_calls=calls, finish_reason=finish_reason)
        return self.reply_chat(body)

    def reply_refusal(self, refusal: str) -> Any:
        """The model declines (``message.refusal`` set, no content)."""
        return self.reply_chat(chat_completion(refusal=refusal, finish_reason="stop"))

    def reply_no_choices(self, body_extra: dict[str, Any] | None = None) -> Any:
        """A 200 whose body lacks ``choices`` (seen from proxies)."""
        return self.reply_chat(
            {"id": "chatcmpl-empty", "object": "chat.completion", **(body_extra or {})}
        )

    def reply_embeddings(self, vectors: Sequence[Sequence[float]]) -> Any:
        """Exact vectors for the next embeddings call."""
        body = self.embeddings_body([list(v) for v in vectors])
        return self.enqueue(Reply(200, body, route="embeddings"))

    def reply_image(self, *pictures: bytes, usage: dict[str, Any] | None = None) -> Any:
        """An images API reply with each picture as ``b64_json`` (a tiny PNG by default)."""
        return self.enqueue(Reply(200, images_body(*pictures, usage=usage), route="images"))

    def reply_image_url(self, url: str = "https://oaidalle.example/img.png") -> Any:
        """An images API reply holding a link instead of bytes (DALL-E's default)."""
        return self.enqueue(Reply(200, {"created": 1, "data": [{"url": url}]}, route="images"))

    def reply_response(self, **kwargs: Any) -> Any:
        """A Responses API reply; keyword arguments as for ``responses_body``."""
        return self.enqueue(Reply(200, responses_body(**kwargs), route="responses"))

    @staticmethod
    def embeddings_body(vectors: list[list[float]]) -> dict[str, Any]:
        """An embeddings body with one ``data`` item per vector."""
        return {
            "object": "list",
            "model": "fake-embedding",
            "data": [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ],
            "usage": {"prompt_tokens": 3 * len(vectors), "total_tokens": 3 * len(vectors)},
        }


class FakeOpenRouter(FakeOpenAI):
    """OpenAI's format under ``/api/v1`` plus OpenRouter's error shapes (``metadata.raw``)."""

    base_path = "/api/v1"

    def error_json(self, status: int, message: str, **extra: Any) -> Any:
        error: dict[str, Any] = {"code": status, "message": message}
        error.update(extra)
        return {"error": error, "user_id": "user_fake"}

    def reply_upstream_error(
        self,
        status: int,
        raw: str,
        *,
        provider_name: str = "Google",
        message: str = "Provider returned error",
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> Any:
        """An upstream failure: the useful text is in ``error.metadata.raw``."""
        metadata = {"provider_name": provider_name, "raw": raw}
        return self.reply_error(status, message, headers=headers, times=times, metadata=metadata)

    def reply_error_in_body(
        self, code: int, message: str, *, raw: str | None = None, times: int = 1
    ) -> Any:
        """HTTP 200 whose body is an error and has no choices (failure after generation began)."""
        extra: dict[str, Any] = {}
        if raw is not None:
            extra["metadata"] = {"provider_name": "Fake", "raw": raw}
        body = self.error_json(code, message, **extra)
        return self.enqueue(Reply(200, body, route="chat"), times=times)
