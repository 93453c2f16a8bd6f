"""The retrieval eval, run small: the seeded set regenerates byte for byte, and the merged
ranking beats the best single path on it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def module(name: str):
    qualified = f"retrieval_eval_{name}"
    path = REPO / "evals" / "retrieval" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(qualified, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_seeded_guild_is_what_the_generator_makes(tmp_path) -> None:
    made = module("generate").main(tmp_path / "set.ryaml")
    assert made.read_text() == (REPO / "evals" / "retrieval" / "seeded_guild.ryaml").read_text()


async def test_merged_beats_the_best_single_path_on_a_small_run() -> None:
    result = await module("run").evaluate(limit=12)
    metrics = result["metrics"]
    assert result["questions"] == 12 and set(metrics) == {"keyword", "entity_time", "merged"}
    best_mrr = max(metrics["keyword"]["mrr"], metrics["entity_time"]["mrr"])
    best_recall = max(metrics["keyword"]["recall@5"], metrics["entity_time"]["recall@5"])
    assert metrics["merged"]["mrr"] > best_mrr
    assert metrics["merged"]["recall@5"] >= best_recall
    assert result["merged_beats_best_path"] is True
