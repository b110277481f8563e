"""FindCoordinator (10), v0-6: the broker leading a group's ``__consumer_offsets`` partition.

Key type 0 (group) only: there is no transaction or share coordinator, so other
key types answer COORDINATOR_NOT_AVAILABLE (v0-3) per key.  v4+ is batched
(CoordinatorKeys).  The first request creates ``__consumer_offsets`` through the
controller (offsets.topic.num.partitions, offsets.topic.replication.factor or
the number of live brokers if fewer, cleanup.policy=compact,
offsets.topic.segment.bytes), answering COORDINATOR_NOT_AVAILABLE until its
partition has a leader. The coordinator's address is its endpoint on the listener the
request came in on (as in Kafka: a TLS or SASL client is never sent to another
listener's port); a coordinator without one answers COORDINATOR_NOT_AVAILABLE.
ACLs: DESCRIBE on the group (transactional id), else GROUP_AUTHORIZATION_FAILED
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""
from tierlog.broker.group_coordinator import OFFSETS_TOPIC
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.FIND_COORDINATOR, 0, 6
GROUP_KEY_TYPE = 0
BATCHED_FROM = 4


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
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


def _find(broker, key: str, key_type: int, listener: str | None) -> dict:
    if key_type != GROUP_KEY_TYPE:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no coordinator for key type {key_type}")
    topic = broker.image.topics.get(OFFSETS_TOPIC)
    if topic is None:
        _create_offsets_topic(broker)
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC} is being created")
    index = broker.groups.partition_for(key)
    leader = topic.partitions[index].leader if index < len(topic.partitions) else -1
    info = broker.endpoint(leader) if leader >= 0 else None
    if info is None:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC}-{index} has no leader")
    address = info.address(listener)      # the coordinator on the listener the client came in on
    if address is None:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"node {leader} has no {listener} listener")
    return {"Key": key, "NodeId": leader, "Host": address[0], "Port": address[1],
            "ErrorCode": ErrorCode.NONE, "ErrorMessage": None}


_REFUSED = {GROUP_KEY_TYPE: ErrorCode.GROUP_AUTHORIZATION_FAILED, 1: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def _may_describe(broker, header, key: str, key_type: int) -> bool:
    if key_type == GROUP_KEY_TYPE:
        return authz.group(broker, header, authz.Op.DESCRIBE, key)
    return authz.transactional_id(broker, header, authz.Op.DESCRIBE, key)


def _error(key: str, code: int, message: str) -> dict:
    return {"Key": key, "NodeId": -1, "Host": "", "Port": -1, "ErrorCode": code, "ErrorMessage": message}


def _create_offsets_topic(broker) -> None:
    if not broker.groups.should_create_topic():
        return
    live = sum(1 for b in broker.image.brokers.values() if not b.fenced)
    groups = broker.groups
    body = {"Topics": [{"Name": OFFSETS_TOPIC, "NumPartitions": groups.num_partitions,
                        "ReplicationFactor": max(1, min(groups.replication_factor, live)), "Assignments": [],
                        "Configs": [{"Name": "cleanup.policy", "Value": "compact"},
                                    {"Name": "segment.bytes", "Value": str(groups.segment_bytes)},
                                    {"Name": "compression.type", "Value": "producer"},
                                    {"Name": "remote.storage.enable", "Value": "false"}]}],   # internal: never tiered
            "timeoutMs": 10000, "validateOnly": False}
    broker.background.spawn(broker.controller_channel.send(ApiKey.CREATE_TOPICS, body, 10.0, 7),
                            name=f"create-{OFFSETS_TOPIC}")
