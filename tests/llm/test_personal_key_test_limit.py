"""``/llm key test`` on every surface goes through ``PersonalKeys.test``: a member may test
once per ``TEST_INTERVAL`` (failed tests count too), so nobody hammers a provider through
Gigi; other members are not held back. Both backends, wire-level fake provider."""

from __future__ import annotations

import pytest

from gigi_core.errors import GigiError
from gigi_core.llm.personal import TEST_INTERVAL
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import USER_KEY, llm_kernel


async def test_a_member_tests_their_key_once_per_interval(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=USER_KEY) as fake:
        personal = kernel.llm.personal
        now = [1000.0]
        personal.clock = lambda: now[0]
        for user in ("u1", "u2"):
            await personal.add(
                user, "openai-compatible", "mine", USER_KEY, base_url=fake.base_url, model="m"
            )
        for _ in range(3):
            fake.reply_text("OK")
        assert (await personal.test("u1", "mine")).ok
        for _ in range(5):
            with pytest.raises(GigiError, match="you tested a key") as caught:
                await personal.test("u1", "mine")
            assert "test again in" in str(caught.value.hint)
        assert (await personal.test("u2", "mine")).ok  # another member is not held back
        assert len(fake.requests_to("chat")) == 2
        now[0] += TEST_INTERVAL
        assert (await personal.test("u1", "mine")).ok
        assert len(fake.requests_to("chat")) == 3


async def test_a_member_keeps_at_most_max_keys(database_url, tmp_path) -> None:
    from gigi_core.llm.personal import MAX_KEYS
    from gigi_core.llm.records import LlmConfigError

    async with llm_kernel(tmp_path, database_url) as kernel:
        personal = kernel.llm.personal
        for n in range(MAX_KEYS):
            await personal.add("u1", "openai", f"k{n}", f"{USER_KEY}-{n}")
        with pytest.raises(LlmConfigError, match=f"already have {MAX_KEYS} keys") as caught:
            await personal.add("u1", "openai", "one-more", USER_KEY)
        assert "/llm key remove" in str(caught.value.hint)
        await personal.add("u2", "openai", "k0", USER_KEY)  # another member is not held back
        await personal.remove("u1", "k0")
        await personal.add("u1", "openai", "one-more", USER_KEY)
