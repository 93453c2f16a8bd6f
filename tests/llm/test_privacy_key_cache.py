"""A member's privacy delete drops their keys from this process's memory at once: the
next call never uses a deleted key, however long facts and keys are cached. Both backends;
fake OpenAI servers on loopback."""

from __future__ import annotations

import pytest

from gigi_core.llm.records import NothingToResolve
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, USER_KEY, llm_kernel

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _long_cache(monkeypatch) -> None:
    """Facts and unsealed keys outlive the test: only an explicit clear can drop them."""
    monkeypatch.setenv("GIGI_LLM_CACHE_SECONDS", "3600")
    monkeypatch.setenv("GIGI_LLM_SECRET_SECONDS", "3600")


async def test_a_deleted_personal_key_never_answers_again(database_url, tmp_path) -> None:
    async with (
        llm_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key=USER_KEY) as member_srv,
        FakeOpenAI(api_key=GUILD_KEY) as guild_srv,
    ):
        llm = kernel.llm
        await llm.personal.add(
            "u1", "openai-compatible", "mine", USER_KEY, base_url=member_srv.base_url, model="u-m"
        )
        await llm.add_credential(
            "guild:g1", "openai-compatible", "k", GUILD_KEY, base_url=guild_srv.base_url
        )
        await llm.set_profile("guild:g1", "chat", "k", "g-model")
        await llm.set_policy("g1", personal_keys="guild-allowed")
        member_srv.reply_text("from your key", times=2)
        guild_srv.reply_text("from the server's key")
        dm = await llm.chat(HI, guild_id="dm:u1", actor="u1", dm=True)
        mine = await llm.chat(HI, guild_id="g1", actor="u1", billing="me")
        assert (dm.text, mine.text) == ("from your key", "from your key")

        await kernel.privacy.delete("u1")

        with pytest.raises(NothingToResolve):
            await llm.chat(HI, guild_id="dm:u1", actor="u1", dm=True)
        with pytest.raises(NothingToResolve):
            await llm.chat(HI, guild_id="g1", actor="u1", billing="me")
        server = await llm.chat(HI, guild_id="g1", actor="u1")
        assert server.text == "from the server's key"
        assert len(member_srv.requests) == 2  # nothing reached the deleted key after
        assert [r.headers["authorization"] for r in guild_srv.requests] == [f"Bearer {GUILD_KEY}"]
