"""A process firing concurrent model calls at one budget, for the two-process race test.

``python -m tests.scale.budget_worker DATABASE_URL HOME SECRET_KEY CALLS``

Opens a kernel with gigi-openai on the shared database, prints "ready", waits for a line
on stdin (so both processes start together), fires ``CALLS`` concurrent chats through
``kernel.llm`` and prints ``ok N refused M other K``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from gigi_core import Actor
from gigi_core.llm import BudgetExhausted
from gigi_core.testing import open_test_kernel
from tests.llm.budget_helpers import GUILD, request


async def main(url: str, home: str, secret_key: str, calls: int) -> None:
    async with open_test_kernel(
        Path(home), plugins=["openai"], database_url=url, secret_key=secret_key
    ) as kernel:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        member = Actor(id="u1")
        results = await asyncio.gather(
            *(
                kernel.llm.chat(request(), guild_id=GUILD, actor=member, channel_id="c1")
                for _ in range(calls)
            ),
            return_exceptions=True,
        )
        ok = sum(not isinstance(r, BaseException) for r in results)
        refused = sum(isinstance(r, BudgetExhausted) for r in results)
        others = [type(r).__name__ for r in results if isinstance(r, BaseException)]
        others = [o for o in others if o != "BudgetExhausted"]
        print(f"ok {ok} refused {refused} other {len(others)} {' '.join(others[:3])}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
