"""A partition leader's share-partitions and share sessions (KIP-932; Kafka's
SharePartitionManager), sans-IO: what ShareFetch and ShareAcknowledge do to them.  Not served
yet (issue 37): the shell that reads the log, loads and writes the share coordinator and runs
the lock timers is still to come.

One ``SharePartition`` per (group, topic id, partition) this broker leads and some member of the
group reads.  Its state comes from the share coordinator: ``to_load`` names the share-partitions
a request needs that are not here yet; the caller reads each (ReadShareGroupState, after
InitializeShareGroupState for a new one) and ``install`` s the answer.  What acknowledgements,
acquisitions and expired locks change is handed back by ``take_writes`` as
WriteShareGroupState's batches (ACQUIRED persists as AVAILABLE, so only settled records and the
start offset need writing before an acknowledgement is answered).

A ShareFetch (``fetch``) first applies its session rules (``ShareSessionCache``), then its
piggy-backed acknowledgements per partition, then acquires for the member from every partition
of its session, at most ``max_records`` in all, below each partition's readable end (the high
watermark, or the last stable offset for read_committed) that ``log_end`` gives.  Epoch 0
replacing a session and epoch -1 closing one release what the member held (Kafka does the same:
its records become AVAILABLE again for the other members, delivery counts kept).
``expire_locks`` releases the records whose acquisition locks passed; ``next_deadline_ms`` is
when to call it.  ``member_left`` releases a member's records and drops its session.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tierlog.protocol.errors import ErrorCode

from .share_partition import Acquired, SharePartition, SharePartitionConfig
from .share_session import FINAL_EPOCH, INITIAL_EPOCH, ShareSessionCache, TopicPartition
from .share_state_records import SharePartitionKey

__all__ = ["AckBatches", "FetchOutcome", "SharePartitionManager"]

AckBatches = Mapping[TopicPartition, list[tuple[int, int, list[int]]]]   # (topic id, partition) -> batches


@dataclass
class FetchOutcome:
    """A ShareFetch's or ShareAcknowledge's result: a top-level error, or per partition the
    acknowledgement's error and (fetch only) the acquired records."""
    error: ErrorCode = ErrorCode.NONE
    acknowledge_errors: dict[TopicPartition, ErrorCode] = field(default_factory=dict)
    acquired: dict[TopicPartition, list[Acquired]] = field(default_factory=dict)


class SharePartitionManager:
    def __init__(self, config: SharePartitionConfig, max_sessions: int):
        self.config = config
        self.sessions = ShareSessionCache(max_sessions)
        self._partitions: dict[SharePartitionKey, SharePartition] = {}

    # -- share-partition state ---------------------------------------------------------------------
    def get(self, group_id: str, tp: TopicPartition) -> SharePartition | None:
        return self._partitions.get(SharePartitionKey(group_id, *tp))

    def to_load(self, group_id: str, tps: Iterable[TopicPartition]) -> list[SharePartitionKey]:
        """The share-partitions of ``tps`` not here yet, in order, each once."""
        keys = dict.fromkeys(SharePartitionKey(group_id, *tp) for tp in tps)
        return [k for k in keys if k not in self._partitions]

    def install(self, key: SharePartitionKey, state: Mapping[str, Any], leader_epoch: int,
                config: SharePartitionConfig | None = None) -> SharePartition:
        """The share-partition ReadShareGroupState's answer ({StateEpoch, StartOffset, StateBatches})
        describes, led at ``leader_epoch``, with ``config`` (its group's limits; default: the node's)."""
        snapshot = {"StateEpoch": state["StateEpoch"], "LeaderEpoch": leader_epoch,
                    "StartOffset": state["StartOffset"], "StateBatches": state["StateBatches"]}
        part = self._partitions[key] = SharePartition.from_persisted(config or self.config, snapshot)
        return part

    def drop(self, key: SharePartitionKey) -> None:
        """Forget one share-partition (its leader epoch moved, or the coordinator fenced its writes)."""
        self._partitions.pop(key, None)

    def unload(self, tp: TopicPartition) -> None:
        """Leadership of ``tp`` lost: forget its share-partitions of every group (the new leader
        reads what was written; what was acquired here is redelivered there)."""
        for key in [k for k in self._partitions if (k.topic_id, k.partition) == tp]:
            del self._partitions[key]

    def take_write(self, key: SharePartitionKey) -> tuple[int, dict[str, Any]] | None:
        """(state epoch, ShareUpdateValue) of what changed in ``key``'s share-partition since the last take."""
        part = self._partitions.get(key)
        update = part.take_update() if part is not None else None
        return (part.state_epoch, update) if part is not None and update is not None else None

    def share_keys(self) -> list[SharePartitionKey]:
        return list(self._partitions)

    def take_writes(self) -> list[tuple[SharePartitionKey, int, dict[str, Any]]]:
        """(key, state epoch, ShareUpdateValue) of every share-partition changed since the last call."""
        writes = []
        for key, part in self._partitions.items():
            update = part.take_update()
            if update is not None:
                writes.append((key, part.state_epoch, update))
        return writes

    # -- requests ----------------------------------------------------------------------------------------
    def fetch(self, group_id: str, member_id: str, epoch: int, requested: Iterable[TopicPartition],
              forgotten: Iterable[TopicPartition], acks: AckBatches, log_end: Callable[[TopicPartition], int],
              max_records: int, now_ms: int) -> FetchOutcome:
        """A ShareFetch: session, piggy-backed acknowledgements, then acquisition (none at epoch -1)."""
        previous = self.sessions.get(group_id, member_id) if epoch == INITIAL_EPOCH else None
        error, session = self.sessions.fetch(group_id, member_id, epoch, requested, forgotten, bool(acks))
        if session is None:
            return FetchOutcome(error)
        if previous is not None:            # replaced: what the old session acquired goes back
            self._release(group_id, member_id, previous.partitions)
        outcome = FetchOutcome(acknowledge_errors=self._acknowledge(group_id, member_id, acks, now_ms))
        if epoch == FINAL_EPOCH:
            self._release(group_id, member_id, session.partitions)
            return outcome
        outcome.acquired = self.acquire(group_id, member_id, log_end, max_records, now_ms)
        return outcome

    def acquire(self, group_id: str, member_id: str, log_end: Callable[[TopicPartition], int], max_records: int,
                now_ms: int) -> dict[TopicPartition, list[Acquired]]:
        """Acquire for the member from every partition of its session, at most ``max_records`` in
        all, below each partition's ``log_end`` (a long-polled ShareFetch tries again with this)."""
        session = self.sessions.get(group_id, member_id)
        acquired: dict[TopicPartition, list[Acquired]] = {}
        remaining = max_records
        for tp in sorted(session.partitions) if session is not None else ():
            part = self.get(group_id, tp)
            if part is None or remaining <= 0:
                continue
            runs = part.acquire(member_id, log_end(tp), remaining, now_ms)
            remaining -= sum(r.last_offset - r.first_offset + 1 for r in runs)
            if runs:
                acquired[tp] = runs
        return acquired

    def acknowledge(self, group_id: str, member_id: str, epoch: int, acks: AckBatches, now_ms: int) -> FetchOutcome:
        """A ShareAcknowledge: session (never opened here), then the acknowledgements."""
        error, session = self.sessions.acknowledge(group_id, member_id, epoch)
        if session is None:
            return FetchOutcome(error)
        outcome = FetchOutcome(acknowledge_errors=self._acknowledge(group_id, member_id, acks, now_ms))
        if epoch == FINAL_EPOCH:
            self._release(group_id, member_id, session.partitions)
        return outcome

    def _acknowledge(self, group_id: str, member_id: str, acks: AckBatches, now_ms: int) -> dict[TopicPartition, ErrorCode]:
        errors = {}
        for tp, batches in acks.items():
            part = self.get(group_id, tp)
            errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if part is None \
                else part.acknowledge(member_id, batches, now_ms)
        return errors

    # -- releasing without acknowledgements ------------------------------------------------------------------
    def next_deadline_ms(self) -> int | None:
        """When the earliest acquisition lock here expires (None: nothing is acquired)."""
        return min((d for p in self._partitions.values() if (d := p.next_deadline_ms()) is not None), default=None)

    def expire_locks(self, now_ms: int) -> dict[SharePartitionKey, list[int]]:
        """Release what each share-partition holds past its lock: the offsets released, by share-partition."""
        released = {key: part.expire_locks(now_ms) for key, part in self._partitions.items()}
        return {key: offsets for key, offsets in released.items() if offsets}

    def member_left(self, group_id: str, member_id: str) -> None:
        """``member_id`` left ``group_id`` (or was fenced): its session goes, its records come back."""
        self.sessions.remove_member(group_id, member_id)
        for key, part in self._partitions.items():
            if key.group == group_id:
                part.member_left(member_id)

    def _release(self, group_id: str, member_id: str, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            part = self.get(group_id, tp)
            if part is not None:
                part.member_left(member_id)
