"""The share coordinator's rules over one ``__share_group_state`` partition (KIP-932; Kafka's
ShareCoordinatorShard), sans-IO: the persisted state of every share-partition whose key hashes
to it, and what each request writes.

A share-partition's state is its latest ShareSnapshot and the ShareUpdates written after it;
``state`` merges them (through ``SharePartition.from_persisted``, the same rule the partition
leader reloads with).  Requests, named after Kafka's inter-broker APIs:

- InitializeShareGroupState: a fresh snapshot at the given state epoch and start offset, no
  batches; FENCED_STATE_EPOCH when the stored state epoch is newer.
- ReadShareGroupState: the merged state; FENCED_LEADER_EPOCH when the reader's leader epoch is
  older than the stored one; a newer one is recorded (a ShareUpdate without batches), so the
  leader it replaced can no longer write.
- WriteShareGroupState: the leader's changes (a ShareUpdateValue's batches and start offset);
  FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH when the writer's epochs are older.  Written as a
  ShareUpdate, or as a merged ShareSnapshot once ``updates_per_snapshot`` updates follow the
  last snapshot (Kafka's share.coordinator.snapshot.update.records.per.snapshot), which bounds
  both the load and the merge.
- ReadShareGroupStateSummary: state epoch, leader epoch, start offset.
- DeleteShareGroupState: tombstones of both keys.

Pruning (Kafka's ShareCoordinatorShard.lastRedundantOffset): each share-partition remembers
the log offset of its latest ShareSnapshot; a reload needs nothing of a key before it, nor
anything of a deleted key (its tombstone ends it), so ``prune_offset`` -- the least of those
offsets, or the log end when no share-partition is stored -- may become the log start once every
record applied so far is committed.  Records this shard writes get a lower bound of their offset
(``log_end_offset``, the partition's log end the coordinator sets before each request, counted on
per record), so the prune offset is never past a record a reload would still need.

A share-partition never initialized answers UNKNOWN_TOPIC_OR_PARTITION to everything but
Initialize.  Every request returns (error, answer, records); the records are applied here at
once (``replay``, as when loading) and must be written before the answer is given.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tierlog.protocol.errors import ErrorCode

from .share_partition import RecordState, SharePartition, SharePartitionConfig
from .share_state_records import SHARE_SNAPSHOT, SHARE_UPDATE, SharePartitionKey, decode_key, decode_value, encode_record

__all__ = ["DEFAULT_UPDATES_PER_SNAPSHOT", "MAX_IN_FLIGHT_OFFSETS", "ShareStateShard"]

DEFAULT_UPDATES_PER_SNAPSHOT = 500
# the in-flight offsets a share-partition's state may span past its start: its leader keeps at most
# group.share.partition.max.record.locks (at most 10000 in Kafka) in flight
MAX_IN_FLIGHT_OFFSETS = 10_000
NO_EPOCH = -1
Records = list[tuple[bytes, bytes | None]]
_PERSISTED_STATES = (RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
_MERGE_CONFIG = SharePartitionConfig()      # merging persisted states uses no limit of the config


@dataclass
class _Stored:
    snapshot: dict[str, Any]
    snapshot_offset: int                    # its log offset (or a lower bound of it)
    updates: list[dict[str, Any]] = field(default_factory=list)

    @property
    def start_offset(self) -> int:
        return max([int(self.snapshot["StartOffset"]), *(int(u["StartOffset"]) for u in self.updates)])

    @property
    def leader_epoch(self) -> int:
        return int(self.updates[-1]["LeaderEpoch"] if self.updates else self.snapshot["LeaderEpoch"])

    def merged(self) -> SharePartition:
        return SharePartition.from_persisted(_MERGE_CONFIG, self.snapshot, self.updates)


class ShareStateShard:
    def __init__(self, updates_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT):
        assert updates_per_snapshot > 0, "a snapshot follows at most that many updates"
        self.updates_per_snapshot = updates_per_snapshot
        self._states: dict[SharePartitionKey, _Stored] = {}
        self.log_end_offset = 0             # the next record's offset, or a lower bound of it


    def __len__(self) -> int:
        return len(self._states)

    # -- the log -------------------------------------------------------------------------------------
    def replay(self, key: bytes, value: bytes | None, offset: int) -> None:
        """Apply the record at ``offset`` of the partition's log (loading, or a write of this shard's)."""
        self.log_end_offset = offset + 1
        decoded = decode_key(key)
        if decoded is None:
            return
        type_, spk = decoded
        fields = decode_value(type_, value)
        if fields is None:
            self._states.pop(spk, None)
        elif type_ == SHARE_SNAPSHOT:
            self._states[spk] = _Stored(fields, offset)
        elif spk in self._states:       # an update without its snapshot (compacted away with a delete)
            self._states[spk].updates.append(fields)

    def _apply(self, records: Records) -> Records:
        for key, value in records:
            self.replay(key, value, self.log_end_offset)
        return records

    def prune_offset(self) -> int:
        """Below this offset the log holds nothing a reload needs (once what was applied is committed)."""
        return min((s.snapshot_offset for s in self._states.values()), default=self.log_end_offset)

    # -- requests ----------------------------------------------------------------------------------
    def initialize(self, spk: SharePartitionKey, state_epoch: int, start_offset: int,
                   now_ms: int) -> tuple[ErrorCode, Records]:
        stored = self._states.get(spk)
        if stored is not None and stored.snapshot["StateEpoch"] > state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH, []
        epoch = stored.snapshot["SnapshotEpoch"] + 1 if stored is not None else 0
        snapshot = _snapshot(epoch, state_epoch, NO_EPOCH, max(start_offset, 0), [], now_ms, now_ms)
        return ErrorCode.NONE, self._apply([encode_record(SHARE_SNAPSHOT, spk, snapshot)])

    def read(self, spk: SharePartitionKey, leader_epoch: int) -> tuple[ErrorCode, dict[str, Any] | None, Records]:
        """(error, {StateEpoch, StartOffset, StateBatches}, records)."""
        stored = self._states.get(spk)
        if stored is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, []
        if leader_epoch != NO_EPOCH and leader_epoch < stored.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, None, []
        records: Records = []
        if leader_epoch > stored.leader_epoch:
            update = {"SnapshotEpoch": stored.snapshot["SnapshotEpoch"], "LeaderEpoch": leader_epoch,
                      "StartOffset": -1, "StateBatches": []}
            records = self._apply([encode_record(SHARE_UPDATE, spk, update)])
        merged = stored.merged().snapshot()
        answer = {"StateEpoch": merged["StateEpoch"], "StartOffset": merged["StartOffset"],
                  "StateBatches": merged["StateBatches"]}
        return ErrorCode.NONE, answer, records

    def write(self, spk: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
              batches: list[dict[str, Any]], now_ms: int) -> tuple[ErrorCode, Records]:
        stored = self._states.get(spk)
        if stored is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []
        start = max(start_offset, stored.start_offset)
        if not all(_valid_batch(b, start) for b in batches):
            return ErrorCode.INVALID_REQUEST, []
        if leader_epoch != NO_EPOCH and leader_epoch < stored.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, []
        if state_epoch < stored.snapshot["StateEpoch"]:
            return ErrorCode.FENCED_STATE_EPOCH, []
        epoch = max(leader_epoch, stored.leader_epoch)
        update = {"SnapshotEpoch": stored.snapshot["SnapshotEpoch"], "LeaderEpoch": epoch,
                  "StartOffset": start_offset, "StateBatches": batches}
        if len(stored.updates) + 1 < self.updates_per_snapshot:
            return ErrorCode.NONE, self._apply([encode_record(SHARE_UPDATE, spk, update)])
        merged = SharePartition.from_persisted(_MERGE_CONFIG, stored.snapshot, [*stored.updates, update]).snapshot()
        snapshot = _snapshot(stored.snapshot["SnapshotEpoch"] + 1, stored.snapshot["StateEpoch"], epoch,
                             merged["StartOffset"], merged["StateBatches"],
                             stored.snapshot.get("CreateTimestamp", now_ms), now_ms)
        return ErrorCode.NONE, self._apply([encode_record(SHARE_SNAPSHOT, spk, snapshot)])

    def read_summary(self, spk: SharePartitionKey) -> tuple[ErrorCode, dict[str, Any] | None]:
        """(error, {StateEpoch, LeaderEpoch, StartOffset})."""
        stored = self._states.get(spk)
        if stored is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        return ErrorCode.NONE, {"StateEpoch": stored.snapshot["StateEpoch"], "LeaderEpoch": stored.leader_epoch,
                                "StartOffset": stored.start_offset}

    def delete(self, spk: SharePartitionKey) -> tuple[ErrorCode, Records]:
        if spk not in self._states:
            return ErrorCode.NONE, []       # Kafka: deleting a state that is not there succeeds
        return ErrorCode.NONE, self._apply([encode_record(SHARE_SNAPSHOT, spk, None),
                                            encode_record(SHARE_UPDATE, spk, None)])


def _valid_batch(batch: dict[str, Any], start_offset: int) -> bool:
    """A persisted StateBatch: an offset range within MAX_IN_FLIGHT_OFFSETS of the start, a
    persisted state (never ACQUIRED), a count."""
    return 0 <= batch["FirstOffset"] <= batch["LastOffset"] < start_offset + MAX_IN_FLIGHT_OFFSETS \
        and batch["DeliveryCount"] >= 0 and batch["DeliveryState"] in _PERSISTED_STATES


def _snapshot(snapshot_epoch: int, state_epoch: int, leader_epoch: int, start_offset: int,
              batches: list[dict[str, Any]], created_ms: int, written_ms: int) -> dict[str, Any]:
    return {"SnapshotEpoch": snapshot_epoch, "StateEpoch": state_epoch, "LeaderEpoch": leader_epoch,
            "StartOffset": start_offset, "CreateTimestamp": created_ms, "WriteTimestamp": written_ms,
            "StateBatches": batches}
