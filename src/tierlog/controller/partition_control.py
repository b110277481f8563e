"""Partition state changes asked of the controller: AlterPartition (56), ElectLeaders (43).

AlterPartition comes from partition leaders.  The request's broker epoch must
be the sender's (STALE_BROKER_EPOCH for the whole request).  Per partition, in
Kafka's order: unknown -> UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for an
unknown id at v2+); a leader or partition epoch *newer* than ours ->
NOT_CONTROLLER (we are behind: the sender should find the new controller); an
older leader epoch -> FENCED_LEADER_EPOCH; a sender that is not the leader ->
INVALID_REQUEST; an older partition epoch -> INVALID_UPDATE_VERSION; an ISR
with non-replicas or without the leader -> INVALID_REQUEST; RECOVERING with
more than one ISR member, or RECOVERED -> RECOVERING -> INVALID_REQUEST; an ISR
member that is unregistered, fenced, shutting down or of another broker epoch
-> INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v2).

An accepted change is one PartitionChangeRecord with the new ISR (and the ELR
when KIP-966 moves members), plus, from v4 (the KIP-1303 version), each ISR
member's LocalLogStartTimestamp / LocalLogSizeBytes ("Tracking Local Log
State": the leader reports them for every ISR member and the controller stores
them).  A request that changes nothing writes nothing and answers the current
state.  The answer carries the state after the change.  An ISR change that
completes an ongoing reassignment (every target replica in the ISR, see
``reassignment``) writes the completion in the same record; if that moves the
leadership away from the sender, the sender gets NEW_LEADER_ELECTED
(FENCED_LEADER_EPOCH before v2) while the record is still written, as Kafka
does.

ElectLeaders: PREFERRED (0) moves leadership to the first replica of the
KIP-1303 eligibility-sorted assignment (ELECTION_NOT_NEEDED if it already
leads, PREFERRED_LEADER_NOT_AVAILABLE if it cannot); UNCLEAN (1) elects only
partitions without a leader (ELECTION_NOT_NEEDED otherwise), from the ISR /
ELR first and else any usable replica (ELIGIBLE_LEADERS_NOT_AVAILABLE when
none).  Null TopicPartitions means every partition, answering only those that
needed an election.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tierlog.metadata.cluster_records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataRecord,
    PartitionChangeRecord,
    ReplicaLogCoverage,
)
from tierlog.metadata.directories import offline_replicas
from tierlog.metadata.image import MetadataImage, PartitionInfo, TopicInfo
from tierlog.metadata.leader_election import (
    Election,
    EligibilityThresholds,
    elect_leader,
    eligibility_sort,
    remove_from_isr,
)
from tierlog.protocol.errors import ErrorCode

from .cluster_control import check_broker_epoch
from .controller_config import ControllerConfig
from .reassignment import (
    ElectionContext,
    Target,
    build_change,
    is_reassigning,
    maybe_complete,
)

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_partition import (
        AlterPartitionRequest,
        AlterPartitionRequestPartitionData,
        AlterPartitionResponse,
        AlterPartitionResponsePartitionData,
        AlterPartitionResponseTopicData,
        BrokerState,
    )
    from tierlog.protocol.typed.elect_leaders import (
        ElectLeadersRequest,
        ElectLeadersResponse,
        PartitionResult,
        ReplicaElectionResult,
    )

__all__ = ["LOCAL_LOG_STATE_VERSION", "PartitionControlManager"]

LOCAL_LOG_STATE_VERSION = 4        # AlterPartition version carrying KIP-1303 fields
RECOVERED, RECOVERING = 0, 1
PREFERRED, UNCLEAN = 0, 1


class _Reject(Exception):
    def __init__(self, error_code: int):
        super().__init__(error_code)
        self.error_code = error_code


class PartitionControlManager:
    def __init__(self, config: ControllerConfig):
        self.config = config

    # -- AlterPartition (56) --------------------------------------------------

    def alter_partition(self, request: AlterPartitionRequest, version: int, image: MetadataImage,
                        now_ms: int) -> tuple[Sequence[MetadataRecord], AlterPartitionResponse]:
        sender = request["BrokerId"]
        error = check_broker_epoch(image, sender, request.get("BrokerEpoch", -1),
                                   unregistered=ErrorCode.STALE_BROKER_EPOCH, unset_skips=True)
        if error:
            return [], {"ThrottleTimeMs": 0, "ErrorCode": error, "Topics": []}
        records: list[PartitionChangeRecord] = []
        topics: list[AlterPartitionResponseTopicData] = []
        for t in request["Topics"]:
            topic = image.topic_by_id(t["TopicId"]) if version >= 2 else image.topics.get(t["TopicName"])
            key: AlterPartitionResponseTopicData = {"TopicId": t["TopicId"]} if version >= 2 else {"TopicName": t["TopicName"]}
            parts: list[AlterPartitionResponsePartitionData] = []
            for p in t["Partitions"]:
                if topic is None:
                    code = ErrorCode.UNKNOWN_TOPIC_ID if version >= 2 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    parts.append(_ap_error(p["PartitionIndex"], code))
                    continue
                try:
                    record, result = self._alter_one(sender, topic, p, version, image, now_ms)
                except _Reject as e:
                    parts.append(_ap_error(p["PartitionIndex"], e.error_code))
                    continue
                if record is not None:
                    records.append(record)
                parts.append(result)
            topics.append({**key, "Partitions": parts})
        return records, {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "Topics": topics}

    def _alter_one(self, sender: int, topic: TopicInfo, p: AlterPartitionRequestPartitionData, version: int,
                   image: MetadataImage, now_ms: int) -> tuple[PartitionChangeRecord | None, AlterPartitionResponsePartitionData]:
        index = p["PartitionIndex"]
        if not 0 <= index < len(topic.partitions):
            raise _Reject(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        part = topic.partitions[index]
        members: list[BrokerState] = (p["NewIsrWithEpochs"] if version >= 3
                                      else [{"BrokerId": b, "BrokerEpoch": -1} for b in p["NewIsr"]])
        new_isr = tuple(m["BrokerId"] for m in members)
        recovery = p.get("LeaderRecoveryState", RECOVERED)
        self._validate(sender, part, p, new_isr, recovery)
        if any(not _eligible(image, m) for m in members):
            raise _Reject(ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED)
        coverage = _coverage(members) if version >= LOCAL_LOG_STATE_VERSION else None
        record = self._change(topic, part, new_isr, recovery, coverage, image, now_ms)
        if record is None:
            return None, _ap_result(index, part.leader, part.leader_epoch, part.isr, part.leader_recovery_state,
                                    part.partition_epoch)
        if record.leader not in (NO_LEADER_CHANGE, sender):
            # a completed reassignment moved the leader: the sender must learn the new metadata
            code = ErrorCode.NEW_LEADER_ELECTED if version > 1 else ErrorCode.FENCED_LEADER_EPOCH
            return record, _ap_error(index, code)
        return record, _ap_result(index, part.leader, part.leader_epoch, new_isr, recovery, part.partition_epoch + 1)

    @staticmethod
    def _validate(sender: int, part: PartitionInfo, p: AlterPartitionRequestPartitionData, new_isr: tuple[int, ...],
                  recovery: int) -> None:
        if p["LeaderEpoch"] > part.leader_epoch or p["PartitionEpoch"] > part.partition_epoch:
            raise _Reject(ErrorCode.NOT_CONTROLLER)
        if p["LeaderEpoch"] < part.leader_epoch:
            raise _Reject(ErrorCode.FENCED_LEADER_EPOCH)
        if sender != part.leader:
            raise _Reject(ErrorCode.INVALID_REQUEST)
        if p["PartitionEpoch"] < part.partition_epoch:
            raise _Reject(ErrorCode.INVALID_UPDATE_VERSION)
        if (len(set(new_isr)) != len(new_isr) or any(r not in part.replicas for r in new_isr)
                or part.leader not in new_isr):
            raise _Reject(ErrorCode.INVALID_REQUEST)
        if recovery == RECOVERING and len(new_isr) > 1:
            raise _Reject(ErrorCode.INVALID_REQUEST)
        if part.leader_recovery_state == RECOVERED and recovery == RECOVERING:
            raise _Reject(ErrorCode.INVALID_REQUEST)

    def _change(self, topic: TopicInfo, part: PartitionInfo, new_isr: tuple[int, ...], recovery: int,
                coverage: tuple[ReplicaLogCoverage, ...] | None, image: MetadataImage,
                now_ms: int) -> PartitionChangeRecord | None:
        isr_changed = set(new_isr) != set(part.isr) or new_isr != part.isr
        elr = self._elr_after(topic, part, new_isr, image) if isr_changed else part.elr
        known = part.coverage()
        if coverage is not None:
            coverage = tuple(c for c in coverage if known.get(c.broker_id) != c) or None
        recovery_changed = recovery != part.leader_recovery_state
        if is_reassigning(part):
            done = maybe_complete(Target(part.replicas, new_isr, part.adding_replicas, part.removing_replicas))
            if not done.adding and not done.removing:
                ctx = ElectionContext(image.usable_brokers(), self.thresholds(topic, image), now_ms)
                # KIP-1303: the coverage this very request reports counts in the election
                fresh = {**known, **{c.broker_id: c for c in coverage or ()}}
                record = build_change(topic.topic_id, part, done, ctx, elr, fresh)
                if record is not None:
                    return replace(record, local_log_coverage=coverage,
                                   leader_recovery_state=recovery if recovery_changed else -1)
        if not isr_changed and coverage is None and not recovery_changed:
            return None
        return PartitionChangeRecord(
            partition_id=part.partition, topic_id=topic.topic_id,
            isr=new_isr if isr_changed else None,
            eligible_leader_replicas=elr if elr != part.elr else None,
            leader_recovery_state=recovery if recovery_changed else -1,
            local_log_coverage=coverage)

    def _elr_after(self, topic: TopicInfo, part: PartitionInfo, new_isr: tuple[int, ...],
                   image: MetadataImage) -> tuple[int, ...]:
        """KIP-966 kept simple (``election.remove_from_isr``): members leaving a too-small ISR join the ELR."""
        min_isr = self._min_isr(topic, image)
        isr, elr = tuple(part.isr), tuple(part.elr)
        for b in part.isr:
            if b not in new_isr:
                isr, elr = remove_from_isr(isr, elr, b, min_isr)
        if len(new_isr) >= min_isr:
            return ()
        return tuple(r for r in elr if r not in new_isr)

    def _min_isr(self, topic: TopicInfo, image: MetadataImage) -> int:
        return _int(image.config("min.insync.replicas", topic, self.config.min_insync_replicas),
                    self.config.min_insync_replicas)

    # -- ElectLeaders (43) ----------------------------------------------------

    def elect_leaders(self, request: ElectLeadersRequest, version: int, image: MetadataImage,
                      now_ms: int) -> tuple[Sequence[MetadataRecord], ElectLeadersResponse]:
        kind = request.get("ElectionType", PREFERRED) if version >= 1 else PREFERRED
        if kind not in (PREFERRED, UNCLEAN):
            return [], {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.INVALID_REQUEST, "ReplicaElectionResults": []}
        records: list[PartitionChangeRecord] = []
        results: list[ReplicaElectionResult] = []
        wanted = request.get("TopicPartitions")
        if wanted is None:
            for topic in image.topics.values():
                parts: list[PartitionResult] = []
                for p in topic.partitions:
                    code, msg = self._elect_one(image, topic, p.partition, kind, now_ms, records)
                    if code != ErrorCode.ELECTION_NOT_NEEDED:
                        parts.append({"PartitionId": p.partition, "ErrorCode": code, "ErrorMessage": msg})
                results.append({"Topic": topic.name, "PartitionResult": parts})
        else:
            for t in wanted:
                named = image.topics.get(t["Topic"])
                parts = []
                for index in t["Partitions"]:
                    code, msg = self._elect_one(image, named, index, kind, now_ms, records)
                    parts.append({"PartitionId": index, "ErrorCode": code, "ErrorMessage": msg})
                results.append({"Topic": t["Topic"], "PartitionResult": parts})
        return records, {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ReplicaElectionResults": results}

    def _elect_one(self, image: MetadataImage, topic: TopicInfo | None, index: int, kind: int, now_ms: int,
                   records: list[PartitionChangeRecord]) -> tuple[int, str | None]:
        if topic is None or not 0 <= index < len(topic.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic or partition."
        part = topic.partitions[index]
        thresholds = self.thresholds(topic, image)
        if kind == PREFERRED:
            target = eligibility_sort(part.replicas, part.coverage(), thresholds, now_ms)[0]
            if part.leader == target:
                return ErrorCode.ELECTION_NOT_NEEDED, None
            election = Election.PREFERRED
        else:
            if part.leader != NO_LEADER:
                return ErrorCode.ELECTION_NOT_NEEDED, None
            election = Election.UNCLEAN
        result = elect_leader(replicas=part.replicas, isr=part.isr, leader=part.leader,
                              usable=image.usable_brokers() - _offline(part, image), election=election, elr=part.elr,
                              last_known_elr=part.last_known_elr, coverage=part.coverage(),
                              thresholds=thresholds, now_ms=now_ms)
        if result.leader == NO_LEADER or (kind == PREFERRED and result.leader != target):
            if kind == PREFERRED:
                return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader is not available."
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "No replica can lead the partition."
        records.append(PartitionChangeRecord(
            partition_id=index, topic_id=topic.topic_id,
            leader=result.leader if result.leader != part.leader else NO_LEADER_CHANGE,
            isr=result.isr if result.isr != part.isr else None,
            eligible_leader_replicas=result.elr if result.elr != part.elr else None,
            last_known_elr=result.last_known_elr if result.last_known_elr != part.last_known_elr else None,
            leader_recovery_state=RECOVERING if result.unclean else -1))
        return ErrorCode.NONE, None

    def thresholds(self, topic: TopicInfo, image: MetadataImage) -> EligibilityThresholds:
        """KIP-1303 thresholds: topic override, else cluster-wide dynamic config, else ours."""
        ms = image.config("leader.election.eligible.local.log.ms", topic, self.config.eligible_local_log_ms)
        size = image.config("leader.election.eligible.local.log.bytes", topic, self.config.eligible_local_log_bytes)
        return EligibilityThresholds(_int(ms, -1), _int(size, -1))


def _offline(part: PartitionInfo, image: MetadataImage) -> frozenset[int]:
    """Replicas of ``part`` on an offline log dir (KIP-858): never elected."""
    return offline_replicas(part.replicas, part.directories, image.brokers.get)


def _int(value: str | int, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _eligible(image: MetadataImage, member: BrokerState) -> bool:
    reg = image.brokers.get(member["BrokerId"])
    if reg is None or reg.fenced or reg.in_controlled_shutdown:
        return False
    epoch = member.get("BrokerEpoch", -1)
    return epoch == -1 or epoch == reg.epoch


def _coverage(members: list[BrokerState]) -> tuple[ReplicaLogCoverage, ...] | None:
    out = tuple(ReplicaLogCoverage(m["BrokerId"], m.get("LocalLogStartTimestamp", -1), m.get("LocalLogSizeBytes", -1))
                for m in members
                if m.get("LocalLogStartTimestamp", -1) != -1 or m.get("LocalLogSizeBytes", -1) != -1)
    return tuple(sorted(out, key=lambda c: c.broker_id)) or None


def _ap_error(index: int, code: int) -> AlterPartitionResponsePartitionData:
    return {"PartitionIndex": index, "ErrorCode": code, "LeaderId": -1, "LeaderEpoch": -1, "Isr": [],
            "LeaderRecoveryState": 0, "PartitionEpoch": -1}


def _ap_result(index: int, leader: int, leader_epoch: int, isr: Iterable[int], recovery: int,
               partition_epoch: int) -> AlterPartitionResponsePartitionData:
    return {"PartitionIndex": index, "ErrorCode": ErrorCode.NONE, "LeaderId": leader, "LeaderEpoch": leader_epoch,
            "Isr": list(isr), "LeaderRecoveryState": recovery, "PartitionEpoch": partition_epoch}
