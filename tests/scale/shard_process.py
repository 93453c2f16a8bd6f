"""A shard-pool member in a child process: join, then beat, printing what it holds.

``python -m tests.scale.shard_process DATABASE_URL SHARD_COUNT LEASE``
"""

from __future__ import annotations

import asyncio
import json
import sys

from gigi_core.store.db import Database
from gigi_core.surfaces import ShardLeases


async def main(url: str, count: int, lease: float) -> None:
    db = Database(url)
    leases = ShardLeases(db, count, lease=lease)
    beat = await leases.join(settle=0.5)
    while True:
        print(json.dumps({"owner": leases.owner, "held": beat.held}), flush=True)
        await asyncio.sleep(leases.every)
        beat = await leases.beat()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
