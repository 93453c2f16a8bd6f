"""How a case's model turns reach the runtime: in process, over HTTP, or not at all.

``scripted`` hands turns to the runtime as a ScriptedModel; ``wire`` serves the same turns
from a FakeOpenAI server and lets the real gigi-openai provider, a sealed guild credential
and a chat profile carry them; ``none`` configures no provider (what a fresh install sees).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gigi_core.agent.contracts import Budgets
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.evalharness.canary import Canaries
from gigi_core.evalharness.models import Turn
from gigi_core.testing.scripted import ScriptedModel, call, fail, say

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.testing.fake_providers import FakeOpenAI

WIRE_PLUGIN = "openai"
WIRE_PROVIDER = "openai-compatible"


@dataclass
class Seen:
    """One model call as the model saw it: offered tool names, tool results fed back so far."""

    tools: list[str] = field(default_factory=list)
    tool_results: list[str] = field(default_factory=list)
    tool_choice: str | None = None


class Transport:
    """Base: no provider at all."""

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns

    async def start(self, kernel: Kernel, guild_id: str, canaries: Canaries) -> None:
        return None

    async def stop(self) -> None:
        return None

    def runtime(self, kernel: Kernel, budgets: Budgets) -> AgentRuntime:
        return AgentRuntime(kernel, budgets=budgets)

    def seen(self) -> list[Seen]:
        return []

    def remaining(self) -> int:
        return 0


class ScriptedTransport(Transport):
    def __init__(self, turns: list[Turn]) -> None:
        super().__init__(turns)
        self.model = ScriptedModel([_response(t) for t in turns])

    def runtime(self, kernel: Kernel, budgets: Budgets) -> AgentRuntime:
        return AgentRuntime(kernel, model=self.model, budgets=budgets)

    def seen(self) -> list[Seen]:
        return [
            Seen(
                tools=[t.name for t in r.tools],
                tool_results=[str(m.content) for m in r.messages if m.role == "tool"],
                tool_choice=getattr(r.tool_choice, "name", None),
            )
            for r in self.model.requests
        ]

    def remaining(self) -> int:
        return len(self.model.turns)


class WireTransport(Transport):
    """A FakeOpenAI server on 127.0.0.1; the API key is a canary that may live only sealed."""

    def __init__(self, turns: list[Turn]) -> None:
        super().__init__(turns)
        self.fake: FakeOpenAI | None = None

    async def start(self, kernel: Kernel, guild_id: str, canaries: Canaries) -> None:
        from gigi_core.llm import LlmHttpClient, RetryPolicy
        from gigi_core.llm.records import Owner
        from gigi_core.testing.fake_providers import FakeOpenAI

        key = "sk-" + canaries.new("the provider API key")
        self.fake = FakeOpenAI(api_key=key).start()  # type: ignore[assignment]
        for turn in self.turns:
            self._enqueue(turn)
        for provider in kernel.registry.all_providers():  # errors surface at once, no sleeps
            provider._http = LlmHttpClient(retry=RetryPolicy(max_attempts=1))
        owner = Owner.guild(guild_id)
        await kernel.llm.add_credential(
            owner, WIRE_PROVIDER, "eval", key, base_url=self.fake.base_url, by="eval-admin"
        )
        await kernel.llm.set_profile(owner, "chat", "eval", "fake-model", by="eval-admin")

    async def stop(self) -> None:
        if self.fake is not None:
            self.fake.stop()

    def _enqueue(self, turn: Turn) -> None:
        from gigi_core.testing.fake_providers import FakeToolCall, chat_completion

        assert self.fake is not None
        if turn.error is not None:
            self.fake.reply_error(turn.error.status, turn.error.message)
            return
        usage = {
            "prompt_tokens": turn.usage.input_tokens,
            "completion_tokens": turn.usage.output_tokens,
            "total_tokens": turn.usage.input_tokens + turn.usage.output_tokens,
        }
        calls = [FakeToolCall(c.name, c.arguments_text()) for c in turn.tool_calls or []]
        body = chat_completion(
            text=turn.text,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            usage=usage,
        )
        self.fake.reply_chat(body)

    def seen(self) -> list[Seen]:
        out = []
        for request in self.fake.requests_to("chat") if self.fake else []:
            body: dict[str, Any] = request.json if isinstance(request.json, dict) else {}
            choice = body.get("tool_choice")
            out.append(
                Seen(
                    tools=[t["function"]["name"] for t in body.get("tools") or []],
                    tool_results=[
                        m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                        for m in body.get("messages") or []
                        if m.get("role") == "tool"
                    ],
                    tool_choice=choice["function"]["name"] if isinstance(choice, dict) else None,
                )
            )
        return out

    def remaining(self) -> int:
        return self.fake.pending() if self.fake else 0


def _response(turn: Turn) -> Any:
    tokens = {"input_tokens": turn.usage.input_tokens, "output_tokens": turn.usage.output_tokens}
    if turn.error is not None:
        return fail(turn.error.message, turn.error.status)
    if turn.tool_calls:
        return call(
            *[(c.name, c.arguments_text()) for c in turn.tool_calls], text=turn.text, **tokens
        )
    return say(turn.text or "", **tokens)


def make_transport(kind: str, turns: list[Turn]) -> Transport:
    return {"scripted": ScriptedTransport, "wire": WireTransport, "none": Transport}[kind](turns)
