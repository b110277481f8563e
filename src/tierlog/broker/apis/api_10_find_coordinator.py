"""FindCoordinator (10), v0-6: the broker leading a group's ``__consumer_offsets`` partition
(key type 0), a transactional id's ``__transaction_state`` partition (key type 1) or a
share-partition's ``__share_group_state`` partition (key type 2, KIP-932: the key is
"group:topicId:partition", asked by brokers; CLUSTER_ACTION on the cluster, else
CLUSTER_AUTHORIZATION_FAILED).  Other key types answer COORDINATOR_NOT_AVAILABLE per key.  v4+ is batched
(CoordinatorKeys).  The first request of a key type creates its topic through the
controller, answering COORDINATOR_NOT_AVAILABLE until its partition has a leader:
``__consumer_offsets`` with offsets.topic.num.partitions, offsets.topic.replication.factor
(or the number of live brokers if fewer), cleanup.policy=compact, offsets.topic.segment.bytes;
``__transaction_state`` with transaction.state.log.num.partitions,
transaction.state.log.replication.factor (or fewer brokers), min.insync.replicas
transaction.state.log.min.isr (at most the replication factor), compact,
transaction.state.log.segment.bytes; ``__share_group_state`` with
share.coordinator.state.topic.num.partitions, .replication.factor, .min.isr, .segment.bytes and
cleanup.policy=delete with no retention (as Kafka: its ShareUpdate records share a key, so
compaction would lose all but the last).  None is ever tiered.  The coordinator's address is its endpoint on the listener the
request came in on (as in Kafka: a TLS or SASL client is never sent to another
listener's port); a coordinator without one answers COORDINATOR_NOT_AVAILABLE.
ACLs: DESCRIBE on the group (transactional id), else GROUP_AUTHORIZATION_FAILED
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.broker.group_coordinator import OFFSETS_TOPIC
from tierlog.broker.internal_topics import create_internal_topic, create_share_state_topic, replication_factor
from tierlog.broker.share_coordinator import SHARE_STATE_TOPIC
from tierlog.broker.transaction_coordinator import TXN_TOPIC
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.find_coordinator import (
        Coordinator,
        FindCoordinatorRequest,
        FindCoordinatorResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.FIND_COORDINATOR, 0, 6
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2
BATCHED_FROM = 4


def handle(broker: HandlerContext, header: RequestHeader, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    batched = header.api_version >= BATCHED_FROM
    keys = request["CoordinatorKeys"] if batched else [request["Key"]]
    key_type = request.get("KeyType", GROUP_KEY_TYPE)
    found = [_find(broker, key, key_type, header.listener) if _may_describe(broker, header, key, key_type)
             else _error(key, _REFUSED.get(key_type, ErrorCode.GROUP_AUTHORIZATION_FAILED), None) for key in keys]
    if batched:
        return {"ThrottleTimeMs": 0, "Coordinators": found}
    one = found[0]
    return {"ThrottleTimeMs": 0, "ErrorCode": one["ErrorCode"], "ErrorMessage": one["ErrorMessage"],
            "NodeId": one["NodeId"], "Host": one["Host"], "Port": one["Port"]}


def _find(broker, key: str, key_type: int, listener: str | None) -> Coordinator:
    if key_type == GROUP_KEY_TYPE:
        name, coordinator, create = OFFSETS_TOPIC, broker.groups, _create_offsets_topic
    elif key_type == TRANSACTION_KEY_TYPE:
        name, coordinator, create = TXN_TOPIC, broker.transactions, _create_transaction_topic
    elif key_type == SHARE_KEY_TYPE:
        name, coordinator, create = SHARE_STATE_TOPIC, _ShareKeys(broker), create_share_state_topic
    else:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no coordinator for key type {key_type}")
    topic = broker.image.topics.get(name)
    if topic is None:
        create(broker)
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{name} is being created")
    index = coordinator.partition_for(key)
    leader = broker.image_leader(name, index)     # the coordinators' LOAD_IN_PROGRESS rule reads the same
    info = broker.endpoint(leader) if leader >= 0 else None
    if info is None:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{name}-{index} has no leader")
    address = info.address(listener)      # the coordinator on the listener the client came in on
    if address is None:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"node {leader} has no {listener} listener")
    return {"Key": key, "NodeId": leader, "Host": address[0], "Port": address[1],
            "ErrorCode": ErrorCode.NONE, "ErrorMessage": None}


_REFUSED = {GROUP_KEY_TYPE: ErrorCode.GROUP_AUTHORIZATION_FAILED, 1: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            SHARE_KEY_TYPE: ErrorCode.CLUSTER_AUTHORIZATION_FAILED}


class _ShareKeys:
    """A share-partition key's ``__share_group_state`` partition (the share coordinator's hash)."""

    def __init__(self, broker):
        self._coordinator = broker.share_states

    def partition_for(self, key: str) -> int:
        return self._coordinator.partition_for_key(key)


def _may_describe(broker, header, key: str, key_type: int) -> bool:
    if key_type == GROUP_KEY_TYPE:
        return authz.group(broker, header, authz.Op.DESCRIBE, key)
    if key_type == SHARE_KEY_TYPE:
        return authz.cluster(broker, header, authz.Op.CLUSTER_ACTION)
    return authz.transactional_id(broker, header, authz.Op.DESCRIBE, key)


def _error(key: str, code: int, message: str | None) -> Coordinator:
    return {"Key": key, "NodeId": -1, "Host": "", "Port": -1, "ErrorCode": code, "ErrorMessage": message}


def _create_offsets_topic(broker) -> None:
    if broker.groups.should_create_topic():
        groups = broker.groups
        create_internal_topic(broker, OFFSETS_TOPIC, groups.num_partitions, replication_factor(broker, groups.replication_factor),
                {"cleanup.policy": "compact", "segment.bytes": str(groups.segment_bytes),
                 "compression.type": "producer"})


def _create_transaction_topic(broker) -> None:
    if broker.transactions.should_create_topic():
        txns = broker.transactions
        rf = replication_factor(broker, txns.replication_factor)
        create_internal_topic(broker, TXN_TOPIC, txns.num_partitions, rf,
                {"cleanup.policy": "compact", "segment.bytes": str(txns.segment_bytes),
                 "min.insync.replicas": str(max(1, min(txns.min_isr, rf))), "compression.type": "producer"})
