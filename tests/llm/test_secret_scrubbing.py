"""Keys never leak in fragments: scrub before trimming, in errors, model output and logs.

An endpoint that echoes the ``Authorization`` header is played by the fake servers'
``respond_with``: it reads the key the request carried and puts it where it should not be.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from gigi_core.llm import ChatRequest, LlmHttpClient, ProviderError, RetryPolicy, UserMessage
from gigi_core.llm.errors import MAX_MESSAGE_CHARS
from gigi_core.llm.logfilter import SecretFilter, redact
from gigi_core.llm.scrub import MIN_FRAGMENT, scrub
from gigi_core.testing.fake_providers import FakeOpenAI, FakeToolCall, RecordedRequest, Reply
from gigi_core.testing.fake_providers.openai import chat_completion
from tests.llm.service_helpers import llm_kernel

KEY = "sk-proj-ECHO4f2a9c1e7b3d5a8c0e2f4b6d8a1c3e5f7"
REQUEST = ChatRequest(model="m", messages=[UserMessage(content="hi")])


def fragments(text: str, key: str = KEY) -> list[str]:
    """Every piece of ``key`` of MIN_FRAGMENT characters that ``text`` still holds."""
    return [key[i : i + MIN_FRAGMENT] for i in range(len(key) - 7) if key[i : i + 8] in text]


def _bearer(request: RecordedRequest) -> str:
    return request.headers.get("authorization", "")


def echo_near_the_cut(request: RecordedRequest) -> Reply:
    """An error whose text puts the echoed header so the 2,000-character trim cuts the key's
    last character off: trimming first would show all of the key but one character."""
    header = f"Authorization: {_bearer(request)}"
    padding = "x" * (MAX_MESSAGE_CHARS - len(header) + 1)
    return Reply(400, {"error": {"message": padding + header + " was rejected", "type": "bad"}})


# ---------------------------------------------------------------- the scrubber itself


def test_scrub_removes_the_key_and_every_long_fragment() -> None:
    text = f"a {KEY} b {KEY[:20]} c {KEY[-9:]} d {KEY[5:12]} e"
    clean = scrub(text, [KEY])
    assert fragments(clean) == []
    assert KEY[5:12] in clean  # seven characters: too short to be a fragment
    assert clean.startswith("a [redacted] b [redacted] c [redacted] d ")


def test_scrub_leaves_text_without_a_key_alone() -> None:
    assert scrub("nothing to see", [KEY]) == "nothing to see"
    assert scrub("short keys are not scrubbed: abc", ["abc"]) == "short keys are not scrubbed: abc"


# ---------------------------------------------------------------- errors


async def test_provider_errors_are_scrubbed_before_they_are_trimmed() -> None:
    from gigi_openai import OpenAICompatibleProvider

    provider = OpenAICompatibleProvider(http=LlmHttpClient(retry=RetryPolicy(max_attempts=1)))
    async with FakeOpenAI(api_key=KEY) as fake:
        fake.respond_with(echo_near_the_cut)
        with pytest.raises(ProviderError) as caught:
            await provider.chat(REQUEST, api_key=KEY, base_url=fake.base_url)
    err = caught.value
    assert err.status == 400 and "[redacted]" in err.provider_message
    assert fragments(err.provider_message) == [] and fragments(str(err)) == []


async def test_service_errors_hold_no_fragment_of_the_key(tmp_path) -> None:
    async with llm_kernel(tmp_path, None) as kernel, FakeOpenAI(api_key=KEY) as fake:
        await kernel.llm.add_credential(
            "guild:g1", "openai-compatible", "main", KEY, base_url=fake.base_url
        )
        await kernel.llm.set_profile("guild:g1", "chat", "main", "m-1")
        fake.respond_with(echo_near_the_cut)
        with pytest.raises(ProviderError) as caught:
            await kernel.llm.chat(REQUEST, guild_id="g1", actor="u1")
        assert fragments(str(caught.value)) == []
        result = await kernel.llm.test_credential("guild:g1", "main")
        assert not result.ok and fragments(result.message or "") == []


# ---------------------------------------------------------------- model output


def echo_in_a_completion(request: RecordedRequest) -> Reply:
    key = _bearer(request).removeprefix("Bearer ")
    call = FakeToolCall("post", {"text": f"my key is {key}", "n": 1, "tags": [key[:12]]})
    body = chat_completion(
        text=f"Debug: your header was Authorization: Bearer {key}. Also {key[3:30]}!",
        tool_calls=[call],
        message_extra={"reasoning_content": f"the key {key[:-1]} looks valid"},
    )
    return Reply(200, body)


async def test_model_output_holds_no_fragment_of_the_key(tmp_path) -> None:
    async with llm_kernel(tmp_path, None) as kernel, FakeOpenAI(api_key=KEY) as fake:
        await kernel.llm.add_credential(
            "guild:g1", "openai-compatible", "main", KEY, base_url=fake.base_url
        )
        await kernel.llm.set_profile("guild:g1", "chat", "main", "m-1")
        fake.respond_with(echo_in_a_completion)
        response = await kernel.llm.chat(REQUEST, guild_id="g1", actor="u1")
    assert response.text is not None and "[redacted]" in response.text
    assert response.text.startswith("Debug: your header was Authorization: Bearer [redacted].")
    [call] = response.tool_calls
    assert call.arguments is not None and call.arguments["n"] == 1
    everything = response.model_dump_json()
    assert fragments(everything) == [], fragments(everything)


# ---------------------------------------------------------------- logs


def echo_in_headers(request: RecordedRequest) -> Reply:
    body = chat_completion(text="fine")
    headers = {
        "x-debug-authorization": _bearer(request),
        "x-echo": f"you sent {_bearer(request)}",
        "set-cookie": "session=abcdefghijklmnop1234",
    }
    return Reply(200, body, headers=headers)


@pytest.fixture
def debug_log() -> Iterator[io.StringIO]:
    """DEBUG on the root logger into a buffer, the way ``gigi --debug`` configures it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(SecretFilter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


async def test_transport_debug_logs_hold_no_key(debug_log: io.StringIO) -> None:
    client = LlmHttpClient(http=None)
    async with FakeOpenAI(api_key=KEY) as fake:
        fake.respond_with(echo_in_headers)
        await client.post_json(
            f"{fake.base_url}/chat/completions",
            {"model": "m"},
            provider="fake",
            headers={"authorization": f"Bearer {KEY}"},
        )
    text = debug_log.getvalue()
    assert "httpcore.http11" in text and "receive_response_headers" in text  # really logged
    assert "x-debug-authorization" in text
    assert fragments(text) == [], text
    assert "abcdefghijklmnop1234" not in text


def test_the_filter_also_covers_records_of_other_loggers(debug_log: io.StringIO) -> None:
    logging.getLogger("some.library").debug(
        "headers %s", [(b"x-api-key", b"sk-ant-api03-zzzzzzzzzzzzzzzzzzzz")]
    )
    logging.getLogger("other").info("token Bearer abcdefghij0123456789 in a message")
    token = "MTA" + "x" * 23 + ".GabCdE." + "y" * 38
    logging.getLogger("discord.http").debug("identify with Bot %s", token)
    try:
        raise RuntimeError(f"boom AIza{'B' * 35}")
    except RuntimeError:
        logging.getLogger("other").exception("failed")
    text = debug_log.getvalue()
    assert "zzzzzzzz" not in text and "abcdefghij0123456789" not in text
    assert "y" * 38 not in text and "identify with Bot [redacted]" in text
    assert "B" * 35 not in text and "RuntimeError" in text


def test_redact_keeps_ordinary_text() -> None:
    line = 'HTTP Request: POST http://127.0.0.1:1/v1/chat/completions "HTTP/1.1 200 OK"'
    assert redact(line) == line


def test_debug_cli_writes_no_key_to_stderr(tmp_path) -> None:
    """``gigi --debug llm credential test`` against an endpoint that echoes the key."""

    def gigi(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        code = (
            "import sys; from gigi_core.cli import main; sys.argv = ['gigi', *sys.argv[1:]]; main()"
        )
        return subprocess.run(
            [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True
        )

    from gigi_core.store.sealing import generate_key

    with FakeOpenAI(api_key=KEY) as fake:
        fake.respond_with(
            lambda r: echo_in_headers(r) if r.json and r.json.get("max_tokens") else None
        )
        env = {
            **os.environ,
            "GIGI_HOME": str(tmp_path / "home"),
            "GIGI_SECRET_KEY": generate_key(),
            "ECHO_KEY": KEY,
            "GIGI_LOAD_PLUGINS": "openai",
        }
        add = gigi(
            "llm", "credential", "add", "--owner", "guild:g1", "--provider",
            "openai-compatible", "--label", "main", "--base-url", fake.base_url,
            "--api-key-env", "ECHO_KEY", env=env,
        )  # fmt: skip
        assert add.returncode == 0, add.stderr
        test = gigi(
            "--debug", "llm", "credential", "test", "--owner", "guild:g1", "--label", "main",
            "--model", "m-1", env=env,
        )  # fmt: skip
    assert "receive_response_headers" in test.stderr, test.stderr[-2000:]
    assert fragments(test.stdout + test.stderr) == [], test.stderr[-3000:]
