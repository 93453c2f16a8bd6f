"""Negative token counts from a provider are unknown, never stored or subtracted from totals."""

from __future__ import annotations

import math

from gigi_core.llm import ChatRequest, Usage, UserMessage, as_int
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, llm_kernel

NEGATIVE_USAGE = {
    "prompt_tokens": -5000,
    "completion_tokens": -1,
    "total_tokens": -5001,
    "prompt_tokens_details": {"cached_tokens": -3},
    "completion_tokens_details": {"reasoning_tokens": -7},
    "cost": -0.5,
}


def test_as_int_treats_negative_counts_as_unknown() -> None:
    assert as_int(-1) is None and as_int(-2.0) is None
    assert as_int(0) == 0 and as_int(12) == 12


def test_usage_model_treats_negative_counts_as_unknown() -> None:
    usage = Usage(input_tokens=-10, output_tokens=4, reasoning_tokens=-1, cost=-1.0)
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (None, 4, None)
    assert usage.cost is None
    assert Usage(cost=math.inf).cost is None


async def test_negative_counts_are_stored_as_unknown(tmp_path) -> None:
    async with llm_kernel(tmp_path, None) as kernel, FakeOpenAI(api_key=GUILD_KEY) as fake:
        llm = kernel.llm
        await llm.add_credential(
            "guild:g1", "openai-compatible", "main", GUILD_KEY, base_url=fake.base_url
        )
        await llm.set_profile("guild:g1", "chat", "main", "m-1")
        fake.reply_text("first", usage=NEGATIVE_USAGE)
        fake.reply_text("second")  # 11 in, 7 out
        request = ChatRequest(model="m", messages=[UserMessage(content="hi")])
        response = await llm.chat(request, guild_id="g1", actor="u1")
        assert response.usage == Usage()
        await llm.chat(request, guild_id="g1", actor="u1")
        events = await llm.usage_log.events("g1")
        columns = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")
        assert [[e[c] for c in columns] for e in events] == [[11, 7, 0, 0], [None] * 4]
        [row] = await llm.usage("g1")
        assert (row.input_tokens, row.output_tokens, row.reasoning_tokens) == (11, 7, 0)
        assert row.cached_tokens == 0
