"""Tool-argument validation throughput with the compiled validators (target >= 100k/s)."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path


async def measure(n: int = 200_000) -> tuple[float, float]:
    from gigi_core.testing import open_test_kernel
    from gigi_core.tools.invoke import validate_args

    async with open_test_kernel(Path(tempfile.mkdtemp()), plugins=["dice"]) as kernel:
        spec = kernel.registry.actions["dice.roll"]
        good, bad = {"sides": 20, "count": 3}, {"sides": 1}
        validate_args(kernel, spec, good)  # compile once
        started = time.perf_counter()
        for _ in range(n):
            validate_args(kernel, spec, good)
        ok_rate = n / (time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(n // 10):
            try:
                validate_args(kernel, spec, bad)
            except Exception:
                pass
        bad_rate = (n // 10) / (time.perf_counter() - started)
    return ok_rate, bad_rate


def main() -> None:
    ok_rate, bad_rate = asyncio.run(measure())
    print("validation: dice.roll arguments through gigi_core.tools.invoke.validate_args")
    print(
        f"  valid: {ok_rate:,.0f}/s (target >= 100,000/s); invalid with error message: {bad_rate:,.0f}/s"
    )


if __name__ == "__main__":
    main()
