"""``ChatRequest`` to a Messages API body: max_tokens, thinking, tools, tool choice, output.

Anthropic has no ``response_format``: structured output is a forced tool whose
``input_schema`` is the schema, and the parser turns that tool's input into the reply
text. Forcing a tool is rejected with extended thinking, so then the choice falls back
to ``auto`` with the tool list narrowed to the forced tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gigi_anthropic.messages import wire_messages
from gigi_core.llm import ChatRequest, NamedToolChoice, ProviderError, Tool

#: ``max_tokens`` is required; used (plus the thinking budget) when the request sets none.
DEFAULT_MAX_TOKENS = 4096
#: The API's smallest accepted ``budget_tokens``.
MIN_THINKING_BUDGET = 1024
#: Reasoning effort to extended-thinking ``budget_tokens``; ``none`` means no thinking.
THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}
OUTPUT_TOOL_DESCRIPTION = "Give the final answer as this tool's input, matching its schema."


@dataclass(frozen=True)
class Plan:
    """A built body plus what the parser must know about how it was built."""

    payload: dict[str, Any]
    output_tool: str | None = None


def _config_error(provider: str, message: str, hint: str | None = None) -> ProviderError:
    return ProviderError(provider, message, error_class="config", hint=hint)


def thinking_budget(request: ChatRequest) -> int | None:
    """``provider_options["thinking_budget"]`` wins; else the effort's budget; else None."""
    override = request.provider_options.get("thinking_budget")
    if isinstance(override, int) and not isinstance(override, bool) and override > 0:
        return override
    if request.reasoning_effort in (None, "none"):
        return None
    return THINKING_BUDGETS[request.reasoning_effort]


def token_limits(request: ChatRequest, provider: str) -> tuple[int, int | None]:
    """``(max_tokens, budget_tokens)``: the budget must stay below ``max_tokens``.

    ``max_tokens`` counts thinking too, so an explicit ``max_output_tokens`` caps the
    budget; one too small to think at all is a config error rather than a silent drop.
    """
    budget = thinking_budget(request)
    if request.max_output_tokens is None:
        return DEFAULT_MAX_TOKENS + (budget or 0), budget
    max_tokens = request.max_output_tokens
    if budget is None:
        return max_tokens, None
    budget = min(budget, max_tokens - 1)
    if budget < MIN_THINKING_BUDGET:
        raise _config_error(
            provider,
            f"max_output_tokens={max_tokens} leaves no room for extended thinking "
            f"(budget_tokens must be at least {MIN_THINKING_BUDGET} and below max_tokens)",
            hint=f"raise max_output_tokens above {MIN_THINKING_BUDGET} or drop reasoning_effort",
        )
    return max_tokens, budget


def wire_tool(tool: Tool) -> dict[str, Any]:
    """``{name, description, input_schema}``; ``strict`` has no equivalent here and is dropped."""
    wire: dict[str, Any] = {"name": tool.name}
    if tool.description:
        wire["description"] = tool.description
    wire["input_schema"] = tool.parameters
    return wire


def plan_tools(
    request: ChatRequest, *, thinking: bool, provider: str
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str | None]:
    """``(tools, tool_choice, output_tool_name)`` for the request.

    Modes: ``auto`` / ``any`` (Gigi's ``required``) / ``tool`` / ``none``. Structured
    output adds its tool and forces it (alone) or, next to user tools, forces *some*
    tool call (``any``) so the model either acts or answers in the schema.
    """
    tools = [wire_tool(tool) for tool in request.tools]
    choice = request.tool_choice
    forced_name: str | None = None
    mode: str | None
    if isinstance(choice, NamedToolChoice):
        mode, forced_name = "tool", choice.name
    elif choice == "required":
        mode = "any"
    else:
        mode = choice
    output_tool: str | None = None
    out = request.structured_output
    if out is not None:
        if any(tool.name == out.name for tool in request.tools):
            raise _config_error(
                provider,
                f"structured output name {out.name!r} collides with a tool of the same name",
                hint="give StructuredOutput another name",
            )
        output_tool = out.name
        tools.append(
            {
                "name": out.name,
                "description": out.description or OUTPUT_TOOL_DESCRIPTION,
                "input_schema": out.schema_,
            }
        )
        if not request.tools or mode == "none":
            mode, forced_name = "tool", out.name
        elif mode != "tool":
            mode = "any"
    if thinking and mode in ("any", "tool"):
        # forcing is rejected with extended thinking: let the model choose among fewer tools
        if mode == "tool":
            tools = [t for t in tools if t["name"] == forced_name] or tools
        mode, forced_name = "auto", None
    if not tools:
        return [], None, output_tool
    wire_choice: dict[str, Any] | None = None
    if mode is not None:
        wire_choice = {"type": mode}
        if mode == "tool":
            wire_choice["name"] = forced_name
    if request.parallel_tool_calls is False and mode != "none":
        wire_choice = wire_choice or {"type": "auto"}
        wire_choice["disable_parallel_tool_use"] = True
    return tools, wire_choice, output_tool


def build_payload(request: ChatRequest, provider: str = "anthropic") -> Plan:
    """The JSON body for ``POST {base}/v1/messages`` and how to read its reply."""
    max_tokens, budget = token_limits(request, provider)
    payload: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens}
    system = request.system_text()
    if system:
        payload["system"] = system
    payload["messages"] = wire_messages(request.conversation())
    tools, tool_choice, output_tool = plan_tools(
        request, thinking=budget is not None, provider=provider
    )
    if tools:
        payload["tools"] = tools
    if tool_choice is not None:
        payload["tool_choice"] = tool_choice
    if budget is not None:
        payload["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if request.temperature is not None:
        payload["temperature"] = request.temperature
    extra = request.provider_options.get("extra_body")
    if isinstance(extra, dict):
        payload.update(extra)
    return Plan(payload, output_tool)
