"""The node's heap once it is up: what start-up built is frozen out of the cyclic collector.

Modules, the metadata image, the hosted logs and their indexes live as long as the node. Left
to the collector, every old-generation pass walks all of them; frozen (``gc.freeze``), a pass
walks only what was made since.  Young passes run every ``GC_YOUNG_THRESHOLD`` container
allocations instead of Python's 700: the request path allocates a few hundred per request, and
reference counting frees nearly all of it (py-spy, 3 brokers RF 3 at P=300 round-robin: a
tenth of a broker's event loop was in ``gc_collect_main``).
"""
from __future__ import annotations

import gc

__all__ = ["GC_YOUNG_THRESHOLD", "settle_heap"]

GC_YOUNG_THRESHOLD = 10_000


def settle_heap() -> None:
    """Freeze what exists now and space the young collections out (once, after start-up)."""
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
