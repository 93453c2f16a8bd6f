"""OpenAI Responses API (``POST /responses``) shaping and parsing, used behind a setting.

Stateless use only (no ``previous_response_id``): the full conversation is sent each turn.
"""

from __future__ import annotations

from typing import Any

from gigi_core.llm import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    FinishReason,
    ImagePart,
    NamedToolChoice,
    ProviderError,
    SystemMessage,
    Tool,
    ToolResultMessage,
    Usage,
    UserMessage,
    as_int,
    join_text,
    make_tool_call,
)

#: ``provider_data`` key: the reply's reasoning items, reduced to their input shape.
REASONING_ITEMS_KEY = "responses_reasoning"
REASONING_INPUT_FIELDS = ("type", "id", "summary", "encrypted_content")


def _input_items(request: ChatRequest) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in request.conversation():
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                items.append({"role": "user", "content": message.content})
                continue
            parts = [
                {"type": "input_image", "image_url": p.url}
                if isinstance(p, ImagePart)
                else {"type": "input_text", "text": p.text}
                for p in message.content
            ]
            items.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            # Reasoning first, as the model produced it: one chain of thought across rounds.
            items.extend(message.provider_data.get(REASONING_ITEMS_KEY) or [])
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            for call in message.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.raw_arguments or "{}",
                    }
                )
        elif isinstance(message, ToolResultMessage):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content,
                }
            )
        else:
            assert isinstance(message, SystemMessage)
    return items


def build_responses_payload(request: ChatRequest, model: str) -> dict[str, Any]:
    """The JSON body for ``POST {base}/responses``; system text goes to ``instructions``."""
    # Stateless: nothing is kept server-side, so reasoning comes back encrypted to pass on.
    payload: dict[str, Any] = {
        "model": model,
        "input": _input_items(request),
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    system = request.system_text()
    if system:
        payload["instructions"] = system
    if request.tools:
        payload["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": tool.strict,
            }
            for tool in request.tools
        ]
    if request.parallel_tool_calls is not None:
        payload["parallel_tool_calls"] = request.parallel_tool_calls
    choice = request.tool_choice
    if isinstance(choice, NamedToolChoice):
        payload["tool_choice"] = {"type": "function", "name": choice.name}
    elif choice is not None:
        payload["tool_choice"] = choice
    if request.structured_output is not None:
        out = request.structured_output
        payload["text"] = {
            "format": {
                "type": "json_schema",
                "name": out.name,
                "schema": out.schema_,
                "strict": out.strict,
            }
        }
    if request.reasoning_effort is not None:
        payload["reasoning"] = {"effort": request.reasoning_effort}
    if request.max_output_tokens is not None:
        payload["max_output_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        payload["temperature"] = request.temperature
    extra = request.provider_options.get("extra_body")
    if isinstance(extra, dict):
        payload.update(extra)
    return payload


def _reasoning_texts(item: dict[str, Any]) -> list[str | None]:
    """Summary parts (OpenAI) and raw ``reasoning_text`` parts (open-weight models)."""
    texts: list[str | None] = []
    for key, kind in (("summary", "summary_text"), ("content", "reasoning_text")):
        for part in item.get(key) or []:
            if isinstance(part, dict) and part.get("type") == kind:
                text = part.get("text")
                texts.append(text if isinstance(text, str) else None)
    return texts


def parse_responses(
    body: Any, provider: str, request_id: str | None, tools: list[Tool] | None = None
) -> ChatResponse:
    """Normalise a Responses API body; ``reasoning`` items become the reply's reasoning."""
    if not isinstance(body, dict) or not isinstance(body.get("output"), list):
        raise ProviderError(
            provider,
            "the reply has no output",
            error_class="invalid_response",
            request_id=request_id,
        )
    texts: list[str | None] = []
    thoughts: list[str | None] = []
    refusals: list[str | None] = []
    calls = []
    reasoning_items: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in body["output"]:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "output_text":
                    texts.append(part.get("text"))
                elif part.get("type") == "refusal":
                    refusals.append(part.get("refusal"))
        elif item.get("type") == "reasoning":
            thoughts.extend(_reasoning_texts(item))
            reasoning_items.append(_input_shape(item))
        elif item.get("type") == "function_call":
            calls.append(
                make_tool_call(
                    item.get("call_id"),
                    item.get("name"),
                    item.get("arguments"),
                    seen_ids=seen,
                    tools=tools,
                )
            )
    refusal = join_text(refusals)
    finish: FinishReason = "tool_calls" if calls else "stop"
    status = body.get("status")
    reason = (body.get("incomplete_details") or {}).get("reason")
    if status == "incomplete":
        finish = "content_filter" if reason == "content_filter" else "length"
    elif status == "failed":
        finish = "error"
    elif refusal and not calls:
        finish = "refusal"
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return ChatResponse(
        provider=provider,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        text=join_text(texts),
        tool_calls=calls,
        finish_reason=finish,
        raw_finish_reason=status if isinstance(status, str) else None,
        refusal=refusal,
        reasoning=join_text(thoughts, "\n\n"),
        usage=Usage(
            input_tokens=as_int(usage.get("input_tokens")),
            output_tokens=as_int(usage.get("output_tokens")),
            total_tokens=as_int(usage.get("total_tokens")),
            cached_input_tokens=as_int(
                (usage.get("input_tokens_details") or {}).get("cached_tokens")
            ),
            reasoning_tokens=as_int(
                (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
            ),
        ),
        request_id=request_id,
        response_id=body.get("id") if isinstance(body.get("id"), str) else None,
        provider_data={REASONING_ITEMS_KEY: reasoning_items} if reasoning_items else {},
    )


def _input_shape(item: dict[str, Any]) -> dict[str, Any]:
    """A reasoning output item as an input item: response-only fields such as ``status``
    are rejected as unknown parameters when sent back."""
    shaped = {k: item[k] for k in REASONING_INPUT_FIELDS if item.get(k) is not None}
    shaped.setdefault("summary", [])  # required on input, even when empty
    return shaped
