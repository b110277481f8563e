"""``settle_heap``: what exists is frozen out of the collector and young passes are spaced out."""
import gc

from tierlog.server.heap import GC_YOUNG_THRESHOLD, settle_heap


def test_settle_heap_freezes_and_spaces_young_collections():
    before = gc.get_threshold()
    try:
        gc.unfreeze()
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
