"""The retrieval eval: recall@5 and MRR per path and merged, over the seeded guild.

    python evals/retrieval/run.py [--limit N] [--json]

Two retrievers are built from ``seeded_guild.ryaml`` (made by ``generate.py``; read its
docstring for how): ``keyword`` (BM25 over the message words) and ``entity_time`` (the
messages naming the question's entities, those inside the plan's time range first, newest
first), each a real ``gigi_core.retrieval.Retriever`` asked with a real ``Scope``. Their
lists are fused by the engine's own ``merge`` with the default settings; the plan's time
range comes from the engine's deterministic query analysis. Runs offline, no model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gigi_core.retrieval import Citation, Hit, RetrievalSettings, Scope, merge
from gigi_core.retrieval.plan import deterministic_plan, entities

SET = Path(__file__).with_name("seeded_guild.ryaml")
K = 5
_STOP = set("the a an to of in on for and is are was we did who what which where will at".split())


def load(path: Path = SET) -> dict[str, Any]:
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load(path.read_text())
    data["now"] = datetime.fromisoformat(str(data["now"]))
    for m in data["messages"]:
        m["at"] = datetime.fromisoformat(str(m["at"]))
    return data


def words(text: str) -> list[str]:
    out = []
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        if w in _STOP:
            continue
        for suffix in ("ing", "ed", "s"):
            if w.endswith(suffix) and len(w) > len(suffix) + 3:
                w = w[: -len(suffix)]
                break
        out.append(w)
    return out


def as_hit(m: dict[str, Any], path: str) -> Hit:
    return Hit(
        source_id=f"memory:msg:{m['id']}",
        kind="message",
        text=m["text"],
        channel_id=m["channel"],
        timestamp=m["at"],
        citation=Citation(f"#{m['channel']} · {m['at'].date().isoformat()}"),
        paths=(path,),
    )


@dataclass
class KeywordPath:
    """BM25 (k1 1.2, b 0.75) over the words of every message in scope."""

    messages: list[dict[str, Any]]
    name: str = "keyword"
    paths: tuple[str, ...] = ("bm25",)
    capability: str = "memory.read.guild"

    def __post_init__(self) -> None:
        self.docs = [Counter(words(m["text"])) for m in self.messages]
        self.avg = sum(sum(d.values()) for d in self.docs) / max(1, len(self.docs))
        self.df = Counter(w for d in self.docs for w in d)

    async def retrieve(self, query: str, scope: Scope, limit: int) -> list[Hit]:
        n = len(self.docs)
        scored = []
        for m, doc in zip(self.messages, self.docs, strict=True):
            if m["channel"] not in scope.channel_ids:
                continue
            length = sum(doc.values())
            score = 0.0
            for w in set(words(query)):
                tf = doc.get(w, 0)
                if tf:
                    idf = math.log(1 + (n - self.df[w] + 0.5) / (self.df[w] + 0.5))
                    score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / self.avg))
            if score > 0:
                scored.append((score, m["id"], m))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [as_hit(m, "bm25") for _, _, m in scored[:limit]]


@dataclass
class EntityTimePath:
    """Messages naming the question's entities; inside the plan's time range first."""

    messages: list[dict[str, Any]]
    name: str = "entity_time"
    paths: tuple[str, ...] = ("entities",)
    capability: str = "memory.read.guild"

    async def retrieve(self, query: str, scope: Scope, limit: int) -> list[Hit]:
        wanted = {e.lower() for e in entities(query)}
        if not wanted:
            return []
        scored = []
        for m in self.messages:
            named = wanted & {e.lower() for e in m["entities"]}
            if not named or m["channel"] not in scope.channel_ids:
                continue
            inside = (scope.since is None or m["at"] >= scope.since) and (
                scope.until is None or m["at"] < scope.until
            )
            scored.append((len(named), inside, m["at"], m))
        scored.sort(key=lambda x: (-x[0], not x[1], -x[2].timestamp()))
        return [as_hit(m, "entities") for *_, m in scored[:limit]]


def metrics(ranked_ids: list[list[str]], expected: list[list[str]]) -> dict[str, float]:
    recall = mrr = 0.0
    for got, want in zip(ranked_ids, expected, strict=True):
        recall += len(set(got[:K]) & set(want)) / len(want)
        rank = next((i for i, sid in enumerate(got, 1) if sid in want), None)
        mrr += 1 / rank if rank else 0.0
    n = max(1, len(expected))
    return {f"recall@{K}": round(recall / n, 4), "mrr": round(mrr / n, 4)}


async def evaluate(limit: int | None = None, data: dict[str, Any] | None = None) -> dict[str, Any]:
    data = data or load()
    now, questions = data["now"], data["questions"][:limit]
    paths = [KeywordPath(data["messages"]), EntityTimePath(data["messages"])]
    settings = RetrievalSettings()
    visible = frozenset(data["channels"])
    per_path: dict[str, list[list[str]]] = {p.name: [] for p in paths}
    merged: list[list[str]] = []
    for question in questions:
        plan = deterministic_plan(question["text"], [p.name for p in paths], now)
        scope = Scope("seeded", visible, since=plan.since, until=plan.until)
        lists = {
            p.name: await p.retrieve(question["text"], scope, settings.per_path_limit)
            for p in paths
        }
        for name, hits in lists.items():
            per_path[name].append([h.source_id for h in hits])
        merged.append([r.hit.source_id for r in merge(lists, settings, now)])
    expected = [q["expected"] for q in questions]
    report = {name: metrics(ids, expected) for name, ids in per_path.items()}
    report["merged"] = metrics(merged, expected)
    best = max((v for k, v in report.items() if k != "merged"), key=lambda m: m["mrr"])
    return {
        "questions": len(questions),
        "messages": len(data["messages"]),
        "metrics": report,
        "merged_beats_best_path": report["merged"]["mrr"] > best["mrr"]
        and report["merged"][f"recall@{K}"] >= best[f"recall@{K}"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="Only the first N questions.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(evaluate(args.limit))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['questions']} questions over {result['messages']} messages")
    for name, m in result["metrics"].items():
        print(f"  {name:12s} recall@{K} {m[f'recall@{K}']:.3f}  MRR {m['mrr']:.3f}")
    print(f"  merged beats the best single path: {result['merged_beats_best_path']}")


if __name__ == "__main__":
    main()
