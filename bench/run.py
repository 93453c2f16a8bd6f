"""Run every benchmark and print its figures; record them in docs/benchmarks.md by hand."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_turn
import cold_start
import events_publish
import jobs_drain
import memory_count
import memory_ingest
import memory_observe
import memory_search
import offered_tools
import retrieval_merge
import usage_report
import validation


def main() -> None:
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}"
    )
    cold_start.main()
    validation.main()
    events_publish.main()
    jobs_drain.main()
    agent_turn.main()
    offered_tools.main()
    retrieval_merge.main()
    usage_report.main()  # minutes: 1M usage rows on each backend
    memory_search.main()  # minutes: 100k embedded messages on each backend
    memory_ingest.main()  # minutes: 500k messages through the real path and raw, each backend
    memory_observe.main()  # seconds: the event handler while the writer is busy
    memory_count.main()  # minutes: 1M messages loaded on each backend


if __name__ == "__main__":
    main()
