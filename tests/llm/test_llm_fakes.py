"""The fake provider servers: recording, scripting, auth, routes and each format's builders."""

from __future__ import annotations

import httpx

from gigi_core.testing.fake_providers import (
    FakeAnthropic,
    FakeGemini,
    FakeOpenAI,
    FakeOpenRouter,
    FakeToolCall,
    RecordedRequest,
    Reply,
    fake_vector,
)


async def test_records_requests_and_serves_fifo() -> None:
    async with FakeOpenAI() as fake, httpx.AsyncClient() as client:
        fake.reply_text("one").reply_text("two")
        url = f"{fake.base_url}/chat/completions"
        first = await client.post(url, json={"model": "a"}, headers={"X-Custom": "1"})
        second = await client.post(url, json={"model": "b"})
        assert first.json()["choices"][0]["message"]["content"] == "one"
        assert second.json()["choices"][0]["message"]["content"] == "two"
        assert [r.json["model"] for r in fake.requests] == ["a", "b"]
        assert fake.requests[0].headers["x-custom"] == "1"
        assert fake.requests_to("chat") == fake.requests and fake.pending() == 0


async def test_unscripted_chat_is_a_clear_400_and_unknown_path_404() -> None:
    async with FakeOpenAI() as fake, httpx.AsyncClient() as client:
        missing = await client.post(f"{fake.base_url}/chat/completions", json={})
        assert missing.status_code == 400 and "no scripted reply" in missing.text
        unknown = await client.post(f"{fake.base_url}/nowhere", json={})
        assert unknown.status_code == 404


async def test_api_key_check_answers_401_in_format() -> None:
    async with FakeAnthropic(api_key="k1") as fake, httpx.AsyncClient() as client:
        fake.reply_text("hi")
        bad = await client.post(
            f"{fake.base_url}/v1/messages", json={}, headers={"x-api-key": "no"}
        )
        assert bad.status_code == 401 and bad.json()["error"]["type"] == "authentication_error"
        good = await client.post(
            f"{fake.base_url}/v1/messages", json={}, headers={"x-api-key": "k1"}
        )
        assert good.json()["content"][0] == {"type": "text", "text": "hi"}


async def test_route_filtered_queue_and_default_embeddings() -> None:
    async with FakeOpenAI(embedding_dimension=4) as fake, httpx.AsyncClient() as client:
        fake.reply_text("chat reply")
        emb = await client.post(f"{fake.base_url}/embeddings", json={"input": ["x", "y"]})
        assert [d["embedding"] for d in emb.json()["data"]] == [
            fake_vector("x", 4),
            fake_vector("y", 4),
        ]
        assert fake.pending() == 1  # the chat reply was not consumed by the embeddings call


async def test_respond_with_builds_replies_dynamically() -> None:
    def echo(request: RecordedRequest) -> Reply:
        return Reply(200, {"echo": request.json})

    async with FakeOpenAI() as fake, httpx.AsyncClient() as client:
        fake.respond_with(echo)
        reply = await client.post(f"{fake.base_url}/chat/completions", json={"n": 1})
        assert reply.json() == {"echo": {"n": 1}}


async def test_rate_limit_headers() -> None:
    async with FakeOpenRouter() as fake, httpx.AsyncClient() as client:
        fake.reply_rate_limited(retry_after=2, retry_after_ms=1500)
        fake.reply_rate_limited(retry_after_date=10)
        url = f"{fake.base_url}/chat/completions"
        first = await client.post(url, json={})
        second = await client.post(url, json={})
        assert first.status_code == 429 and first.headers["retry-after"] == "2"
        assert first.headers["retry-after-ms"] == "1500"
        assert second.headers["retry-after"].endswith("GMT")
        assert first.json()["error"]["code"] == 429


async def test_anthropic_builders() -> None:
    async with FakeAnthropic() as fake, httpx.AsyncClient() as client:
        fake.reply_tool_calls(FakeToolCall("lookup", {"order_id": "o-1"}), text="checking")
        fake.reply_text("ok", thinking="hmm")
        fake.reply_spend_limit()
        url = f"{fake.base_url}/v1/messages"
        calls = (await client.post(url, json={})).json()
        assert calls["stop_reason"] == "tool_use"
        assert calls["content"][1] == {
            "type": "tool_use",
            "name": "lookup",
            "input": {"order_id": "o-1"},
            "id": "toolu_fake_0",
        }
        thinking = (await client.post(url, json={})).json()
        assert thinking["content"][0]["signature"] == "sig_fake"
        spend = await client.post(url, json={})
        assert spend.json()["error"]["details"]["error_code"] == "enforced_spend_limit_reached"


async def test_gemini_builders_and_routes() -> None:
    async with FakeGemini(api_key="g") as fake, httpx.AsyncClient() as client:
        base = f"{fake.base_url}/v1beta/models/gemini-x"
        fake.reply_tool_calls(FakeToolCall("topic", {}), thought_signature="Es8F")
        fake.reply_blocked()
        fake.reply_malformed_function_call()
        fake.reply_rate_limited(retry_delay="46s")
        calls = (await client.post(f"{base}:generateContent?key=g", json={})).json()
        part = calls["candidates"][0]["content"]["parts"][0]
        assert part == {"functionCall": {"name": "topic", "args": {}}, "thoughtSignature": "Es8F"}
        headers = {"x-goog-api-key": "g"}
        blocked = (await client.post(f"{base}:generateContent", json={}, headers=headers)).json()
        assert blocked == {"promptFeedback": {"blockReason": "SAFETY"}}
        malformed = (await client.post(f"{base}:generateContent", json={}, headers=headers)).json()
        assert malformed["candidates"][0]["finishReason"] == "MALFORMED_FUNCTION_CALL"
        limited = await client.post(f"{base}:generateContent", json={}, headers=headers)
        assert limited.status_code == 429
        assert limited.json()["error"]["details"][1]["retryDelay"] == "46s"
        batch = {"requests": [{"content": {"parts": [{"text": "hi"}]}}]}
        emb = (await client.post(f"{base}:batchEmbedContents", json=batch, headers=headers)).json()
        assert emb["embeddings"][0]["values"] == fake_vector("hi", 8)
        assert fake.requests_to("embeddings")[0].path.endswith(":batchEmbedContents")


async def test_delay_and_stop_do_not_hang() -> None:
    fake = FakeOpenAI().start()
    try:
        fake.reply_timeout(delay=5.0)
        async with httpx.AsyncClient(timeout=0.1) as client:
            try:
                await client.post(f"{fake.base_url}/chat/completions", json={})
            except httpx.TimeoutException:
                pass
    finally:
        fake.stop()
