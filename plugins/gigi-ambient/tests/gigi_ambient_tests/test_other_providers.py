"""The envelope through the Anthropic and Gemini provider plugins, on their wire formats:
Anthropic answers through an output tool named ``envelope``, Gemini through its JSON schema."""

from __future__ import annotations

import json

from gigi_ambient.attempts import Backoff
from gigi_ambient.service import service_of

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, PERSONA, World, envelope
from gigi_core.testing import RecordingPoster, open_test_kernel
from gigi_core.testing.fake_providers import FakeAnthropic, FakeGemini, FakeToolCall, RecordingSleep


async def test_anthropic_answers_through_the_envelope_output_tool(tmp_path) -> None:
    async with (
        FakeAnthropic(api_key="ak-test") as fake,
        open_test_kernel(tmp_path, plugins=["ambient", "anthropic"]) as kernel,
    ):
        await kernel.enable_plugin(GUILD, "ambient")
        await kernel.llm.add_credential(
            f"guild:{GUILD}", "anthropic", "a", "ak-test", base_url=fake.base_url
        )
        await kernel.llm.set_profile(f"guild:{GUILD}", "chat", "a", "claude-test")
        poster = RecordingPoster()
        kernel.outbox.register("test", poster)
        svc = service_of(kernel)
        svc.backoff = Backoff(sleep=RecordingSleep())
        await svc.enable(GUILD, HERE, PERSONA, None)
        fake.reply_tool_calls(
            FakeToolCall(
                "envelope", json.loads(envelope(answer="Hi from Claude.", answer_needed=True))
            )
        )
        w = World(kernel, fake, poster, RecordingSleep(), svc)  # type: ignore[arg-type]
        await w.say("hello")
        assert [p.text for p in poster.posts] == ["Hi from Claude."]
        body = fake.requests[0].json
        [tool] = [t for t in body["tools"] if t["name"] == "envelope"]
        assert tool["input_schema"]["required"][0] == "answer"


async def test_gemini_answers_through_its_json_schema(tmp_path) -> None:
    async with (
        FakeGemini(api_key="gk-test") as fake,
        open_test_kernel(tmp_path, plugins=["ambient", "gemini"]) as kernel,
    ):
        await kernel.enable_plugin(GUILD, "ambient")
        await kernel.llm.add_credential(
            f"guild:{GUILD}", "gemini", "g", "gk-test", base_url=fake.base_url
        )
        await kernel.llm.set_profile(f"guild:{GUILD}", "chat", "g", "gemini-2.5-flash")
        poster = RecordingPoster()
        kernel.outbox.register("test", poster)
        svc = service_of(kernel)
        svc.backoff = Backoff(sleep=RecordingSleep())
        await svc.enable(GUILD, HERE, PERSONA, None)
        fake.reply_text(envelope(answer="Hi from Gemini.", answer_needed=True))
        w = World(kernel, fake, poster, RecordingSleep(), svc)  # type: ignore[arg-type]
        await w.say("hello")
        assert [p.text for p in poster.posts] == ["Hi from Gemini."]
        config = fake.requests[0].json["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        assert set(schema["properties"]) == {
            "answer", "answer_needed", "channel", "staff", "picture", "picture_count",
            "picture_edit", "hack",
        }  # fmt: skip
