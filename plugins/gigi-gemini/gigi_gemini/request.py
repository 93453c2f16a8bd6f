"""ChatRequest to a Gemini ``GenerateContentRequest``.

Gemini differs from the OpenAI shape in ways that lose data if done naively: the
system prompt is top level, the assistant role is ``model``, calls carry no ids (a
``functionResponse`` is matched by name and order) and ``thoughtSignature``s must be
echoed on the very part they came on, or Gemini 3 rejects the continuation.
"""

from __future__ import annotations

import mimetypes
from typing import Any, Literal

from gigi_core.llm import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    ImagePart,
    Message,
    NamedToolChoice,
    ProviderError,
    ReasoningEffort,
    ToolResultMessage,
    UserMessage,
)
from gigi_gemini.schema import to_openapi_schema

PROVIDER = "gemini"
SchemaStyle = Literal["json_schema", "openapi"]
ThinkingStyle = Literal["budget", "level"]

#: provider_data keys shared with ``response.py``
PARTS_KEY = "gemini_parts"
SIGNATURE_KEY = "thought_signature"
NATIVE_ID_KEY = "gemini_id"
#: on a ToolCall made from a MALFORMED_FUNCTION_CALL (no real call): the finish reason
MALFORMED_KEY = "gemini_malformed"

# Gemini 2.x takes a token budget (0 disables thinking on Flash); Gemini 3 a level.
_BUDGETS: dict[ReasoningEffort, int] = {
    "none": 0,
    "minimal": 512,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
}
_LEVELS: dict[ReasoningEffort, str] = {
    "none": "minimal",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
}
_TOOL_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


def build_generate_payload(request: ChatRequest) -> dict[str, Any]:
    """The JSON body for ``POST models/{model}:generateContent``.

    ``provider_options``: ``schema_style`` (``"json_schema"`` default, ``"openapi"``
    for the legacy subset), ``thinking`` (``"budget"``/``"level"``, else guessed from
    the model id), ``generation_config`` and ``extra_body`` (merged verbatim).
    """
    options = request.provider_options
    style: SchemaStyle = "openapi" if options.get("schema_style") == "openapi" else "json_schema"
    payload: dict[str, Any] = {"contents": build_contents(request.conversation())}
    system = request.system_text()
    if system:
        payload["systemInstruction"] = {"parts": [{"text": system}]}
    if request.tools:
        payload["tools"] = [
            {"functionDeclarations": [_declaration(tool, style) for tool in request.tools]}
        ]
        if request.tool_choice is not None:
            payload["toolConfig"] = {"functionCallingConfig": tool_config(request.tool_choice)}
    generation = _generation_config(request, style)
    if generation:
        payload["generationConfig"] = generation
    extra = options.get("extra_body")
    if isinstance(extra, dict):
        payload.update(extra)
    return payload


def tool_config(choice: Any) -> dict[str, Any]:
    """auto/none/required to AUTO/NONE/ANY; a named tool is ANY limited to that name."""
    if isinstance(choice, NamedToolChoice):
        return {"mode": "ANY", "allowedFunctionNames": [choice.name]}
    return {"mode": _TOOL_MODES[choice]}


def thinking_style(model: str, override: Any = None) -> ThinkingStyle:
    """Gemini 2.x models take ``thinkingBudget``; newer ones take ``thinkingLevel``."""
    if override in ("budget", "level"):
        return override
    name = model.rsplit("/", 1)[-1].lower()
    return "budget" if name.startswith(("gemini-2", "gemini-1")) else "level"


def thinking_config(model: str, effort: ReasoningEffort, override: Any = None) -> dict[str, Any]:
    """Reasoning effort as a ``thinkingConfig``; thought summaries requested unless off."""
    if thinking_style(model, override) == "budget":
        config: dict[str, Any] = {"thinkingBudget": _BUDGETS[effort]}
    else:
        config = {"thinkingLevel": _LEVELS[effort]}
    if effort != "none":
        config["includeThoughts"] = True
    return config


def _generation_config(request: ChatRequest, style: SchemaStyle) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if request.max_output_tokens is not None:
        config["maxOutputTokens"] = request.max_output_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    out = request.structured_output
    if out is not None:
        config["responseMimeType"] = "application/json"
        if style == "openapi":
            config["responseSchema"] = _openapi(out.schema_)
        else:
            config["responseJsonSchema"] = out.schema_
    if request.reasoning_effort is not None:
        config["thinkingConfig"] = thinking_config(
            request.model, request.reasoning_effort, request.provider_options.get("thinking")
        )
    extra = request.provider_options.get("generation_config")
    if isinstance(extra, dict):
        config.update(extra)
    return config


def _openapi(schema: dict[str, Any]) -> dict[str, Any]:
    try:
        return to_openapi_schema(schema)
    except ValueError as exc:
        raise ProviderError(PROVIDER, str(exc), error_class="bad_request") from exc


def _declaration(tool: Any, style: SchemaStyle) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if style == "openapi":
        declaration["parameters"] = _openapi(tool.parameters)
    else:
        declaration["parametersJsonSchema"] = tool.parameters
    return declaration


# ---------------------------------------------------------------- contents


def build_contents(messages: list[Message]) -> list[dict[str, Any]]:
    """Turns with roles ``user``/``model``; adjacent turns of one role are merged.

    Merging puts every ``functionResponse`` of a round into one user turn, in call
    order, which is what Gemini expects after parallel calls.
    """
    names = _call_names(messages)
    contents: list[dict[str, Any]] = []
    for message in messages:
        role, parts = _turn(message, names)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return contents


def _call_names(messages: list[Message]) -> dict[str, tuple[str, str | None]]:
    """Our call id -> (function name, Gemini's own id when it sent one).

    A call made from a MALFORMED_FUNCTION_CALL maps to ``("", None)``: Gemini never
    produced it, so its answer goes back as text, not as a ``functionResponse``.
    """
    names: dict[str, tuple[str, str | None]] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if _made_up(call):
                    names[call.id] = ("", None)
                    continue
                native = call.provider_data.get(NATIVE_ID_KEY)
                names[call.id] = (call.name, native if isinstance(native, str) else None)
    return names


def _made_up(call: Any) -> bool:
    return bool(call.provider_data.get(MALFORMED_KEY))


def _turn(
    message: Message, names: dict[str, tuple[str, str | None]]
) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return "user", [{"text": message.content}]
        return "user", [_content_part(p) for p in message.content]
    if isinstance(message, AssistantMessage):
        return "model", model_parts(message)
    if isinstance(message, ToolResultMessage):
        if names.get(message.tool_call_id) == ("", None):
            return "user", [{"text": f"Your last function call failed: {message.content}"}]
        return "user", [_function_response(message, names)]
    raise ProviderError(  # system messages were hoisted by the caller
        PROVIDER, f"unexpected message role {message.role!r}", error_class="bad_request"
    )


def _content_part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        inline = part.inline_data()
        if inline is not None:
            return {"inlineData": {"mimeType": inline[0], "data": inline[1]}}
        file_data: dict[str, Any] = {"fileUri": part.url}
        guessed = mimetypes.guess_type(part.url.split("?", 1)[0])[0]
        if guessed:
            file_data["mimeType"] = guessed
        return {"fileData": file_data}
    return {"text": part.text}


def model_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    """A previous model turn: Gemini's own parts verbatim when we kept them, else rebuilt.

    The verbatim parts carry every ``thoughtSignature`` exactly where Gemini put it
    (text parts too). They are used only while the calls still match them, so an
    edited turn is rebuilt from ``content`` and ``tool_calls`` instead.
    """
    kept = message.provider_data.get(PARTS_KEY)
    if isinstance(kept, list) and _parts_match(kept, message):
        return [dict(p) for p in kept if isinstance(p, dict)]
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"text": message.content})
    for call in message.tool_calls:
        if _made_up(call):
            continue  # Gemini produced no call: sending one would be a call it never made
        function_call: dict[str, Any] = {"name": call.name, "args": call.arguments or {}}
        native = call.provider_data.get(NATIVE_ID_KEY)
        if isinstance(native, str):
            function_call["id"] = native
        part: dict[str, Any] = {"functionCall": function_call}
        signature = call.provider_data.get(SIGNATURE_KEY)
        if isinstance(signature, str):
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _parts_match(parts: list[Any], message: AssistantMessage) -> bool:
    kept = [
        p["functionCall"].get("name")
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)
    ]
    return kept == [call.name for call in message.tool_calls if not _made_up(call)]


def _function_response(
    message: ToolResultMessage, names: dict[str, tuple[str, str | None]]
) -> dict[str, Any]:
    """``functionResponse`` named after the call it answers; ``response`` is always an object."""
    name, native = names.get(message.tool_call_id, (message.name, None))
    if not name:
        raise ProviderError(
            PROVIDER,
            f"tool result {message.tool_call_id!r} answers no call in the conversation "
            "and has no name; Gemini matches results by function name",
            error_class="bad_request",
        )
    key = "error" if message.is_error else "output"
    response: dict[str, Any] = {"name": name, "response": {key: message.content}}
    if native:
        response["id"] = native
    return {"functionResponse": response}
