"""Committed offsets of one coordinator partition's groups: OffsetCommit, OffsetFetch,
OffsetDelete and expiry (offsets.retention.minutes).

An offset is committed only once its record is committed in ``__consumer_offsets``:
``commit`` returns the records and the values to ``apply`` afterwards, and
OffsetFetch reads applied offsets only.  Expiry (Kafka's rule for classic groups):
the offsets of a group without members expire when
max(commit timestamp, time the group became empty) + retention <= now (an
explicit v2-v4 expire timestamp wins); offsets of groups with members stay.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tierlog.protocol.errors import ErrorCode

from .log_records import OffsetKey, offset_commit_record

__all__ = ["CommittedOffset", "OffsetStore"]


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> CommittedOffset:
        return cls(value["offset"], value.get("leaderEpoch", -1), value["metadata"], value["commitTimestamp"],
                   value.get("expireTimestamp", -1))

    def to_value(self) -> dict[str, Any]:
        return {"offset": self.offset, "leaderEpoch": self.leader_epoch, "metadata": self.metadata,
                "commitTimestamp": self.commit_timestamp, "expireTimestamp": self.expire_timestamp}


class OffsetStore:
    def __init__(self) -> None:
        self._groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}

    def apply(self, key: OffsetKey, value: dict[str, Any] | None) -> None:
        """A committed record (or its tombstone) takes effect."""
        offsets = self._groups.setdefault(key.group, {})
        if value is None:
            offsets.pop((key.topic, key.partition), None)
        else:
            offsets[(key.topic, key.partition)] = CommittedOffset.from_value(value)
        if not offsets:
            del self._groups[key.group]

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._groups.get(group_id))

    def group_ids(self) -> list[str]:
        return list(self._groups)

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._groups.get(group_id, {}).get((topic, partition))

    def all(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        return dict(self._groups.get(group_id, {}))

    def commit_records(self, group_id: str, topics: list[dict[str, Any]], now_ms: int, expire_ms: int,
                       metadata_max_bytes: int) -> tuple[
            list[tuple[bytes, bytes | None]], list[tuple[OffsetKey, dict[str, Any] | None]], list[dict[str, Any]]]:
        """(records, to apply once committed, response topics) for an accepted OffsetCommit."""
        records: list[tuple[bytes, bytes | None]] = []
        applies: list[tuple[OffsetKey, dict[str, Any] | None]] = []
        answer: list[dict[str, Any]] = []
        for t in topics:
            parts = []
            for p in t["Partitions"]:
                meta = p.get("CommittedMetadata") or ""
                if len(meta.encode()) > metadata_max_bytes:
                    parts.append({"PartitionIndex": p["PartitionIndex"],
                                  "ErrorCode": ErrorCode.OFFSET_METADATA_TOO_LARGE})
                    continue
                key = OffsetKey(group_id, t["Name"], p["PartitionIndex"])
                value = CommittedOffset(p["CommittedOffset"], p.get("CommittedLeaderEpoch", -1), meta, now_ms,
                                        expire_ms).to_value()
                records.append(offset_commit_record(key, value))
                applies.append((key, value))
                parts.append({"PartitionIndex": p["PartitionIndex"], "ErrorCode": ErrorCode.NONE})
            answer.append({"Name": t["Name"], "Partitions": parts})
        return records, applies, answer

    def fetch(self, group_id: str, topics: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        """OffsetFetch answer topics; ``topics`` None: every committed offset of the group."""
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for (topic, partition) in sorted(self._groups.get(group_id, {})):
                by_topic.setdefault(topic, []).append(partition)
            topics = [{"Name": n, "PartitionIndexes": ps} for n, ps in by_topic.items()]
        return [{"Name": t["Name"], "Partitions": [self._fetch_one(group_id, t["Name"], p)
                                                    for p in t["PartitionIndexes"]]} for t in topics]

    def _fetch_one(self, group_id: str, topic: str, partition: int) -> dict[str, Any]:
        o = self.get(group_id, topic, partition)
        if o is None:
            return {"PartitionIndex": partition, "CommittedOffset": -1, "CommittedLeaderEpoch": -1,
                    "Metadata": "", "ErrorCode": ErrorCode.NONE}
        return {"PartitionIndex": partition, "CommittedOffset": o.offset, "CommittedLeaderEpoch": o.leader_epoch,
                "Metadata": o.metadata, "ErrorCode": ErrorCode.NONE}

    def tombstones(self, group_id: str, keys: Iterable[tuple[str, int]] | None = None
                   ) -> list[tuple[OffsetKey, tuple[bytes, bytes | None]]]:
        """(key, record) tombstones for ``keys`` ((topic, partition)s; None: all) of the group."""
        offsets = self._groups.get(group_id, {})
        chosen = list(offsets) if keys is None else [k for k in keys if k in offsets]
        return [(OffsetKey(group_id, t, p), offset_commit_record(OffsetKey(group_id, t, p), None)) for t, p in chosen]

    def expired(self, group_id: str, empty_since_ms: int, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
        """The (topic, partition)s of an empty group whose offsets have expired."""
        out = []
        for key, o in self._groups.get(group_id, {}).items():
            due = o.expire_timestamp if o.expire_timestamp != -1 else max(o.commit_timestamp, empty_since_ms) + retention_ms
            if due <= now_ms:
                out.append(key)
        return out
