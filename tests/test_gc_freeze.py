"""``gigi run`` and ``gigi worker`` freeze what start-up built, so a full collection later
does not rescan it (a 60-200 ms stall of the event loop per generation-2 collection)."""

from __future__ import annotations

import gc

from gigi_core.cli.common import GC_FIRST_THRESHOLD, freeze_startup_heap


def test_what_start_up_built_is_left_out_of_every_later_collection() -> None:
    built = [{"n": i} for i in range(10_000)]  # what start-up leaves alive
    thresholds = gc.get_threshold()
    try:
        assert any(o is built for o in gc.get_objects(generation=2)) or gc.is_tracked(built)
        frozen = freeze_startup_heap()
        assert frozen >= len(built) and gc.get_freeze_count() == frozen
        assert gc.get_threshold() == (GC_FIRST_THRESHOLD, *thresholds[1:])
        tracked = gc.get_objects()  # generations 0-2: what a collection scans
        assert not any(o is built or o is built[0] for o in tracked)
        gc.collect()
        assert built[-1] == {"n": 9_999}  # frozen is kept, not freed
        later = [{"n": "new"}]
        assert any(o is later for o in gc.get_objects())  # what comes later is still scanned
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert any(o is built for o in gc.get_objects())
