"""The DeleteRecords purgatory of one partition (Kafka's DelayedDeleteRecords, per partition).

A DeleteRecords request first raises the leader's log start offset (the
broker does that), then waits here until the partition's *low watermark*
reaches the requested offset or the request's TimeoutMs passes.

Rules:

- The low watermark (``low_watermark``) is the smallest log start offset over
  the leader and every follower in the ISR, as each last reported it in a
  Fetch (LogStartOffset).  An ISR follower not heard from in this leader epoch
  counts as -1: it has not reached anything yet.  (Kafka takes every alive
  replica and skips unknown ones; we wait for the ISR, which is what the data
  a consumer can read depends on.)
- ``on_low_watermark``: every entry whose offset is <= the low watermark
  completes with NONE and that low watermark.
- ``expire``: entries past their deadline complete with REQUEST_TIMED_OUT and
  the low watermark known then.
- ``fail_all``: on losing leadership all complete with NOT_LEADER_OR_FOLLOWER.
- At most ``MAX_PENDING_DELETES`` entries wait per partition (ours, Kafka has
  no bound): ``full`` tells the shell to answer REQUEST_TIMED_OUT at once.

Transitions of an entry: waiting -> done (by one of the three above), never back.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass

from tierlog.protocol.errors import ErrorCode

__all__ = ["MAX_PENDING_DELETES", "DeleteCompletion", "DeleteRecordsPurgatory", "low_watermark"]

MAX_PENDING_DELETES = 1000
UNKNOWN = -1


@dataclass(frozen=True, slots=True)
class DeleteCompletion:
    token: Hashable              # the shell's handle for the waiting request
    error: int                   # NONE, REQUEST_TIMED_OUT or NOT_LEADER_OR_FOLLOWER
    low_watermark: int           # the partition's low watermark when it completed (-1 unknown)


@dataclass(slots=True)
class _Entry:
    token: Hashable
    offset: int                  # the new log start asked for (exclusive end of what is deleted)
    deadline_ms: int


def low_watermark(leader_id: int, leader_log_start: int, isr: Iterable[int],
                  follower_log_starts: Mapping[int, int]) -> int:
    """min(log start) over the leader and the ISR followers; a follower not heard from is -1."""
    starts = [leader_log_start]
    starts += [follower_log_starts.get(r, UNKNOWN) for r in isr if r != leader_id]
    return min(starts)


class DeleteRecordsPurgatory:
    def __init__(self, max_pending: int = MAX_PENDING_DELETES) -> None:
        assert max_pending > 0
        self.max_pending = max_pending
        self._entries: list[_Entry] = []

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def full(self) -> bool:
        return len(self._entries) >= self.max_pending

    def add(self, token: Hashable, offset: int, now_ms: int, timeout_ms: int) -> None:
        assert not self.full, "check full first"
        self._entries.append(_Entry(token, offset, now_ms + max(0, timeout_ms)))

    def on_low_watermark(self, low_watermark: int) -> list[DeleteCompletion]:
        return self._take(lambda e: e.offset <= low_watermark, ErrorCode.NONE, low_watermark)

    def expire(self, now_ms: int, low_watermark: int) -> list[DeleteCompletion]:
        return self._take(lambda e: e.deadline_ms <= now_ms, ErrorCode.REQUEST_TIMED_OUT, low_watermark)

    def fail_all(self, error: int = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> list[DeleteCompletion]:
        return self._take(lambda e: True, error, UNKNOWN)

    def _take(self, done: Callable[[_Entry], bool], error: int, lw: int) -> list[DeleteCompletion]:
        if not self._entries:
            return []
        out = [DeleteCompletion(e.token, int(error), lw) for e in self._entries if done(e)]
        if out:
            self._entries = [e for e in self._entries if not done(e)]
        return out
