"""Replica -> log directory assignments on the controller (KIP-858, key 73).

Kafka's ReplicationControlManager.handleAssignReplicasToDirs and
handleDirectoriesOffline, our code:

* AssignReplicasToDirs (73, v0): a broker says which of its log dirs hosts each
  of its replicas.  The sender must be registered (BROKER_ID_NOT_REGISTERED) with
  that epoch (STALE_BROKER_EPOCH); per partition: an unknown topic id ->
  UNKNOWN_TOPIC_ID, an unknown partition -> UNKNOWN_TOPIC_OR_PARTITION, a
  partition the broker is no replica of -> NOT_LEADER_OR_FOLLOWER; otherwise
  one PartitionChangeRecord sets its ``Directories`` entry (none when it is
  already so).  A replica assigned to a dir its broker no longer has online is
  at once treated as offline, in the same record (Kafka's "offline-dir-assignment").
* A heartbeat that reports some (not all) of a broker's dirs offline
  (``offline_dir_changes``): every partition whose replica on that broker is
  assigned to one of those dirs gets a PartitionChangeRecord: the replica leaves
  the ISR (``election.remove_from_isr``, KIP-966 as for a fence) and, if it led,
  a new leader is elected among the other usable replicas whose own dirs are
  online (Kafka's LeaderAcceptor).  The BrokerRegistrationChangeRecord with the
  remaining online dirs follows (``cluster_control``).  Replicas still
  UNASSIGNED are not known to be on the failed dir: they move when the broker's
  pending assignment naming that dir arrives (the first rule).

Cost: one walk over the broker's partitions per dir failure (a rare event).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tierlog.metadata.cluster_records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataRecord,
    PartitionChangeRecord,
)
from tierlog.metadata.directories import is_online, offline_replicas, with_directory
from tierlog.metadata.image import MetadataImage, PartitionInfo, TopicInfo
from tierlog.metadata.leader_election import (
    EligibilityThresholds,
    elect_leader,
    remove_from_isr,
)
from tierlog.protocol.errors import ErrorCode

from .cluster_control import check_broker_epoch
from .controller_config import ControllerConfig

if TYPE_CHECKING:
    from tierlog.protocol.typed.assign_replicas_to_dirs import (
        AssignReplicasToDirsRequest,
        AssignReplicasToDirsResponse,
        AssignReplicasToDirsResponseDirectoryData,
        AssignReplicasToDirsResponsePartitionData,
        AssignReplicasToDirsResponseTopicData,
    )

__all__ = ["DirectoryControlManager"]

RECOVERING = 1


class DirectoryControlManager:
    def __init__(self, config: ControllerConfig, thresholds: Callable[[TopicInfo, MetadataImage], EligibilityThresholds]):
        self.config = config
        self.thresholds = thresholds        # (topic, image) -> KIP-1303 thresholds (PartitionControlManager's)

    # -- a heartbeat reported dirs offline --------------------------------------

    def offline_dir_changes(self, image: MetadataImage, broker_id: int, offline_dirs: Iterable[bytes],
                            now_ms: int) -> list[PartitionChangeRecord]:
        """PartitionChangeRecords taking ``broker_id``'s replicas in ``offline_dirs`` offline."""
        gone = set(offline_dirs)
        records: list[PartitionChangeRecord] = []
        for topic, p in image.partitions_on(broker_id):
            if p.directory(broker_id) in gone:
                record = self._replica_offline(image, topic, p, broker_id, p.directories, now_ms)
                if record is not None:
                    records.append(record)
        return records

    def _replica_offline(self, image: MetadataImage, topic: TopicInfo, p: PartitionInfo, broker_id: int,
                         dirs: Sequence[bytes], now_ms: int) -> PartitionChangeRecord | None:
        """The change taking ``broker_id``'s replica of ``p`` out of the ISR and leadership (None: nothing to do)."""
        if broker_id not in p.isr and broker_id not in p.elr and p.leader != broker_id:
            return None
        isr, elr = remove_from_isr(p.isr, p.elr, broker_id, self._min_isr(topic, image))
        elr = tuple(r for r in elr if r != broker_id)   # its log is unreachable: not a clean candidate now
        leader, lke, unclean = p.leader, p.last_known_elr, False
        if leader in (broker_id, NO_LEADER):
            usable = set(image.usable_brokers()) - {broker_id}
            usable -= offline_replicas(p.replicas, dirs, image.brokers.get)
            res = elect_leader(replicas=p.replicas, isr=isr, leader=NO_LEADER, usable=usable, elr=elr,
                               last_known_elr=lke, unclean_allowed=self._unclean(topic, image),
                               coverage=p.coverage(), thresholds=self.thresholds(topic, image), now_ms=now_ms)
            leader, isr, elr, lke, unclean = res.leader, res.isr, res.elr, res.last_known_elr, res.unclean
        return PartitionChangeRecord(
            partition_id=p.partition, topic_id=topic.topic_id,
            isr=tuple(isr) if tuple(isr) != p.isr else None,
            leader=leader if leader != p.leader else NO_LEADER_CHANGE,
            eligible_leader_replicas=tuple(elr) if tuple(elr) != p.elr else None,
            last_known_elr=tuple(lke) if tuple(lke) != p.last_known_elr else None,
            leader_recovery_state=RECOVERING if unclean else -1)

    def _min_isr(self, topic: TopicInfo, image: MetadataImage) -> int:
        return _int(image.config("min.insync.replicas", topic, self.config.min_insync_replicas), 1)

    def _unclean(self, topic: TopicInfo, image: MetadataImage) -> bool:
        value = image.config("unclean.leader.election.enable", topic, self.config.unclean_leader_election_enable)
        return str(value).lower() == "true"

    # -- AssignReplicasToDirs (73) -----------------------------------------------

    def assign_replicas_to_dirs(self, request: AssignReplicasToDirsRequest, image: MetadataImage,
                                now_ms: int) -> tuple[Sequence[MetadataRecord], AssignReplicasToDirsResponse]:
        broker_id = request["BrokerId"]
        error = check_broker_epoch(image, broker_id, request["BrokerEpoch"])
        if error:
            return [], _response(error)
        reg = image.brokers[broker_id]
        records: list[PartitionChangeRecord] = []
        dirs_out: list[AssignReplicasToDirsResponseDirectoryData] = []
        for d in request["Directories"]:
            dir_id = bytes(d["Id"])
            online = is_online(dir_id, reg.log_dirs)
            topics_out: list[AssignReplicasToDirsResponseTopicData] = []
            for t in d["Topics"]:
                topic = image.topic_by_id(t["TopicId"])
                parts_out: list[AssignReplicasToDirsResponsePartitionData] = []
                for pd in t["Partitions"]:
                    code = self._assign_one(image, topic, pd["PartitionIndex"], broker_id, dir_id, online,
                                            now_ms, records)
                    parts_out.append({"PartitionIndex": pd["PartitionIndex"], "ErrorCode": code})
                topics_out.append({"TopicId": t["TopicId"], "Partitions": parts_out})
            dirs_out.append({"Id": d["Id"], "Topics": topics_out})
        response = _response(ErrorCode.NONE)
        response["Directories"] = dirs_out
        return records, response

    def _assign_one(self, image: MetadataImage, topic: TopicInfo | None, index: int, broker_id: int, dir_id: bytes,
                    online: bool, now_ms: int, records: list[PartitionChangeRecord]) -> int:
        if topic is None:
            return ErrorCode.UNKNOWN_TOPIC_ID
        if not 0 <= index < len(topic.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        p = topic.partitions[index]
        if broker_id not in p.replicas:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if p.directory(broker_id) == dir_id:
            return ErrorCode.NONE
        dirs = with_directory(p.replicas, p.directories, broker_id, dir_id)
        change = None if online else self._replica_offline(image, topic, p, broker_id, dirs, now_ms)
        base = change or PartitionChangeRecord(partition_id=index, topic_id=topic.topic_id)
        records.append(_with_directories(base, dirs))
        return ErrorCode.NONE


def _with_directories(record: PartitionChangeRecord, dirs: Iterable[bytes]) -> PartitionChangeRecord:
    return replace(record, directories=tuple(dirs))


def _response(error: int) -> AssignReplicasToDirsResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "Directories": []}


def _int(value: str | int, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
