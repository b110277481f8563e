"""A tierlog task's Python worker keeps its cyclic garbage collector cheap (``freezeWorkerGc``).

PySpark's daemon runs a full ``gc.collect()`` in a reused Python worker after every task, and the
collector runs full collections of its own as a task allocates. Each one visits every object the
collector tracks; a worker that has imported pyspark, pyarrow, pandas, numpy and tierlog tracks
about 110,000, and on the 2-core bench machine a collection of them took 66 ms of CPU on average
over a direct-read benchmark (64 collections, 4.3 s; the git history of `bench/README.md`, "The
Python workers' garbage collector"), a quarter of the workers' CPU.

So a read or write task first moves what is alive at its start into the collector's permanent generation
(``gc.freeze``), and later collections visit only what was made since. The previous task's
garbage is gone by then: the daemon collected it after that task. What this gives up: an object
alive at a task's start that later dies in a reference cycle is not reclaimed (reference counting
still frees all the rest). The option ``freezeWorkerGc=false`` leaves the collector alone.
"""

from __future__ import annotations

import gc

__all__ = ["before_task"]


def before_task(freeze: bool) -> None:
    """At a read or write task's start: freeze the objects alive now (``freeze``), or nothing."""
    if freeze:
        gc.freeze()
