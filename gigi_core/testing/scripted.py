"""An in-process scripted model for agent tests: replies in order, records every request."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

from gigi_core.llm.errors import ProviderError
from gigi_core.llm.parsing import make_tool_call
from gigi_core.llm.types import ChatRequest, ChatResponse, Usage

Turn = ChatResponse | Exception | Callable[[ChatRequest], ChatResponse]
_ids = itertools.count(1)


def say(text: str, *, input_tokens: int = 10, output_tokens: int = 5) -> ChatResponse:
    """A final answer."""
    return ChatResponse(
        provider="scripted",
        model="scripted",
        text=text,
        finish_reason="stop",
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens),
    )


def call(
    *calls: tuple[str, Any], text: str | None = None, input_tokens: int = 10, output_tokens: int = 5
) -> ChatResponse:
    """Tool calls: ``(name, args)`` where args is a dict, or a raw string (malformed on purpose)."""
    seen: set[str] = set()
    made = []
    for name, args in calls:
        raw = args if isinstance(args, str) else json.dumps(args)
        made.append(make_tool_call(f"call_{next(_ids)}", name, raw, seen_ids=seen))
    return ChatResponse(
        provider="scripted",
        model="scripted",
        text=text,
        tool_calls=made,
        finish_reason="tool_calls",
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens),
    )


def fail(message: str = "upstream exploded", status: int = 500) -> ProviderError:
    return ProviderError("scripted", message, error_class="server", status=status, retryable=False)


class ScriptExhausted(BaseException):
    """The script ran out of turns: a bug in the test, so (like pytest's own failures) it is a
    BaseException that the runtime's error handling cannot turn into a polite reply."""


class ScriptedModel:
    """Use as ``AgentRuntime(kernel, model=ScriptedModel([...]))``; runs out -> ScriptExhausted."""

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = list(turns)
        self.requests: list[ChatRequest] = []

    async def __call__(
        self, request: ChatRequest, origin: Any = None, run_id: str | None = None
    ) -> ChatResponse:
        self.requests.append(request)
        if not self.turns:
            raise ScriptExhausted("the scripted model has no turns left")
        turn = self.turns.pop(0)
        if isinstance(turn, Exception):
            raise turn
        if callable(turn):
            return turn(request)
        return turn

    def offered(self, index: int = 0) -> list[str]:
        """Wire names of the tools offered in the given model call."""
        return [t.name for t in self.requests[index].tools]
