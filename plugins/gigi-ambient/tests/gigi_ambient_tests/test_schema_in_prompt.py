"""A provider without strict schema support gets the envelope's schema in the prompt, and its
output is validated exactly like a strict provider's."""

from __future__ import annotations

from typing import Any

from gigi_ambient_tests.ambient_helpers import GUILD, envelope, open_world
from gigi_core import hookimpl
from gigi_core.llm import ChatRequest, ChatResponse, Provider, Supports, Usage


class Plain(Provider):
    name = "plain"
    supports = Supports(tools=True, structured_output=False)

    def __init__(self, texts: list[str]) -> None:
        super().__init__()
        self.texts = texts
        self.requests: list[ChatRequest] = []

    async def chat(self, request: ChatRequest, *, api_key: str, base_url: str | None = None):
        self.requests.append(request)
        return ChatResponse(
            provider=self.name, text=self.texts.pop(0), usage=Usage(input_tokens=2, output_tokens=1)
        )


class PlainPlugin:
    def __init__(self, provider: Plain) -> None:
        self.provider = provider

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register(self.provider)


async def test_the_schema_goes_in_the_prompt_and_is_still_validated(tmp_path) -> None:
    provider = Plain(['{"answer": "unchecked"}', envelope(answer="Checked.", answer_needed=True)])
    async with open_world(tmp_path, None, extra=[("plain", PlainPlugin(provider))]) as w:
        await w.kernel.llm.add_credential(f"guild:{GUILD}", "plain", "p", "pk-test-123456")
        await w.kernel.llm.set_profile(f"guild:{GUILD}", "chat", "p", "plain-1")
        await w.say("hello")
        assert w.answers() == ["Checked."]  # the first, schema-less object was a failed attempt
        first = provider.requests[0]
        assert first.structured_output is None
        system = first.messages[0].content
        assert '"additionalProperties": false' in system and "JSON Schema" in system
        assert system.index("JSON Schema") < system.index("## Context")  # in the stable prefix
