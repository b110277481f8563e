"""The in-flight state of one topic partition read by one share group (KIP-932's share-partition;
Kafka's ``SharePartition``), sans-IO: every call takes ``now_ms`` and returns what changed.

Offsets below ``start_offset`` (Kafka's SPSO) are done: acknowledged or archived.  Offsets in
[``start_offset``, ``end_offset``) (SPEO, exclusive) are in flight, each in one state:

    AVAILABLE    -> ACQUIRED      acquire: handed to one member under an acquisition lock of
                                  group.share.record.lock.duration.ms; delivery count + 1
    ACQUIRED     -> ACKNOWLEDGED  accept by the member holding it
    ACQUIRED     -> AVAILABLE     release by its member, its lock expiring, or its member leaving,
                                  while the delivery count is below group.share.delivery.count.limit
    ACQUIRED     -> ARCHIVED      reject by its member (or gap: not a record); a release, lock
                                  expiry or leave at the delivery count limit
    ACQUIRED     -> ACQUIRED      renew by its member (KIP-1222): a fresh lock, same delivery count

ACKNOWLEDGED and ARCHIVED are final; once they form a prefix of the in-flight range,
``start_offset`` moves past them.  Offsets at ``end_offset`` and above were never acquired:
acquiring takes AVAILABLE in-flight offsets first (redeliveries, lowest first), then new ones from
``end_offset`` up to the log's end the caller gives (the high watermark, or the last stable offset
for read_committed), while the in-flight range stays within
group.share.partition.max.record.locks.  Any other transition is refused (INVALID_RECORD_STATE)
and a refused acknowledgement changes nothing.

Persisted form (Kafka's ``__share_group_state`` values, KIP-932): ``snapshot`` is a
ShareSnapshotValue, ``take_update`` the ShareUpdateValue of what changed since the last one, and
``from_persisted`` rebuilds the partition from a snapshot and the updates after it.  ACQUIRED is
never persisted (Kafka's rule): a reload makes those offsets AVAILABLE with their delivery count,
so an acquired record is redelivered and a record is never delivered more often than counted
(one found AVAILABLE at the delivery count limit is archived instead of acquired).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from tierlog.protocol.errors import ErrorCode

__all__ = ["DELIVERY_LIMIT", "REJECTED", "AcknowledgeType", "Acquired", "RecordState", "SharePartition",
           "SharePartitionConfig"]


class RecordState(IntEnum):
    """A record's delivery state; the persisted codes are Kafka's (0, 2, 4)."""
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    """ShareFetch / ShareAcknowledge AcknowledgeTypes (0 gap, 4 renew from version 2)."""
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_FINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
REJECTED, DELIVERY_LIMIT = "rejected", "delivery count limit"      # why a record was archived as failed


@dataclass(frozen=True)
class SharePartitionConfig:
    record_lock_duration_ms: int = 30000        # group.share.record.lock.duration.ms
    delivery_count_limit: int = 5               # group.share.delivery.count.limit
    max_record_locks: int = 2000                # group.share.partition.max.record.locks

    def __post_init__(self) -> None:
        assert self.record_lock_duration_ms > 0 and self.delivery_count_limit > 0 and self.max_record_locks > 0, \
            "share-partition limits are positive"


@dataclass
class _InFlight:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member_id: str | None = None                # the member holding it (ACQUIRED only)
    lock_deadline_ms: int | None = None         # when its acquisition lock expires (ACQUIRED only)


@dataclass(frozen=True)
class Acquired:
    """ShareFetch's AcquiredRecords: consecutive offsets handed to one member, one delivery count."""
    first_offset: int
    last_offset: int                            # inclusive
    delivery_count: int


@dataclass
class SharePartition:
    config: SharePartitionConfig
    start_offset: int = 0
    state_epoch: int = 0
    leader_epoch: int = 0
    _records: dict[int, _InFlight] = field(default_factory=dict)    # offset -> its in-flight state
    _end_offset: int | None = None              # exclusive; None: start_offset (nothing in flight)
    _dirty: set[int] = field(default_factory=set)                    # offsets changed since the last update
    _start_moved: bool = False
    _archived: list[tuple[int, int, str]] = field(default_factory=list)     # (offset, delivery count, reason)

    @property
    def end_offset(self) -> int:
        return self.start_offset if self._end_offset is None else self._end_offset

    # -- reading the state ---------------------------------------------------------------------
    def state_of(self, offset: int) -> tuple[RecordState, int]:
        """(state, delivery count) of ``offset``: done below the start, AVAILABLE (never delivered) past the end."""
        if offset < self.start_offset:
            return RecordState.ACKNOWLEDGED, 0      # done (acknowledged or archived: no longer told apart)
        rec = self._records.get(offset)
        return (rec.state, rec.delivery_count) if rec is not None else (RecordState.AVAILABLE, 0)

    def holder(self, offset: int) -> str | None:
        rec = self._records.get(offset)
        return rec.member_id if rec is not None else None

    def in_flight(self) -> int:
        """Offsets in flight: the range acquisition locks are bounded on."""
        return self.end_offset - self.start_offset

    def next_fetch_offset(self) -> int:
        """Where the next acquisition starts: the lowest AVAILABLE in-flight offset, else the end offset."""
        return min((o for o, r in self._records.items() if r.state is RecordState.AVAILABLE), default=self.end_offset)

    def next_deadline_ms(self) -> int | None:
        """When the earliest acquisition lock expires (None: no record is acquired)."""
        return min((r.lock_deadline_ms for r in self._records.values() if r.lock_deadline_ms is not None), default=None)

    # -- acquiring -----------------------------------------------------------------------------------
    def acquire(self, member_id: str, log_end_offset: int, max_records: int, now_ms: int) -> list[Acquired]:
        """Hand at most ``max_records`` records below ``log_end_offset`` (exclusive) to ``member_id``:
        AVAILABLE in-flight ones first, then new ones, within max.record.locks of in-flight offsets."""
        taken: list[int] = []
        for offset in sorted(o for o, r in self._records.items() if r.state is RecordState.AVAILABLE):
            if len(taken) >= max_records or offset >= log_end_offset:
                break
            if self._records[offset].delivery_count >= self.config.delivery_count_limit:
                self._archive(offset, DELIVERY_LIMIT)       # found at its last delivery when reloaded
                continue
            taken.append(offset)
        self._advance_start()
        end = self.end_offset
        limit = min(log_end_offset, self.start_offset + self.config.max_record_locks)
        while len(taken) < max_records and end < limit:
            self._records[end] = _InFlight()
            taken.append(end)
            end += 1
        if end != self.end_offset:
            self._end_offset = end
        deadline = now_ms + self.config.record_lock_duration_ms
        for offset in taken:
            rec = self._records[offset]
            rec.state, rec.member_id, rec.lock_deadline_ms = RecordState.ACQUIRED, member_id, deadline
            rec.delivery_count += 1
            self._dirty.add(offset)
        return _runs(taken, self._records)

    # -- acknowledging --------------------------------------------------------------------------------
    def acknowledge(self, member_id: str, batches: Iterable[tuple[int, int, list[int]]], now_ms: int) -> ErrorCode:
        """ShareAcknowledge's (or ShareFetch's) AcknowledgementBatches of one partition: (first
        offset, last offset inclusive, one type for the whole batch or one per offset).  Every
        offset must be ACQUIRED by ``member_id``; else INVALID_RECORD_STATE and nothing changes
        (INVALID_REQUEST for a malformed batch)."""
        plan: list[tuple[int, AcknowledgeType]] = []
        for first, last, types in batches:
            if last < first or len(types) not in (1, last - first + 1) \
                    or any(t not in AcknowledgeType._value2member_map_ for t in types):
                return ErrorCode.INVALID_REQUEST
            for i, offset in enumerate(range(first, last + 1)):
                plan.append((offset, AcknowledgeType(types[0] if len(types) == 1 else types[i])))
        for offset, _ack in plan:
            rec = self._records.get(offset)
            if rec is None or rec.state is not RecordState.ACQUIRED or rec.member_id != member_id:
                return ErrorCode.INVALID_RECORD_STATE
        for offset, ack in plan:
            self._apply(offset, ack, now_ms)
        self._advance_start()
        return ErrorCode.NONE

    def _apply(self, offset: int, ack: AcknowledgeType, now_ms: int) -> None:
        rec = self._records[offset]
        if ack is AcknowledgeType.RENEW:
            rec.lock_deadline_ms = now_ms + self.config.record_lock_duration_ms
            return
        if ack is AcknowledgeType.ACCEPT:
            self._settle(offset, RecordState.ACKNOWLEDGED)
        elif ack is AcknowledgeType.RELEASE:
            self._release(offset)
        elif ack is AcknowledgeType.REJECT:
            self._archive(offset, REJECTED)
        else:                                   # GAP: no record there
            self._settle(offset, RecordState.ARCHIVED)

    def _settle(self, offset: int, state: RecordState) -> None:
        rec = self._records[offset]
        rec.state, rec.member_id, rec.lock_deadline_ms = state, None, None
        self._dirty.add(offset)

    def _release(self, offset: int) -> None:
        """Back to AVAILABLE, or ARCHIVED once delivered group.share.delivery.count.limit times."""
        if self._records[offset].delivery_count >= self.config.delivery_count_limit:
            self._archive(offset, DELIVERY_LIMIT)
        else:
            self._settle(offset, RecordState.AVAILABLE)

    def _archive(self, offset: int, reason: str) -> None:
        """ARCHIVED as a record that failed (KIP-1191: its group's dead-letter topic gets a copy)."""
        self._archived.append((offset, self._records[offset].delivery_count, reason))
        self._settle(offset, RecordState.ARCHIVED)

    def take_archived(self) -> list[tuple[int, int, str]]:
        """(offset, delivery count, reason) of the records archived as failed since the last call:
        rejected by their member, or past group.share.delivery.count.limit (not gaps)."""
        archived, self._archived = self._archived, []
        return archived

    def _advance_start(self) -> None:
        start = self.start_offset
        while start < self.end_offset and self._records[start].state in _FINAL:
            del self._records[start]
            self._dirty.discard(start)
            start += 1
        if start != self.start_offset:
            self.start_offset, self._start_moved = start, True
            if start == self.end_offset:
                self._end_offset = None

    # -- releasing without an acknowledgement -------------------------------------------------------------
    def expire_locks(self, now_ms: int) -> list[int]:
        """Release every record whose acquisition lock expired by ``now_ms``: the offsets released."""
        expired = sorted(o for o, r in self._records.items()
                         if r.lock_deadline_ms is not None and r.lock_deadline_ms <= now_ms)
        return self._release_all(expired)

    def member_left(self, member_id: str) -> list[int]:
        """Release every record ``member_id`` holds (it left the group or was fenced)."""
        return self._release_all(sorted(o for o, r in self._records.items() if r.member_id == member_id))

    def _release_all(self, offsets: list[int]) -> list[int]:
        for offset in offsets:
            self._release(offset)
        self._advance_start()
        return offsets

    # -- persisted form -------------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The whole state as a ShareSnapshotValue (what is ACQUIRED persists as AVAILABLE); the
        changes so far count as persisted."""
        self._dirty.clear()
        self._start_moved = False
        return {"SnapshotEpoch": 0, "StateEpoch": self.state_epoch, "LeaderEpoch": self.leader_epoch,
                "StartOffset": self.start_offset, "StateBatches": self._state_batches(sorted(self._records))}

    def take_update(self) -> dict[str, Any] | None:
        """The ShareUpdateValue of what changed since the last snapshot or update (None: nothing)."""
        if not self._dirty and not self._start_moved:
            return None
        changed = sorted(self._dirty)
        update = {"SnapshotEpoch": 0, "LeaderEpoch": self.leader_epoch,
                  "StartOffset": self.start_offset if self._start_moved else -1,
                  "StateBatches": self._state_batches(changed)}
        self._dirty.clear()
        self._start_moved = False
        return update

    def _state_batches(self, offsets: list[int]) -> list[dict[str, int]]:
        persisted = [(o, _persisted_state(self._records[o].state), self._records[o].delivery_count) for o in offsets]
        batches: list[dict[str, int]] = []
        for offset, state, count in persisted:
            last = batches[-1] if batches else None
            if last is not None and last["LastOffset"] == offset - 1 and last["DeliveryState"] == state \
                    and last["DeliveryCount"] == count:
                last["LastOffset"] = offset
            else:
                batches.append({"FirstOffset": offset, "LastOffset": offset, "DeliveryState": state,
                                "DeliveryCount": count})
        return batches

    @classmethod
    def from_persisted(cls, config: SharePartitionConfig, snapshot: dict[str, Any],
                       updates: Iterable[dict[str, Any]] = ()) -> SharePartition:
        """The partition a ShareSnapshotValue and the ShareUpdateValues written after it describe."""
        part = cls(config, start_offset=snapshot["StartOffset"], state_epoch=snapshot["StateEpoch"],
                   leader_epoch=snapshot["LeaderEpoch"])
        part._load_batches(snapshot["StateBatches"])
        for update in updates:
            part.leader_epoch = update["LeaderEpoch"]
            if update["StartOffset"] >= 0:
                part.start_offset = max(part.start_offset, update["StartOffset"])
            part._load_batches(update["StateBatches"])
        part._records = {o: r for o, r in part._records.items() if o >= part.start_offset}
        end = max(part._records, default=part.start_offset - 1) + 1
        for offset in range(part.start_offset, end):        # in no batch: never delivered
            part._records.setdefault(offset, _InFlight())
        part._end_offset = end if end > part.start_offset else None
        part._advance_start()
        part._dirty.clear()
        part._start_moved = False
        return part

    def _load_batches(self, batches: Iterable[dict[str, Any]]) -> None:
        for b in batches:
            state = RecordState(b["DeliveryState"])
            assert state is not RecordState.ACQUIRED, "ACQUIRED is never persisted"
            for offset in range(max(b["FirstOffset"], self.start_offset), b["LastOffset"] + 1):   # below: done
                self._records[offset] = _InFlight(state, b["DeliveryCount"])


def _persisted_state(state: RecordState) -> int:
    return RecordState.AVAILABLE if state is RecordState.ACQUIRED else state


def _runs(offsets: list[int], records: dict[int, _InFlight]) -> list[Acquired]:
    """Consecutive offsets with one delivery count as one Acquired each."""
    runs: list[Acquired] = []
    for offset in sorted(offsets):
        count = records[offset].delivery_count
        last = runs[-1] if runs else None
        if last is not None and last.last_offset == offset - 1 and last.delivery_count == count:
            runs[-1] = Acquired(last.first_offset, offset, count)
        else:
            runs.append(Acquired(offset, offset, count))
    return runs
