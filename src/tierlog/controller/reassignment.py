"""Partition reassignment on the controller (KIP-455): the pure rules.

AlterPartitionReassignments (45, v0-1) and ListPartitionReassignments (46, v0)
as KRaft's ReplicationControlManager, PartitionReassignmentReplicas,
PartitionReassignmentRevert and PartitionChangeBuilder behave.  A partition is
*reassigning* while its AddingReplicas or RemovingReplicas is non-empty.

AlterPartitionReassignments, per partition, in Kafka's order:

- unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; a partition named
  twice in one request -> INVALID_REQUEST (ours: Kafka would write two records
  computed from the same state);
- Replicas null cancels (below);
- a target that is empty, repeats a broker or names an unregistered broker ->
  INVALID_REPLICA_ASSIGNMENT;
- v1 (KIP-860) AllowReplicationFactorChange=false and a target whose length
  differs from the replication factor the partition has or is heading for
  (replicas - removing) -> INVALID_REPLICATION_FACTOR.

Start, from the *current* replica list.  During a reassignment that list
holds the adding replicas too, so a new reassignment replaces the ongoing one
and starts from there (KRaft; ZooKeeper-era Kafka started from the original
replicas)::

    removing = sorted(current - target)      adding = sorted(target - current)
    replicas = target + removing             ISR unchanged

Unlike KRaft, which keeps the old Adding/Removing lists when the new ones are
empty, a new reassignment always sets both.

Completion (:func:`maybe_complete`): a reassignment is complete once
``ISR - removing`` is non-empty and holds every member of
``replicas - removing`` (the target): then replicas = the target, ISR =
ISR - removing, adding = removing = ().  It is checked when the reassignment
starts (nothing to add and the ISR already covers the target: done at once)
and on every AlterPartition (the leader's ISR expansion that brings in the
last adding replica completes it, ``partition_control``).

Cancel (Replicas null): NO_REASSIGNMENT_IN_PROGRESS when none; else back to
the original replicas (replicas - adding, in their order) with ISR = ISR -
adding.  If that leaves the ISR empty, the first original replica becomes the
ISR: an unclean election, allowed only with unclean.leader.election.enable
(else INVALID_REPLICA_ASSIGNMENT).

Every accepted change is one PartitionChangeRecord (:func:`build_change`, as
PartitionChangeBuilder): the leader stays if it is usable and in the new ISR,
else ``election.elect_leader`` picks the first valid replica of the new
replica list after the KIP-1303 eligibility sort (ANY election; UNCLEAN for a
cancel on a topic that allows it).  A replica list that loses a member bumps
the leader epoch even when the leader stays (Kafka's
triggerLeaderEpochBumpForReplicaReassignmentIfNeeded: the record names the
same leader); every record bumps the partition epoch (``metadata.delta``).
ELR and last known ELR keep only members of the new replica list.

ListPartitionReassignments: Topics null lists every reassigning partition
(a scan of every partition of the image: the image keeps no index of
reassigning partitions); else the named partitions of the named topics that
are reassigning (unknown topics and partitions are left out, as in Kafka).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tierlog.metadata.cluster_records import (
    NO_LEADER_CHANGE,
    MetadataRecord,
    PartitionChangeRecord,
    ReplicaLogCoverage,
)
from tierlog.metadata.image import MetadataImage, PartitionInfo, TopicInfo
from tierlog.metadata.leader_election import (
    Election,
    EligibilityThresholds,
    elect_leader,
)
from tierlog.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_partition_reassignments import (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
        ReassignablePartition,
        ReassignablePartitionResponse,
        ReassignableTopicResponse,
    )
    from tierlog.protocol.typed.list_partition_reassignments import (
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
        OngoingPartitionReassignment,
        OngoingTopicReassignment,
    )

__all__ = ["ElectionContext", "ReassignmentControlManager", "Target", "build_change", "is_reassigning",
           "maybe_complete", "start"]

RECOVERING = 1
UNCLEAN_ELECTION = "unclean.leader.election.enable"


class _Refuse(Exception):
    def __init__(self, error_code: int, message: str | None = None):
        super().__init__(message)
        self.error_code, self.message = error_code, message


@dataclass(frozen=True, slots=True)
class Target:
    """A partition's replica state to move to."""
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ElectionContext:
    usable: frozenset[int]                 # registered, unfenced, not shutting down
    thresholds: EligibilityThresholds      # KIP-1303
    now_ms: int
    unclean: bool = False                  # run an UNCLEAN election (a cancel on a topic allowing it)


def is_reassigning(part: PartitionInfo) -> bool:
    return bool(part.adding_replicas or part.removing_replicas)


def start(current: tuple[int, ...], target: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(replicas, adding, removing) of a reassignment of ``current`` to ``target``."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return tuple(target) + removing, adding, removing


def maybe_complete(t: Target) -> Target:
    """``t`` completed if its ISR covers the target (Kafka's maybeCompleteReassignment), else ``t``."""
    if not t.adding and not t.removing:
        return t
    isr = tuple(r for r in t.isr if r not in t.removing)
    replicas = tuple(r for r in t.replicas if r not in t.removing)
    if not isr or not replicas or not set(replicas) <= set(isr):
        return t
    return Target(replicas, isr)


def build_change(topic_id: bytes, part: PartitionInfo, target: Target, ctx: ElectionContext,
                 elr: tuple[int, ...] | None = None,
                 coverage: dict[int, ReplicaLogCoverage] | None = None) -> PartitionChangeRecord | None:
    """The record moving ``part`` to ``target`` (completed when it can be); None if nothing changes.

    ``coverage``: the KIP-1303 local log coverage to elect with (default: the partition's).
    """
    t = maybe_complete(target)
    keep = set(t.replicas)
    elr = tuple(r for r in (part.elr if elr is None else elr) if r in keep)
    lke = tuple(r for r in part.last_known_elr if r in keep)
    res = elect_leader(replicas=t.replicas, isr=t.isr, leader=part.leader, usable=ctx.usable,
                       election=Election.UNCLEAN if ctx.unclean else Election.ANY, elr=elr,
                       last_known_elr=lke, coverage=part.coverage() if coverage is None else coverage,
                       thresholds=ctx.thresholds,
                       now_ms=ctx.now_ms)
    if res.leader != part.leader:
        leader = res.leader
    elif not set(part.replicas) <= keep:
        leader = part.leader            # a replica leaves: bump the leader epoch
    else:
        leader = NO_LEADER_CHANGE
    record = PartitionChangeRecord(
        partition_id=part.partition, topic_id=topic_id, leader=leader,
        isr=_changed(res.isr, part.isr), replicas=_changed(t.replicas, part.replicas),
        adding_replicas=_changed(t.adding, part.adding_replicas),
        removing_replicas=_changed(t.removing, part.removing_replicas),
        eligible_leader_replicas=_changed(res.elr, part.elr),
        last_known_elr=_changed(res.last_known_elr, part.last_known_elr),
        leader_recovery_state=RECOVERING if res.unclean and part.leader_recovery_state != RECOVERING else -1)
    return None if record == PartitionChangeRecord(part.partition, topic_id) else record


def _changed(new: tuple[int, ...], old: tuple[int, ...]) -> tuple[int, ...] | None:
    return tuple(new) if tuple(new) != tuple(old) else None


class ReassignmentControlManager:
    """AlterPartitionReassignments (45) and ListPartitionReassignments (46)."""

    def __init__(self, unclean_default: bool, thresholds: Callable[[TopicInfo, MetadataImage], EligibilityThresholds]):
        self.unclean_default = unclean_default
        self.thresholds = thresholds        # (topic, image) -> KIP-1303 thresholds

    # -- AlterPartitionReassignments (45) -------------------------------------

    def alter(self, request: AlterPartitionReassignmentsRequest, version: int, image: MetadataImage,
              now_ms: int) -> tuple[Sequence[MetadataRecord], AlterPartitionReassignmentsResponse]:
        allow_rf_change = request.get("AllowReplicationFactorChange", True) if version >= 1 else True
        responses: list[ReassignableTopicResponse] = []
        records, seen = [], set()
        for t in request["Topics"]:
            parts: list[ReassignablePartitionResponse] = []
            for p in t["Partitions"]:
                key = (t["Name"], p["PartitionIndex"])
                try:
                    if key in seen:
                        raise _Refuse(ErrorCode.INVALID_REQUEST, "The partition appears twice in the request.")
                    seen.add(key)
                    record = self._alter_one(image, t["Name"], p, allow_rf_change, now_ms)
                except _Refuse as e:
                    parts.append(_result(p["PartitionIndex"], e.error_code, e.message))
                    continue
                if record is not None:
                    records.append(record)
                parts.append(_result(p["PartitionIndex"], 0, None))
            responses.append({"Name": t["Name"], "Partitions": parts})
        return records, {"ThrottleTimeMs": 0, "AllowReplicationFactorChange": allow_rf_change,
                         "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "Responses": responses}

    def _alter_one(self, image: MetadataImage, name: str, p: ReassignablePartition, allow_rf_change: bool,
                   now_ms: int) -> PartitionChangeRecord | None:
        topic = image.topics.get(name)
        index = p["PartitionIndex"]
        if topic is None or not 0 <= index < len(topic.partitions):
            raise _Refuse(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{index}.")
        part = topic.partitions[index]
        if p["Replicas"] is None:
            return self._cancel(image, topic, part, now_ms)
        target = tuple(p["Replicas"])
        _validate_target(target, image)
        rf = len(part.replicas) - len(part.removing_replicas)
        if not allow_rf_change and len(target) != rf:
            raise _Refuse(ErrorCode.INVALID_REPLICATION_FACTOR,
                          f"The replication factor is changed from {rf} to {len(target)}")
        replicas, adding, removing = start(part.replicas, target)
        ctx = ElectionContext(image.usable_brokers(), self.thresholds(topic, image), now_ms)
        return build_change(topic.topic_id, part, Target(replicas, part.isr, adding, removing), ctx)

    def _cancel(self, image: MetadataImage, topic: TopicInfo, part: PartitionInfo, now_ms: int) -> PartitionChangeRecord | None:
        if not is_reassigning(part):
            raise _Refuse(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
        original = tuple(r for r in part.replicas if r not in part.adding_replicas)
        isr = tuple(r for r in part.isr if r not in part.adding_replicas)
        unclean = self._unclean(topic, image)
        if not isr:
            if not unclean:
                raise _Refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                              f"Unable to revert partition assignment for {topic.name}:{part.partition} "
                              "because it would require an unclean leader election.")
            isr = original[:1]
        ctx = ElectionContext(image.usable_brokers(), self.thresholds(topic, image), now_ms, unclean)
        return build_change(topic.topic_id, part, Target(original, isr), ctx)

    def _unclean(self, topic: TopicInfo, image: MetadataImage) -> bool:
        value = image.config(UNCLEAN_ELECTION, topic, self.unclean_default)
        return value if isinstance(value, bool) else str(value).strip().lower() == "true"

    # -- ListPartitionReassignments (46) ---------------------------------------

    @staticmethod
    def list(request: ListPartitionReassignmentsRequest, image: MetadataImage) -> ListPartitionReassignmentsResponse:
        wanted = request.get("Topics")
        if wanted is None:
            pairs = [(t, [p.partition for p in t.partitions]) for t in image.topics.values()]
        else:
            pairs = [(image.topics[w["Name"]], w["PartitionIndexes"]) for w in wanted if w["Name"] in image.topics]
        topics: list[OngoingTopicReassignment] = []
        for topic, indexes in pairs:
            ongoing = [_ongoing(topic.partitions[i]) for i in indexes
                       if 0 <= i < len(topic.partitions) and is_reassigning(topic.partitions[i])]
            if ongoing:
                topics.append({"Name": topic.name, "Partitions": ongoing})
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "Topics": topics}


def _validate_target(target: tuple[int, ...], image: MetadataImage) -> None:
    """Kafka's validateManualPartitionAssignment."""
    if not target:
        raise _Refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      "The manual partition assignment includes an empty replica list.")
    if len(set(target)) != len(target):
        raise _Refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      f"The manual partition assignment includes a broker more than once: {list(target)}.")
    unknown = sorted(r for r in target if r not in image.brokers)
    if unknown:
        raise _Refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      f"The manual partition assignment includes unregistered broker(s) {unknown}.")


def _result(index: int, code: int, message: str | None) -> ReassignablePartitionResponse:
    return {"PartitionIndex": index, "ErrorCode": code, "ErrorMessage": message}


def _ongoing(part: PartitionInfo) -> OngoingPartitionReassignment:
    return {"PartitionIndex": part.partition, "Replicas": list(part.replicas),
            "AddingReplicas": list(part.adding_replicas), "RemovingReplicas": list(part.removing_replicas)}
