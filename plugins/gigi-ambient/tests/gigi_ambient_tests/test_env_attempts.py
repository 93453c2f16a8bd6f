"""ENV-12, ENV-15, ENV-18, ENV-24: failed attempts, their spacing, and the fallback model."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from gigi_ambient.attempts import AmbientError
from gigi_ambient.responder import Settings

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, PERSONA, envelope, open_world
from gigi_core.events import MessageCreated
from gigi_core.testing.fake_providers.server import Reply


def message(text: str = "hello") -> MessageCreated:
    return MessageCreated(
        guild_id=GUILD, message_id="9", channel_id=HERE, author_id="42",
        created_at=datetime.now(UTC), text=text,
    )  # fmt: skip


async def test_env_12_exhausted_retries_raise_and_attempts_are_spaced(world) -> None:
    world.fake.reply_server_error(400, times=3)  # not retried by the client: one call each
    with pytest.raises(AmbientError, match="no usable answer after 3 attempts"):
        await world.svc.answer(message(), PERSONA, Settings())
    assert len(world.fake.requests_to("chat")) == 3
    assert world.sleeps.waits == [1.0, 2.0]  # exponential, jittered (jitter fixed at 0.5 here)
    # through the event path the failure is counted, nothing is posted, and nothing crashes
    world.fake.reply_server_error(400, times=3)
    await world.say("hello again")
    assert world.poster.posts == [] and (await world.svc.today(GUILD))["failures"] == 1


def test_env_12_backoff_grows_and_jitters() -> None:
    from gigi_ambient.attempts import Backoff

    low, high = Backoff(jitter=lambda: 0.0), Backoff(jitter=lambda: 0.999)
    assert [low.delay(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert all(high.delay(n) > low.delay(n) > 0 for n in (1, 2, 3))


async def test_a_model_that_always_returns_invalid_json(world) -> None:
    world.fake.reply_text("{not json", times=3)
    await world.say("hello")
    assert world.poster.posts == [] and len(world.fake.requests_to("chat")) == 3
    assert world.sleeps.waits == [1.0, 2.0]
    today = await world.svc.today(GUILD)
    assert (today["calls"], today["failures"], today["answers"]) == (3, 1, 0)


async def test_env_18_malformed_or_refused_output_is_a_failed_attempt(world) -> None:
    world.fake.reply_text('{"answer": "hi"}')  # valid JSON, not the envelope
    world.fake.reply_refusal("I can't help with that.")
    world.fake.reply_text(envelope(answer="Third time lucky.", answer_needed=True))
    await world.say("hello")
    assert world.answers() == ["Third time lucky."]  # no repair: the bad ones are dropped
    assert world.sleeps.waits == [1.0, 2.0]


async def test_env_24_responses_refusals_are_failed_attempts(tmp_path) -> None:
    async with open_world(tmp_path, None) as w:
        await w.kernel.llm.set_profile(
            f"guild:{GUILD}",
            "chat",
            "main",
            "gpt-main",
            params={"provider_options": {"api": "responses"}},
        )
        w.fake.reply_response(refusal="No.")
        w.fake.reply_response(text=envelope(answer="Fine, hello.", answer_needed=True))
        await w.say("hello")
        assert w.answers() == ["Fine, hello."] and w.sleeps.waits == [1.0]
        assert len(w.fake.requests_to("responses")) == 2 and w.fake.requests_to("chat") == []


async def test_env_15_retry_model_is_used_after_a_rate_limit(tmp_path) -> None:
    async with open_world(tmp_path, None) as w:
        await w.kernel.llm.set_profile(
            f"guild:{GUILD}", "chat", "main", "gpt-main", fallback_model="gpt-retry"
        )
        limited = {"on": True}

        def answer(request):
            if limited["on"] and request.json["model"] == "gpt-main":
                body = w.fake.error_json(429, "Rate limit reached.")
                return Reply(429, body, headers={"retry-after": "0"})
            return None  # the queue answers

        w.fake.respond_with(answer)
        w.fake.reply_text(envelope(answer="from the retry model", answer_needed=True))
        await w.say("hello")
        models = [r.json["model"] for r in w.fake.requests_to("chat")]
        assert models[-1] == "gpt-retry" and set(models[:-1]) == {"gpt-main"}
        assert w.answers() == ["from the retry model"]
        limited["on"] = False  # a success switched back: the next message starts on the model
        w.fake.reply_text(envelope(answer="from the main model", answer_needed=True))
        await w.say("hello again")
        assert w.fake.requests_to("chat")[-1].json["model"] == "gpt-main"
