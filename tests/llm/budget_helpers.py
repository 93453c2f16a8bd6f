"""Shared by the budget tests and the two-process worker: a kernel calling a fake OpenAI
on loopback, and a chat request whose most cost is known."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from gigi_core.kernel import Kernel
from gigi_core.llm.budget_cost import most_tokens
from gigi_core.llm.types import ChatRequest
from gigi_core.store.budget_tables import LlmBudgetWindow
from gigi_core.store.sealing import generate_key
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI

GUILD = "g1"
KEY = "sk-budget-test-0123456789"
HI = [{"role": "user", "content": "hi"}]
MAX_OUT = 100


def request() -> ChatRequest:
    return ChatRequest(model="m-1", messages=HI, max_output_tokens=MAX_OUT)  # type: ignore[arg-type]


#: The most one such call may cost: what each call holds.
MOST = most_tokens(request())


def usage_of(total: int) -> dict[str, Any]:
    """A reply's usage that spends ``total`` tokens."""
    return {"prompt_tokens": total - 1, "completion_tokens": 1, "total_tokens": total}


async def configure(kernel: Kernel, base_url: str) -> None:
    await kernel.llm.add_credential(
        f"guild:{GUILD}", "openai-compatible", "main", KEY, base_url=base_url
    )
    await kernel.llm.set_profile(f"guild:{GUILD}", "chat", "main", "m-1")


async def counters(kernel: Kernel) -> tuple[int, int]:
    """(spent, reserved) summed over every window row, once this process's budget leases
    are given back (what is still reserved then is held by calls or other processes)."""
    await kernel.db.writer.drain()
    await kernel.llm.budgets.give_back()
    w = LlmBudgetWindow
    async with kernel.db.engine.connect() as conn:
        row = (
            await conn.execute(
                select(func.coalesce(func.sum(w.spent), 0), func.coalesce(func.sum(w.reserved), 0))
            )
        ).one()
    return int(row[0]), int(row[1])


@asynccontextmanager
async def two_processes(
    database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[Kernel, Kernel, FakeOpenAI]]:
    """Two kernels on one database sharing a secret key (two processes of one deployment),
    and a fake OpenAI on loopback."""
    key = generate_key()
    async with (
        open_test_kernel(
            tmp_path / "a", plugins=["openai"], database_url=database_url, secret_key=key
        ) as one,
        open_test_kernel(
            tmp_path / "b", plugins=["openai"], database_url=database_url, secret_key=key
        ) as two,
        FakeOpenAI() as fake,
    ):
        yield one, two, fake
