"""Counters inside each broker for ``bench/txn_counts.py`` (never imported by tierlog itself).

``txn_counts.py`` puts this directory first on the brokers' PYTHONPATH with
``TIERLOG_TXN_COUNTS`` set to a directory; Python imports ``sitecustomize`` at start-up, and this
one then counts, in the broker's own process:

- the tasks its event loop creates, by coroutine name (``BaseEventLoop.create_task`` wrapped);
- its replica fetcher's answers: rounds, partitions named, appends, rounds without records;

and writes them to ``<dir>/counts-<pid>.json`` every ``DUMP_INTERVAL_S``. ``SIGNAL`` switches a
cProfile of the event-loop thread on, and off again, writing ``<dir>/prof-<pid>.pstats``.
"""
from __future__ import annotations

import os

DUMP_INTERVAL_S = 0.5
SIGNAL_OFFSET = 3                   # SIGRTMIN + 3: not used by the node

_DIR = os.environ.get("TIERLOG_TXN_COUNTS")


def _install(directory: str) -> None:
    import asyncio.base_events
    import collections
    import cProfile
    import json
    import signal
    import threading
    import time

    tasks: collections.Counter = collections.Counter()
    rounds: collections.Counter = collections.Counter()
    create_task = asyncio.base_events.BaseEventLoop.create_task

    def counted_create_task(self, coro, *args, **kwargs):
        tasks[getattr(coro, "__qualname__", type(coro).__name__)] += 1
        return create_task(self, coro, *args, **kwargs)

    asyncio.base_events.BaseEventLoop.create_task = counted_create_task

    def count_rounds() -> bool:
        try:
            from tierlog.replication import fetcher
        except ImportError:
            return False
        handle = fetcher.FetcherState.handle_fetch_response

        def counted(self, response, now_ms):
            actions = handle(self, response, now_ms)
            appends = sum(type(a).__name__ == "Append" for a in actions)
            rounds["rounds"] += 1
            rounds["partitions"] += sum(len(t["Partitions"]) for t in response.get("Responses", ()))
            rounds["appends"] += appends
            rounds["rounds_without_records"] += not appends
            return actions

        fetcher.FetcherState.handle_fetch_response = counted
        return True

    def dump() -> None:
        patched = False
        while True:
            time.sleep(DUMP_INTERVAL_S)
            patched = patched or count_rounds()
            path = os.path.join(directory, f"counts-{os.getpid()}.json")
            with open(path + ".tmp", "w") as f:
                json.dump({"tasks": dict(tasks), "rounds": dict(rounds)}, f)
            os.replace(path + ".tmp", path)

    threading.Thread(target=dump, daemon=True, name="txn-counts").start()
    profile: list = []

    def toggle(_signum, _frame) -> None:
        if not profile:
            profile.append(cProfile.Profile())
            profile[0].enable()
        else:
            profile[0].disable()
            profile.pop().dump_stats(os.path.join(directory, f"prof-{os.getpid()}.pstats"))

    signal.signal(signal.SIGRTMIN + SIGNAL_OFFSET, toggle)


if _DIR:
    _install(_DIR)
