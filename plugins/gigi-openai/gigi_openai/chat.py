"""Chat-completions request shaping and defensive response parsing (OpenAI and its clones).

``Flavor`` captures the few places OpenAI, OpenRouter and compatible servers disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gigi_core.llm import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    ContentPart,
    FinishReason,
    ImagePart,
    Message,
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
from gigi_openai.think import split_think

#: ``provider_data`` key: DeepSeek-style ``reasoning_content``, echoed on tool-call turns.
REASONING_CONTENT_KEY = "reasoning_content"

ReasoningStyle = Literal["reasoning_effort", "openrouter", "omit"]


@dataclass(frozen=True)
class Flavor:
    """Where dialects differ: system role name, reasoning field, max-tokens field."""

    system_role: Literal["system", "developer"] = "system"
    reasoning_style: ReasoningStyle = "reasoning_effort"
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_tokens"


_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",
}


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        image: dict[str, Any] = {"url": part.url}
        if part.detail:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    return {"type": "text", "text": part.text}


def wire_message(message: Message, flavor: Flavor) -> dict[str, Any]:
    """One message in chat-completions form."""
    if isinstance(message, SystemMessage):
        return {"role": flavor.system_role, "content": message.content}
    if isinstance(message, UserMessage):
        content = message.content
        if isinstance(content, str):
            return {"role": "user", "content": content}
        return {"role": "user", "content": [_part(p) for p in content]}
    if isinstance(message, AssistantMessage):
        wire: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            wire["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.raw_arguments or "{}"},
                }
                for call in message.tool_calls
            ]
        details = message.provider_data.get("reasoning_details")
        if details is not None and flavor.reasoning_style == "openrouter":
            wire["reasoning_details"] = details
        thought = message.provider_data.get(REASONING_CONTENT_KEY)
        if isinstance(thought, str) and message.tool_calls:
            # DeepSeek thinking mode answers 400 unless a tool-call turn sends it back.
            wire[REASONING_CONTENT_KEY] = thought
        return wire
    assert isinstance(message, ToolResultMessage)
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}


def build_chat_payload(request: ChatRequest, model: str, flavor: Flavor) -> dict[str, Any]:
    """The JSON body for ``POST {base}/chat/completions``."""
    payload: dict[str, Any] = {
        "model": model,
        "messages": [wire_message(m, flavor) for m in request.messages],
    }
    if request.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    **({"strict": True} if tool.strict else {}),
                },
            }
            for tool in request.tools
        ]
        parallel = request.parallel_tool_calls
        if parallel is None and any(tool.strict for tool in request.tools):
            parallel = False  # strict adherence is not guaranteed for parallel calls
        if parallel is not None:
            payload["parallel_tool_calls"] = parallel
    if request.tool_choice is not None:
        payload["tool_choice"] = wire_tool_choice(request.tool_choice)
    if request.structured_output is not None:
        out = request.structured_output
        schema: dict[str, Any] = {"name": out.name, "schema": out.schema_, "strict": out.strict}
        if out.description:
            schema["description"] = out.description
        payload["response_format"] = {"type": "json_schema", "json_schema": schema}
    if request.reasoning_effort is not None:
        if flavor.reasoning_style == "openrouter":
            payload["reasoning"] = {"effort": request.reasoning_effort}
        elif flavor.reasoning_style == "reasoning_effort":
            payload["reasoning_effort"] = request.reasoning_effort
    if request.max_output_tokens is not None:
        payload[flavor.max_tokens_field] = request.max_output_tokens
    if request.temperature is not None:
        payload["temperature"] = request.temperature
    extra = request.provider_options.get("extra_body")
    if isinstance(extra, dict):
        payload.update(extra)
    return payload


def wire_tool_choice(choice: Any) -> Any:
    """``auto``/``none``/``required`` pass through; a named tool becomes a function object."""
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):  # some compatible servers return parts
        return join_text(
            p.get("text") if isinstance(p, dict) and isinstance(p.get("text"), str) else None
            for p in content
        )
    return None


def parse_usage(raw: Any) -> Usage:
    """Usage as reported; totals are never derived (hidden reasoning tokens)."""
    if not isinstance(raw, dict):
        return Usage()
    prompt = raw.get("prompt_tokens_details") or {}
    completion = raw.get("completion_tokens_details") or {}
    cost = raw.get("cost")
    return Usage(
        input_tokens=as_int(raw.get("prompt_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")),
        total_tokens=as_int(raw.get("total_tokens")),
        cached_input_tokens=as_int(prompt.get("cached_tokens"))
        if isinstance(prompt, dict)
        else None,
        reasoning_tokens=(
            as_int(completion.get("reasoning_tokens")) if isinstance(completion, dict) else None
        ),
        cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
    )


def parse_chat_completion(
    body: Any, provider: str, request_id: str | None, tools: list[Tool] | None = None
) -> ChatResponse:
    """Normalise a chat-completions body; anything unusable raises ``ProviderError``.

    ``tools`` (the request's) lets a call with no ``arguments`` field mean ``{}`` for a
    tool that requires nothing. ``<think>`` blocks in the content move to ``reasoning``.
    """
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError(
            provider,
            "the reply has no choices",
            error_class="invalid_response",
            request_id=request_id,
        )
    choice = choices[0]
    if isinstance(choice.get("error"), dict):
        err = choice["error"]
        raise ProviderError(
            provider,
            str(err.get("message") or err),
            error_class="provider_error",
            request_id=request_id,
        )
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    seen: set[str] = set()
    calls = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, dict):
            continue
        function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
        calls.append(
            make_tool_call(
                raw.get("id"),
                function.get("name"),
                function.get("arguments"),
                seen_ids=seen,
                tools=tools,
            )
        )
    refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else None
    raw_finish = choice.get("finish_reason")
    finish = _FINISH.get(raw_finish, "other") if isinstance(raw_finish, str) else "stop"
    if calls and finish == "stop":
        finish = "tool_calls"  # some compatible servers say "stop" with calls
    if refusal and finish == "stop":
        finish = "refusal"
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    reasoning = reasoning if isinstance(reasoning, str) and reasoning else None
    text, thought = split_think(_content_text(message.get("content")))
    if thought:
        reasoning = join_text([reasoning, thought], "\n\n")
    provider_data: dict[str, Any] = {}
    if message.get("reasoning_details") is not None:
        provider_data["reasoning_details"] = message["reasoning_details"]
    if isinstance(message.get(REASONING_CONTENT_KEY), str):
        provider_data[REASONING_CONTENT_KEY] = message[REASONING_CONTENT_KEY]
    return ChatResponse(
        provider=provider,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        text=text,
        tool_calls=calls,
        finish_reason=finish,
        raw_finish_reason=raw_finish if isinstance(raw_finish, str) else None,
        refusal=refusal or None,
        reasoning=reasoning,
        usage=parse_usage(body.get("usage")),
        request_id=request_id,
        response_id=body.get("id") if isinstance(body.get("id"), str) else None,
        provider_data=provider_data,
    )
