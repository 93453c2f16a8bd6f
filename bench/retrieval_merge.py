"""Engine overhead: merge (weighted RRF, boosts, recency, confidence) + pack for 5 paths x 50 hits.

    python bench/retrieval_merge.py [RUNS]          # default 2,000 timed runs

The hits are generated from a fixed seed: 5 paths each rank 50 of a pool of 120 records
(so records overlap across paths as real ones do), with ~200-character texts, ages up to a
year, confidences 0.4-1.0 and all five kinds. Timed per run, interleaved:
- ``merge`` + ``assemble`` (first turn: labels, stale markers, token counts, trimming to
  the default 6,500-token budget);
- the same for a follow-up turn with the first turn's state (restore handles);
- the anchor: a plain ``sorted()`` of the same 250 hits by a precomputed score.
Target: merge + pack p95 <= 2 ms on this machine (2 cores shared).
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gigi_core.context.pack import Candidate, assemble
from gigi_core.retrieval import Citation, Hit, RetrievalSettings, merge

PATHS, PER_PATH, POOL = 5, 50, 120
TARGET_MS = 2.0
KINDS = ("decision", "action", "signal", "summary", "message")
WORDS = "postgres upgrade staging release backup schema index query plan owner deadline".split()
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def make_hits(seed: int = 11) -> dict[str, list[Hit]]:
    rng = random.Random(seed)
    pool = []
    for n in range(POOL):
        when = NOW - timedelta(days=rng.uniform(0, 365))
        text = " ".join(rng.choice(WORDS) for _ in range(28))[:200]
        pool.append(
            Hit(
                source_id=f"bench:rec:{n}",
                kind=KINDS[n % len(KINDS)],
                text=text,
                channel_id=f"c{n % 7}",
                timestamp=when,
                confidence=round(rng.uniform(0.4, 1.0), 2),
                citation=Citation(f"#c{n % 7} · {when.date().isoformat()}"),
                paths=("p",),
                edited=n % 17 == 0,
            )
        )
    return {f"path{p}": rng.sample(pool, PER_PATH) for p in range(PATHS)}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(runs: int = 2000) -> None:
    per_path = make_hits()
    settings = RetrievalSettings(max_hits=60)
    flat = [(h.confidence * (i + 1), h) for hits in per_path.values() for i, h in enumerate(hits)]

    def pack_once(previous=None):
        ranked = merge(per_path, settings, NOW)
        cands = [Candidate(r.hit, r.score, r.paths[0]) for r in ranked]
        return assemble(cands, mode="memory", settings=settings, now=NOW, previous=previous)

    first = pack_once()
    for _ in range(50):  # warm up
        pack_once(first.state)
        sorted(flat, key=lambda x: x[0])
    t_first, t_follow, t_sort = [], [], []
    gc.disable()
    try:
        for _ in range(runs):
            t0 = time.perf_counter()
            pack_once()
            t1 = time.perf_counter()
            pack_once(first.state)
            t2 = time.perf_counter()
            sorted(flat, key=lambda x: x[0])
            t3 = time.perf_counter()
            t_first.append((t1 - t0) * 1000)
            t_follow.append((t2 - t1) * 1000)
            t_sort.append((t3 - t2) * 1000)
    finally:
        gc.enable()
    follow = pack_once(first.state)
    print(
        f"retrieval merge + pack: {PATHS} paths x {PER_PATH} hits ({len(first.items)} items "
        f"kept of {len(merge(per_path, settings, NOW))}, {first.used_tokens}/"
        f"{first.budget_tokens} tokens; follow-up: {len(follow.unchanged)} unchanged), {runs} runs"
    )
    for name, values in (
        ("merge + pack, first turn", t_first),
        ("merge + pack, follow-up", t_follow),
        ("anchor: sorted() of the same 250 hits", t_sort),
    ):
        print(
            f"  {name:40s} p50 {statistics.median(values):7.3f} ms  "
            f"p95 {pct(values, 0.95):7.3f} ms  max {max(values):7.3f} ms"
        )
    p95 = max(pct(t_first, 0.95), pct(t_follow, 0.95))
    ratio = p95 / max(pct(t_sort, 0.95), 1e-9)
    verdict = "meets" if p95 <= TARGET_MS else "MISSES"
    print(f"  p95 {p95:.3f} ms {verdict} the {TARGET_MS:g} ms target ({ratio:.0f}x the anchor)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
