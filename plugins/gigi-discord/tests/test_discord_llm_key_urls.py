"""A member's own key must not make Gigi call the machine it runs on or its network: on
Discord, ``/llm key add`` refuses a base URL that points there before the key is typed,
unless the operator allows it (SimCord drives discord.py; nothing is called)."""

from __future__ import annotations

import pytest
from discord_world import world


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://169.254.169.254/latest?",
        "http://10.0.0.7/v1",
        "http://[::1]:9000/v1",
        "http://localhost:5432",
        "http://metadata.google.internal/computeMetadata/v1?",
    ],
)
async def test_a_member_cannot_point_their_key_inside(tmp_path, monkeypatch, url) -> None:
    monkeypatch.delenv("GIGI_PERSONAL_KEY_LOCAL_URLS", raising=False)
    async with world(tmp_path, plugins=["openai"]) as w:
        shown = await w.member.slash(
            w.channel, "llm key add", provider="openai-compatible", label="x", base_url=url
        )
        assert shown.modal is None
        text = _text(shown)
        assert "points inside the server running Gigi" in text
        assert "GIGI_PERSONAL_KEY_LOCAL_URLS=1" in text
        assert await w.kernel.llm.list_credentials(f"user:{w.member.id}") == []


async def test_the_operator_may_allow_a_local_model_server(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_PERSONAL_KEY_LOCAL_URLS", "1")
    async with world(tmp_path, plugins=["openai"]) as w:
        shown = await w.member.slash(
            w.channel,
            "llm key add",
            provider="openai-compatible",
            label="x",
            base_url="http://127.0.0.1:11434/v1",
        )
        assert shown.modal is not None


async def test_a_second_key_test_right_away_is_refused_with_when(tmp_path, monkeypatch) -> None:
    from gigi_core.testing.fake_providers import FakeOpenAI

    monkeypatch.setenv("GIGI_PERSONAL_KEY_LOCAL_URLS", "1")
    async with world(tmp_path, plugins=["openai"]) as w, FakeOpenAI(api_key="sk-m-123456") as fake:
        await w.kernel.llm.personal.add(
            str(w.member.id), "openai-compatible", "mine", "sk-m-123456",
            base_url=fake.base_url, model="m-1",
        )  # fmt: skip
        fake.reply_text("OK")
        first = await w.member.slash(w.channel, "llm key test", label="mine")
        assert "**mine** works with m-1" in _text(first)
        again = await w.member.slash(w.channel, "llm key test", label="mine")
        assert again.ephemeral and "test again in" in _text(again)
        assert len(fake.requests_to("chat")) == 1


async def test_a_server_key_added_by_an_admin_is_checked_before_the_key_is_typed(
    tmp_path, monkeypatch
) -> None:
    for name in ("GIGI_PERSONAL_KEY_LOCAL_URLS", "GIGI_LLM_LOCAL_URLS"):
        monkeypatch.delenv(name, raising=False)
    async with world(tmp_path, plugins=["openai"]) as w:
        shown = await w.admin.slash(
            w.channel,
            "llm credential add",
            provider="openai-compatible",
            label="x",
            base_url="http://169.254.169.254/latest?",
        )
        assert shown.modal is None and "points inside the server running Gigi" in _text(shown)
        assert await w.kernel.llm.list_credentials(f"guild:{w.gid}") == []
