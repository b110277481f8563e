"""QuorumController: the controller's logic, sans-IO.

A shell wires it to the Raft metadata log and to sockets::

    qc = QuorumController(node_id, ControllerConfig(...), random.Random(seed), now_ms)
    qc.on_leader_change(True, committed_image, next_offset=raft_log_end)   # became active
    result = qc.handle(api_key, version, request, now_ms)
    # append result.records (in order, one offset each, result.base_offset first,
    # batch append timestamp result.timestamp_ms); send result.response once
    # they are committed (at once when there are none)
    qc.on_commit(last_committed_offset)
    records = qc.tick(now_ms)       # append like a result's records, timestamp now_ms
    qc.next_deadline_ms()           # when to tick next (None: nothing scheduled)

Active controller: every request is checked against the *pending* image (the
committed image plus this controller's uncommitted records, applied at once,
as Kafka's active controller does), so the next request sees them.
``on_commit(offset)`` moves the committed image forward.
``on_leader_change(is_active, committed_image)`` throws every uncommitted
change away (the new term starts from the committed image) and clears the
heartbeat sessions.  While not active, ``handle`` answers NOT_CONTROLLER and
``replay`` / ``load_image`` keep the committed image up to date from the log.

Records must land in the log exactly as returned (no gaps, one offset per
record, starting at ``base_offset``): a broker's epoch *is* the offset of its
RegisterBrokerRecord.  ``timestamp_ms`` must be the batch's append timestamp,
because replaying a fence event runs KIP-1303 eligibility at that time; every
replica must derive what this controller derived.  For the same reason every
broker event record (``records.EVENT_RECORDS``) is written stamped with this
controller's static KIP-1303 defaults (``EligibleLocalLogMs`` /
``EligibleLocalLogBytes``, from server.properties): the elections its replay
derives then read the same effective thresholds as this controller's explicit
elections (topic override > cluster-wide dynamic value > static default).

Bootstrap records (``metadata.bootstrap``: ``tierlog format --add-scram``'s SCRAM
credentials, and the node's default feature levels, ``metadata.feature_records``: transaction.version
2, as Kafka 4.x's format writes them) are written once, first thing, when this controller becomes active on an
image that holds nothing yet (a new cluster): before the first request's records or the
first tick's, so that no broker registration can make the image look used first.

``handle`` accepts (api key: versions):
  19 CreateTopics 0-7, 20 DeleteTopics 0-6, 43 ElectLeaders 0-2,
  33 AlterConfigs 0-2, 37 CreatePartitions 0-3, 44 IncrementalAlterConfigs 0-1, 45 AlterPartitionReassignments 0-1,
  46 ListPartitionReassignments 0, 56 AlterPartition 0-4,
  62 BrokerRegistration 0-4, 63 BrokerHeartbeat 0-1, 64 UnregisterBroker 0,
  67 AllocateProducerIds 0, 73 AssignReplicasToDirs 0 (``directory_control``),
  51 AlterUserScramCredentials 0.
  30 CreateAcls 0-3, 31 DeleteAcls 0-3.
"""
from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tierlog.metadata.cluster_records import EVENT_RECORDS, MetadataRecord, NoOpRecord
from tierlog.metadata.delta import MetadataDelta
from tierlog.metadata.image import MetadataImage, MetadataProvenance
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

from .acl_control import AclControlManager
from .acl_control import not_controller as acls_not_controller
from .cluster_control import ClusterControlManager
from .config_control import ConfigControlManager
from .controller_config import ControllerConfig
from .directory_control import DirectoryControlManager
from .leader_balance import BalanceSchedule, partitions_to_balance
from .partition_control import PartitionControlManager
from .partition_creation import create_partitions
from .producer_ids import allocate_producer_ids
from .quota_control import alter_client_quotas
from .reassignment import ReassignmentControlManager
from .replication_control import ReplicationControlManager
from .scram_control import alter_user_scram_credentials

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_partition import (
        AlterPartitionRequest,
        AlterPartitionResponse,
    )
    from tierlog.protocol.typed.broker_heartbeat import (
        BrokerHeartbeatRequest,
        BrokerHeartbeatResponse,
    )
    from tierlog.protocol.typed.elect_leaders import ElectLeadersRequest

__all__ = ["SUPPORTED_APIS", "ControllerResult", "QuorumController"]

#: api key -> (min version, max version) that ``handle`` accepts
SUPPORTED_APIS = {
    ApiKey.CREATE_TOPICS: (0, 7), ApiKey.DELETE_TOPICS: (0, 6), ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1), ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3), ApiKey.ALTER_PARTITION: (0, 4), ApiKey.BROKER_REGISTRATION: (0, 4),
    ApiKey.BROKER_HEARTBEAT: (0, 1), ApiKey.UNREGISTER_BROKER: (0, 0), ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1), ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.CREATE_ACLS: (0, 3), ApiKey.DELETE_ACLS: (0, 3),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0), ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
}


#: a request handler: (request, version, now_ms) -> (records to append, the response); the request is
#: the wire's, typed by the handler that takes it
Handler = Callable[[Any, int, int], tuple[Sequence[MetadataRecord], Mapping[str, Any]]]


@dataclass(slots=True)
class ControllerResult:
    records: list[MetadataRecord] = field(default_factory=list)   # to append, in order
    response: Mapping[str, Any] | None = None     # to send once ``records`` are committed
    base_offset: int = -1                         # offset records[0] must get (-1: no records)
    timestamp_ms: int = 0                         # append timestamp for the batch

    @property
    def last_offset(self) -> int:                 # inclusive; -1 when there are no records
        return self.base_offset + len(self.records) - 1 if self.records else -1


class QuorumController:
    def __init__(self, node_id: int, config: ControllerConfig, rng: random.Random, now_ms: int = 0,
                 image: MetadataImage | None = None, bootstrap_records: Sequence[MetadataRecord] = ()):
        self.node_id = node_id
        self._bootstrap = list(bootstrap_records)
        self._bootstrap_pending = False         # active on a new cluster: write them first
        self.config = config
        self.rng = rng
        self.cluster = ClusterControlManager(config.cluster_id, config.broker_session_timeout_ms)
        self.replication = ReplicationControlManager(config, rng)
        self.partitions = PartitionControlManager(config)
        self.configs = ConfigControlManager(config)
        self.directories = DirectoryControlManager(config, self.partitions.thresholds)
        self.reassignments = ReassignmentControlManager(config.unclean_leader_election_enable,
                                                        self.partitions.thresholds)
        self.acls = AclControlManager(rng)
        self.balance = BalanceSchedule(config.auto_leader_rebalance_enable, config.leader_imbalance_check_interval_ms)
        self.active = False
        self.committed_image = image or MetadataImage.empty(config.cluster_id or "", -1)
        self._image = self.committed_image                  # pending (active) == committed (standby)
        self._uncommitted: deque[tuple[int, MetadataImage]] = deque()   # (last offset, image after it)
        self._next_offset = self.committed_image.high_watermark_offset
        self._last_write_ms = now_ms
        self._handlers: dict[ApiKey, Handler] = {
            ApiKey.CREATE_TOPICS: lambda r, v, n: self.replication.create_topics(r, v, self._image),
            ApiKey.DELETE_TOPICS: lambda r, v, n: self.replication.delete_topics(r, v, self._image),
            ApiKey.ELECT_LEADERS: lambda r, v, n: self.partitions.elect_leaders(r, v, self._image, n),
            ApiKey.INCREMENTAL_ALTER_CONFIGS: lambda r, v, n: self.configs.incremental_alter_configs(r, v, self._image),
            ApiKey.ALTER_CONFIGS: lambda r, v, n: self.configs.legacy_alter_configs(r, v, self._image),
            ApiKey.CREATE_PARTITIONS: lambda r, v, n: create_partitions(r, self._image, self.rng),
            ApiKey.ALTER_PARTITION: self._alter_partition,
            ApiKey.BROKER_REGISTRATION: lambda r, v, n: self.cluster.register(r, self._image, n, self._next_offset),
            ApiKey.BROKER_HEARTBEAT: self._heartbeat,
            ApiKey.UNREGISTER_BROKER: lambda r, v, n: self.cluster.unregister(r, self._image),
            ApiKey.ALLOCATE_PRODUCER_IDS: lambda r, v, n: allocate_producer_ids(r, self._image),
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: lambda r, v, n: self.reassignments.alter(r, v, self._image, n),
            # read at the committed offset, as Kafka does: an uncommitted start is not listed
            ApiKey.LIST_PARTITION_REASSIGNMENTS: lambda r, v, n: ([], self.reassignments.list(r, self.committed_image)),
            ApiKey.CREATE_ACLS: lambda r, v, n: self.acls.create_acls(r, self._image),
            ApiKey.DELETE_ACLS: lambda r, v, n: self.acls.delete_acls(r, self._image),
            ApiKey.ASSIGN_REPLICAS_TO_DIRS: lambda r, v, n: self.directories.assign_replicas_to_dirs(r, self._image, n),
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: lambda r, v, n: alter_user_scram_credentials(r, self._image),
            ApiKey.ALTER_CLIENT_QUOTAS: lambda r, v, n: alter_client_quotas(r),
        }

    # -- state ----------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        """The pending image on the active controller, the committed one otherwise."""
        return self._image

    @property
    def next_offset(self) -> int:
        return self._next_offset

    # -- requests -------------------------------------------------------------

    def handle(self, api_key: int, version: int, request: Mapping[str, Any], now_ms: int) -> ControllerResult:
        api_key = ApiKey(api_key)
        lo, hi = SUPPORTED_APIS.get(api_key, (0, -1))
        assert lo <= version <= hi, f"api {api_key} v{version} is not handled by the controller"
        if not self.active:
            return ControllerResult([], not_controller_response(api_key, version, request))
        self.cluster.start_missing_sessions(self._image, now_ms)
        boot = self._write_bootstrap(now_ms)
        records, response = self._handlers[api_key](request, version, now_ms)
        result = self._write(records, now_ms, response)
        if boot:
            result = ControllerResult([*boot.records, *result.records], result.response, boot.base_offset, now_ms)
        if api_key == ApiKey.ALTER_PARTITION and records and result.response is not None:
            _refresh_alter_partition(result.response, version, self._image)
        return result

    def _write_bootstrap(self, now_ms: int) -> ControllerResult | None:
        if not self._bootstrap_pending:
            return None
        self._bootstrap_pending = False
        return self._write(list(self._bootstrap), now_ms, None)

    def _heartbeat(self, request: BrokerHeartbeatRequest, version: int,
                   now_ms: int) -> tuple[Sequence[MetadataRecord], BrokerHeartbeatResponse]:
        image = self._image
        return self.cluster.heartbeat(request, image, now_ms, self._next_offset,
                                      lambda b: next(image.partitions_led_by(b), None) is not None,
                                      lambda b, dirs: self.directories.offline_dir_changes(image, b, dirs, now_ms))

    def _alter_partition(self, request: AlterPartitionRequest, version: int,
                         now_ms: int) -> tuple[Sequence[MetadataRecord], AlterPartitionResponse]:
        return self.partitions.alter_partition(request, version, self._image, now_ms)

    def _write(self, records: Sequence[MetadataRecord], now_ms: int, response: Mapping[str, Any] | None) -> ControllerResult:
        if not records:
            return ControllerResult([], response, -1, now_ms)
        records = [self._stamp(r) for r in records]
        base = self._next_offset
        delta = MetadataDelta(self._image, now_ms)
        for r in records:
            delta.replay(r)          # a replay error here is a controller bug: let it fail loudly
        last = base + len(records) - 1
        self._image = delta.apply(MetadataProvenance(last, self._image.provenance.last_contained_epoch, now_ms))
        self._uncommitted.append((last, self._image))
        self._next_offset = last + 1
        self._last_write_ms = now_ms
        return ControllerResult(list(records), response, base, now_ms)

    def _stamp(self, record: MetadataRecord) -> MetadataRecord:
        """A broker event record carrying this controller's static KIP-1303 defaults (see above)."""
        if not isinstance(record, EVENT_RECORDS):
            return record
        return replace(record, eligible_local_log_ms=self.config.eligible_local_log_ms,
                       eligible_local_log_bytes=self.config.eligible_local_log_bytes)

    # -- the log --------------------------------------------------------------

    def on_commit(self, last_offset: int) -> None:
        """Everything up to ``last_offset`` (inclusive) is committed."""
        while self._uncommitted and self._uncommitted[0][0] <= last_offset:
            _, self.committed_image = self._uncommitted.popleft()

    def on_leader_change(self, is_active: bool, committed_image: MetadataImage,
                         next_offset: int | None = None) -> None:
        """A new term: drop uncommitted changes and sessions; become active or standby.

        ``next_offset``: the offset the next appended record will get (after any
        control records the new leader wrote); defaults to the image's end.
        """
        self.active = is_active
        self.committed_image = self._image = committed_image
        self._uncommitted.clear()
        self.cluster.deactivate()
        self.balance.stop()                 # restarted by the first tick of an active term
        self._bootstrap_pending = is_active and bool(self._bootstrap) and _is_new_cluster(committed_image)
        self._next_offset = committed_image.high_watermark_offset if next_offset is None else next_offset

    def skip_to(self, next_offset: int) -> None:
        """The Raft leader appended control records of its own (a KIP-853 VotersRecord) after
        this controller's: its next record lands at ``next_offset``."""
        assert self.active and next_offset >= self._next_offset, (next_offset, self._next_offset)
        self._next_offset = next_offset

    def replay(self, record: MetadataRecord, offset: int, timestamp_ms: int = 0, epoch: int = -1) -> None:
        """A standby follows the committed log one record at a time."""
        assert not self.active, "the active controller writes the log; it does not replay it"
        delta = MetadataDelta(self.committed_image, timestamp_ms)
        delta.replay(record)
        self.load_image(delta.apply(MetadataProvenance(offset, epoch, timestamp_ms)))

    def load_image(self, image: MetadataImage) -> None:
        """A standby takes a newer committed image (from the loader or a snapshot)."""
        assert not self.active, "the active controller's image comes from its own writes"
        self.committed_image = self._image = image
        self._next_offset = image.high_watermark_offset

    # -- time -----------------------------------------------------------------

    def tick(self, now_ms: int) -> list[MetadataRecord]:
        """Records of periodic work: fence expired sessions, else a due leader balance check
        (``leader_balance``); a NoOpRecord when idle."""
        if not self.active:
            return []
        boot = self._write_bootstrap(now_ms)
        if boot is not None:
            return boot.records
        self.cluster.start_missing_sessions(self._image, now_ms)
        records: Sequence[MetadataRecord] = self.cluster.fence_expired(self._image, now_ms)
        if not records:                     # a fence first; a due balance check runs at the next tick
            records = self._balance_leaders(now_ms)
        idle = self.config.max_idle_interval_ms
        if not records and idle > 0 and now_ms - self._last_write_ms >= idle:
            records = [NoOpRecord()]
        return self._write(records, now_ms, None).records

    def _balance_leaders(self, now_ms: int) -> Sequence[MetadataRecord]:
        """Preferred elections of ``auto.leader.rebalance.enable`` when the check is due (leader_balance)."""
        if self.balance.next_ms is None:
            self.balance.start(now_ms)
        if not self.balance.due(now_ms):
            return []
        plan, truncated = partitions_to_balance(self._image, self.config.leader_imbalance_per_broker_percentage,
                                                lambda t: self.partitions.thresholds(t, self._image), now_ms)
        self.balance.checked(now_ms, truncated)
        if not plan:
            return []
        request: ElectLeadersRequest = {"ElectionType": 0, "TimeoutMs": 0,
                   "TopicPartitions": [{"Topic": t, "Partitions": ps} for t, ps in plan.items()]}
        return self.partitions.elect_leaders(request, 2, self._image, now_ms)[0]

    def next_deadline_ms(self) -> int | None:
        if not self.active:
            return None
        deadlines = [d for d in (self.cluster.next_deadline_ms(self._image), self.balance.next_ms) if d is not None]
        if self.config.max_idle_interval_ms > 0:
            deadlines.append(self._last_write_ms + self.config.max_idle_interval_ms)
        return min(deadlines) if deadlines else None


def _is_new_cluster(image: MetadataImage) -> bool:
    """No metadata record applied yet (Raft control records do not count)."""
    return not image.brokers and not image.topics and not image.configs and image.producer_ids is None \
        and not len(image.scram) and not image.features and not len(image.client_quotas)


def _refresh_alter_partition(response: Mapping[str, Any], version: int, image: MetadataImage) -> None:
    """Answer accepted AlterPartition changes with the state the image now holds."""
    for t in response["Topics"]:
        topic = image.topic_by_id(t["TopicId"]) if version >= 2 else image.topics.get(t["TopicName"])
        if topic is None:
            continue
        for p in t["Partitions"]:
            if p["ErrorCode"] == ErrorCode.NONE:
                part = topic.partitions[p["PartitionIndex"]]
                p.update(LeaderId=part.leader, LeaderEpoch=part.leader_epoch, Isr=list(part.isr),
                         LeaderRecoveryState=part.leader_recovery_state, PartitionEpoch=part.partition_epoch)


def not_controller_response(api_key: int, version: int, request: Mapping[str, Any],
                            nc: ErrorCode = ErrorCode.NOT_CONTROLLER) -> dict[str, Any]:
    """The answer of a controller that is not active: NOT_CONTROLLER (or ``nc``: a refused
    caller's CLUSTER_AUTHORIZATION_FAILED), shaped per API."""
    if api_key == ApiKey.CREATE_TOPICS:
        return {"ThrottleTimeMs": 0, "Topics": [
            {"Name": t["Name"], "TopicId": bytes(16), "ErrorCode": nc, "ErrorMessage": None, "NumPartitions": -1,
             "ReplicationFactor": -1, "Configs": None} for t in request["Topics"]]}
    if api_key == ApiKey.DELETE_TOPICS:
        wanted = ([(t.get("Name"), t.get("TopicId", bytes(16))) for t in request["Topics"]] if version >= 6
                  else [(n, bytes(16)) for n in request["TopicNames"]])
        return {"ThrottleTimeMs": 0, "Responses": [
            {"Name": n, "TopicId": i, "ErrorCode": nc, "ErrorMessage": None} for n, i in wanted]}
    if api_key in (ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS):
        return {"ThrottleTimeMs": 0, "Responses": [
            {"ErrorCode": nc, "ErrorMessage": None, "ResourceType": r["ResourceType"],
             "ResourceName": r["ResourceName"]} for r in request["Resources"]]}
    if api_key == ApiKey.CREATE_PARTITIONS:
        return {"ThrottleTimeMs": 0, "Results": [
            {"Name": t["Name"], "ErrorCode": nc, "ErrorMessage": None} for t in request["Topics"]]}
    if api_key == ApiKey.ELECT_LEADERS:
        return {"ThrottleTimeMs": 0, "ErrorCode": nc, "ReplicaElectionResults": [
            {"Topic": t["Topic"], "PartitionResult": [{"PartitionId": p, "ErrorCode": nc, "ErrorMessage": None}
                                                      for p in t["Partitions"]]}
            for t in (request.get("TopicPartitions") or [])]}
    if api_key == ApiKey.ALTER_PARTITION:
        return {"ThrottleTimeMs": 0, "ErrorCode": nc, "Topics": []}
    if api_key == ApiKey.BROKER_REGISTRATION:
        return {"ThrottleTimeMs": 0, "ErrorCode": nc, "BrokerEpoch": -1}
    if api_key == ApiKey.BROKER_HEARTBEAT:
        return {"ThrottleTimeMs": 0, "ErrorCode": nc, "IsCaughtUp": False, "IsFenced": True, "ShouldShutDown": False}
    if api_key == ApiKey.UNREGISTER_BROKER:
        return {"ThrottleTimeMs": 0, "ErrorCode": nc, "ErrorMessage": None}
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return {"ThrottleTimeMs": 0, "AllowReplicationFactorChange": request.get("AllowReplicationFactorChange", True),
                "ErrorCode": nc, "ErrorMessage": None, "Responses": []}
    if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        return {"ThrottleTimeMs": 0, "ErrorCode": nc, "ErrorMessage": None, "Topics": []}
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        return {"ThrottleTimeMs": 0, "Results": [
            {"User": u["Name"], "ErrorCode": nc, "ErrorMessage": None}
            for u in [*(request.get("Deletions") or []), *(request.get("Upsertions") or [])]]}
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return {"ThrottleTimeMs": 0, "Entries": [
            {"ErrorCode": nc, "ErrorMessage": None, "Entity": e["Entity"]} for e in request["Entries"]]}
    if api_key == ApiKey.ALLOCATE_PRODUCER_IDS:
        return {"ThrottleTimeMs": 0, "ErrorCode": nc, "ProducerIdStart": -1, "ProducerIdLen": 0}
    if api_key in (ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        return acls_not_controller(api_key == ApiKey.CREATE_ACLS, request, nc)
    if api_key == ApiKey.ASSIGN_REPLICAS_TO_DIRS:
        return {"ThrottleTimeMs": 0, "ErrorCode": nc, "Directories": []}
    raise AssertionError(f"no NOT_CONTROLLER answer for api {api_key}")
