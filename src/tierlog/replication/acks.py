"""The acks=all purgatory of one partition (Kafka's DelayedProduce, per partition).

A produce with acks=all is appended first, then parked here until the high
watermark reaches its *required offset* (last offset of the batch + 1,
exclusive end) or ``request.timeout.ms`` passes.  The shell aggregates the
per-partition completions of a multi-partition Produce request.

Rules:

- Before the append (``check_before_append``): acks=all with a committed ISR
  smaller than the effective min.insync.replicas answers NOT_ENOUGH_REPLICAS
  and nothing is appended (Kafka's ``appendRecordsToLeader``).
- Before the append, when ``MAX_PENDING_PRODUCES`` are already parked, the
  produce is refused with REQUEST_TIMED_OUT (retriable; ours, Kafka has no
  bound) so memory stays bounded.
- ``on_high_watermark``: every entry with required offset <= HW completes:
  with NONE when the ISR still has min.insync.replicas members, else with
  NOT_ENOUGH_REPLICAS_AFTER_APPEND (Kafka's ``checkEnoughReplicasReachOffset``).
  If the ISR drops below min.insync.replicas while entries wait, they complete
  at once with NOT_ENOUGH_REPLICAS_AFTER_APPEND (ours: the high watermark is
  frozen under min ISR, so waiting would only end in a timeout).
- ``expire``: entries past their deadline complete with REQUEST_TIMED_OUT.
- ``fail_all``: on losing leadership all complete with NOT_LEADER_OR_FOLLOWER.

Entries are kept in offset order, so completion pops from the left of a deque;
appends come in offset order, except a producer's retry of a batch still waiting
here (a duplicate, answered with its original offsets, KIP-98), which is inserted
at its place; deadlines go through a heap with lazy removal.
"""
from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass

from tierlog.protocol.errors import ErrorCode

__all__ = ["MAX_PENDING_PRODUCES", "AcksPurgatory", "Completion"]

MAX_PENDING_PRODUCES = 10_000


@dataclass(frozen=True, slots=True)
class Completion:
    token: Hashable                 # the shell's handle for the waiting request
    error: int                      # 0, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT, ...


@dataclass(slots=True)
class _Entry:
    token: Hashable
    required_offset: int            # exclusive: HW >= this completes
    deadline_ms: int
    done: bool = False


def _required(entry: _Entry) -> int:
    return entry.required_offset


class AcksPurgatory:
    def __init__(self, max_pending: int = MAX_PENDING_PRODUCES) -> None:
        assert max_pending > 0
        self.max_pending = max_pending
        self._by_offset: deque[_Entry] = deque()
        self._deadlines: list[tuple[int, int, _Entry]] = []
        self._seq = 0
        self._pending = 0

    def __len__(self) -> int:
        return self._pending

    def check_before_append(self, isr_size: int, effective_min_isr: int) -> int:
        """Error code for an acks=all produce before it is appended (0 = go ahead)."""
        if isr_size < effective_min_isr:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        if self._pending >= self.max_pending:
            return ErrorCode.REQUEST_TIMED_OUT
        return 0

    def add(self, token: Hashable, required_offset: int, now_ms: int, timeout_ms: int) -> None:
        assert self._pending < self.max_pending, "check_before_append first"
        entry = _Entry(token, required_offset, now_ms + timeout_ms)
        if self._by_offset and required_offset < self._by_offset[-1].required_offset:      # a duplicate
            self._by_offset.insert(bisect_right(self._by_offset, required_offset, key=_required), entry)
        else:
            self._by_offset.append(entry)
        self._seq += 1
        heapq.heappush(self._deadlines, (entry.deadline_ms, self._seq, entry))
        self._pending += 1

    def on_high_watermark(self, high_watermark: int, isr_size: int, effective_min_isr: int) -> list[Completion]:
        """Complete what the high watermark covers; everything if the ISR is under min ISR."""
        out: list[Completion] = []
        under = isr_size < effective_min_isr
        while self._by_offset:
            entry = self._by_offset[0]
            if entry.done:
                self._by_offset.popleft()
                continue
            if entry.required_offset > high_watermark and not under:
                break
            self._by_offset.popleft()
            out.append(self._finish(entry, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND if under else 0))
        return out

    def expire(self, now_ms: int) -> list[Completion]:
        out: list[Completion] = []
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, _, entry = heapq.heappop(self._deadlines)
            if not entry.done:
                out.append(self._finish(entry, ErrorCode.REQUEST_TIMED_OUT))
        return out

    def fail_all(self, error: int = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> list[Completion]:
        out = [self._finish(e, error) for e in self._by_offset if not e.done]
        self._by_offset.clear()
        self._deadlines.clear()
        return out

    def next_deadline_ms(self) -> int | None:
        while self._deadlines and self._deadlines[0][2].done:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def _finish(self, entry: _Entry, error: int) -> Completion:
        entry.done = True
        self._pending -= 1
        return Completion(entry.token, int(error))
