"""One read for every caller that misses the same cached fact at the same moment.

Ten turns arriving together in a guild whose facts had expired each read the same rows:
ten reads of the guild's plugins and grants, ten of its LLM policy, profile, credential
and sealed key, 100-170 ms for the ten turns under load where one read takes 5-10 ms
(those turns were the c=10 p99). The first caller reads; the others wait for
its answer. A read is shared only within one cache generation (the flight's key carries
it), so a caller that arrives after a change never gets what was read before it. If the
first reader fails or is cancelled, each waiter reads for itself: no exception object is
shared between tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
_GONE: Any = object()  # the first reader failed or was cancelled


class SharedReads:
    """Reads in flight by key; ``read`` joins one or starts it."""

    def __init__(self) -> None:
        self._flights: dict[Hashable, asyncio.Future[Any]] = {}

    def __len__(self) -> int:
        return len(self._flights)

    async def read(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        """``await read()``, or the result of the same key's read already in flight."""
        flight = self._flights.get(key)
        if flight is not None:
            # Shielded: a waiter that is cancelled does not cancel the read it waits for.
            value = await asyncio.shield(flight)
            if value is not _GONE:
                return value  # type: ignore[no-any-return]
            return await read()
        flight = asyncio.get_running_loop().create_future()
        self._flights[key] = flight
        value = _GONE
        try:
            value = await read()
            return value
        finally:
            if self._flights.get(key) is flight:
                del self._flights[key]
            flight.set_result(value)
