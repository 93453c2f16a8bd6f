"""Wire-level fake LLM provider servers for tests: real HTTP on 127.0.0.1, scripted replies.

    async with FakeOpenAI() as fake:
        fake.reply_rate_limited(retry_after_ms=10)
        fake.reply_text("hello")
        ... call your provider with base_url=fake.base_url ...
        assert fake.last_request.json["model"] == "gpt-x"

See docs/llm-providers.md for the full API.
"""

from __future__ import annotations

from gigi_core.testing.fake_providers.anthropic import FakeAnthropic, message_body
from gigi_core.testing.fake_providers.common import AUTO, FakeToolCall, RecordingSleep, fake_vector
from gigi_core.testing.fake_providers.gemini import FakeGemini, generate_body
from gigi_core.testing.fake_providers.images import png_b64, png_bytes
from gigi_core.testing.fake_providers.openai import (
    FakeOpenAI,
    FakeOpenRouter,
    chat_completion,
    images_body,
    responses_body,
)
from gigi_core.testing.fake_providers.server import (
    DEFAULT_HTML,
    FakeProviderServer,
    RecordedRequest,
    Reply,
    http_date,
)

__all__ = [
    "AUTO",
    "DEFAULT_HTML",
    "FakeAnthropic",
    "FakeGemini",
    "FakeOpenAI",
    "FakeOpenRouter",
    "FakeProviderServer",
    "FakeToolCall",
    "RecordedRequest",
    "RecordingSleep",
    "Reply",
    "chat_completion",
    "fake_vector",
    "generate_body",
    "http_date",
    "images_body",
    "message_body",
    "png_b64",
    "png_bytes",
    "responses_body",
]
