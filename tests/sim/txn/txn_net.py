"""Virtual time and a faulty network for the transaction simulation (txn_sim.py).

One seeded ``random.Random`` drives everything.  ``Net.at`` schedules an event;
``Net.request`` sends a request to a handler and its answer back, each leg of
which may be dropped, delayed (so reordered), duplicated or, rarely, stalled for
seconds: the stalled request is Jepsen's delayed request, delivered long after
its sender gave up on it (a connection the client closed on a timeout, while the
server still had the request in its buffer).  The sender sees at most one answer
per request: the first within its timeout, else ``None`` once the timeout
passes (a late answer is never matched to a newer request, as with a real
connection).  The server side handles every copy it receives, late or not.
"""
from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Net", "NetFaults"]


@dataclass
class NetFaults:
    drop_p: float = 0.03            # a leg is lost
    dup_p: float = 0.03             # a leg arrives twice
    stall_p: float = 0.02           # a leg arrives 0.5-4 s late (Jepsen's delayed request)
    delay_ms: tuple[int, int] = (1, 25)
    stall_ms: tuple[int, int] = (500, 4000)

    @classmethod
    def none(cls) -> NetFaults:
        return cls(0.0, 0.0, 0.0, (1, 5))


class Net:
    def __init__(self, rng: random.Random, faults: NetFaults):
        self.rng = rng
        self.faults = faults
        self.now = 0
        self._queue: list = []
        self._seq = 0
        self.stats = {"dropped": 0, "duplicated": 0, "stalled": 0}

    # -- events ----------------------------------------------------------------------------
    def at(self, t: int, fn: Callable, *args) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (max(t, self.now), self._seq, fn, args))

    def step(self, until: int) -> bool:
        """Run the next event due by ``until``; False when there is none."""
        if not self._queue or self._queue[0][0] > until:
            return False
        t, _, fn, args = heapq.heappop(self._queue)
        self.now = t
        fn(*args)
        return True

    # -- the network ---------------------------------------------------------------------------
    def send(self, fn: Callable, *args) -> None:
        """One leg: ``fn(*args)`` runs at the far end zero, one or two times."""
        f = self.faults
        if self.rng.random() < f.drop_p:
            self.stats["dropped"] += 1
            return
        copies = 2 if self.rng.random() < f.dup_p else 1
        self.stats["duplicated"] += copies - 1
        for _ in range(copies):
            if self.rng.random() < f.stall_p:
                self.stats["stalled"] += 1
                delay = self.rng.randint(*f.stall_ms)
            else:
                delay = self.rng.randint(*f.delay_ms)
            self.at(self.now + delay, fn, *args)

    def request(self, handler: Callable, body, on_answer: Callable, timeout_ms: int) -> None:
        """``handler(body, reply)`` at the far end; ``on_answer(answer or None)`` here, once."""
        state = {"open": True}

        def answered(answer) -> None:
            if state["open"]:
                state["open"] = False
                on_answer(answer)

        def timed_out() -> None:
            if state["open"]:
                state["open"] = False
                on_answer(None)

        self.send(handler, body, lambda answer: self.send(answered, answer))
        self.at(self.now + timeout_ms, timed_out)
