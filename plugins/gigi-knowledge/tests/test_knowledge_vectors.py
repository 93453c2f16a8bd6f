"""``vectors.best``: one matrix product, best first, rows of another size skipped."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from gigi_knowledge import vectors


def test_best_orders_by_cosine_and_skips_other_sizes() -> None:
    q = vectors.unit([1.0, 0.0, 0.0])
    rows = [
        SimpleNamespace(name="far", vector=vectors.encode(vectors.unit([0.0, 1.0, 0.0]))),
        SimpleNamespace(name="near", vector=vectors.encode(vectors.unit([0.9, 0.1, 0.0]))),
        SimpleNamespace(name="other model", vector=vectors.encode(np.ones(4, np.float32))),
        SimpleNamespace(name="same", vector=vectors.encode(q)),
        SimpleNamespace(name="opposite", vector=vectors.encode(-q)),
    ]
    got = vectors.best(q, rows)
    assert [r.name for _, r in got] == ["same", "near", "far", "opposite"]
    assert got[0][0] == np.float32(1.0).item() and got[-1][0] < 0
    assert vectors.best(q, []) == [] and vectors.best(q, rows[2:3]) == []


def test_best_with_a_limit_keeps_the_best_in_order() -> None:
    rng = np.random.default_rng(3)
    q = vectors.unit(rng.standard_normal(8))
    rows = [
        SimpleNamespace(i=i, vector=vectors.encode(vectors.unit(rng.standard_normal(8))))
        for i in range(50)
    ]
    full = vectors.best(q, rows)
    top = vectors.best(q, rows, 5)
    assert [r.i for _, r in top] == [r.i for _, r in full[:5]]
    assert [s for s, _ in full] == sorted((s for s, _ in full), reverse=True)
