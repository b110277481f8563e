"""Metadata (3), v1-13: brokers, controller, topics with ids, partitions with leaders.

A request for an unknown topic creates it when ``auto.create.topics.enable`` is
on and the client allows it (AllowAutoTopicCreation, v4+; always for older
versions), except ``__cluster_metadata``, which is never a topic (its creation is
refused: UNKNOWN_TOPIC_OR_PARTITION, Kafka's answer once its creation failed).  An unknown topic with an illegal name
(empty, ".", "..", longer than 249 characters, characters other than ASCII
letters, digits, ".", "_" and "-") answers INVALID_TOPIC_EXCEPTION, auto-create
or not, as Kafka does, so a producer fails its records at once.  Offline replicas are always empty.
ACLs (``authz``): a topic the principal may not DESCRIBE is left out of an all-topics
answer and answered TOPIC_AUTHORIZATION_FAILED when named (whether or not it exists);
auto-creation needs CREATE on the cluster or the topic (else TOPIC_AUTHORIZATION_FAILED).
Include{Cluster,Topic}AuthorizedOperations get the real bit sets (else -2147483648). Brokers are the unfenced ones, each at its
endpoint on the listener the request came in on (a broker without one is left out, as
Kafka's getAliveBrokerNodes). The v13 top-level ErrorCode is always 0 (this
broker never asks a client to rebootstrap).

v10+ may name a topic by TopicId (Name null): an unknown id answers
UNKNOWN_TOPIC_ID, an entry with neither a name nor an id INVALID_REQUEST. The
response's Name is nullable only from v12, so v10-11 answers "" there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.metadata.acls import CLUSTER_NAME, ResourceType
from tierlog.metadata.topic_rules import (
    CLUSTER_METADATA_TOPIC,
    RuleError,
    validate_topic_name,
)
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.metadata import (
        MetadataRequest,
        MetadataResponse,
        MetadataResponseBroker,
        MetadataResponseTopic,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.METADATA, 1, 13
NO_TOPIC_ID = bytes(16)
INTERNAL_TOPICS = frozenset({"__consumer_offsets"})     # Kafka's internal topics that clients see
OPS_NOT_REQUESTED = -2147483648


def handle(broker: HandlerContext, header: RequestHeader, request: MetadataRequest) -> MetadataResponse:
    names = _requested_names(broker, header, request)
    allow_create = request.get("AllowAutoTopicCreation", True) if header.api_version >= 4 else True
    topics = [_topic(broker, header, name, allow_create) for name in names]
    if request.get("IncludeTopicAuthorizedOperations"):
        for t in topics:
            name = t["Name"]
            if t["ErrorCode"] == ErrorCode.NONE and name is not None:      # a found topic has its name
                t["TopicAuthorizedOperations"] = authz.authorized_operations(broker, header, ResourceType.TOPIC, name)
    if header.api_version < 12:
        for t in topics:
            t["Name"] = t["Name"] if t["Name"] is not None else ""
    image = broker.image
    return {
        "ThrottleTimeMs": 0,
        "Brokers": _brokers(image, header.listener),
        "ClusterId": image.cluster_id,
        "ControllerId": broker.node_id,     # KRaft: clients reach the controller through a broker
        "Topics": topics,
        "ClusterAuthorizedOperations": (authz.authorized_operations(broker, header, ResourceType.CLUSTER,
                                                                    CLUSTER_NAME)
                                        if request.get("IncludeClusterAuthorizedOperations") else OPS_NOT_REQUESTED),
        "ErrorCode": ErrorCode.NONE,
    }


def _brokers(image, listener) -> list[MetadataResponseBroker]:
    """Unfenced brokers, each at its endpoint on the request's listener (left out when it has none)."""
    out: list[MetadataResponseBroker] = []
    for b in image.brokers.values():
        address = None if b.fenced else b.address(listener)
        if address is not None:
            out.append({"NodeId": b.node_id, "Host": address[0], "Port": address[1], "Rack": b.rack})
    return out


def _requested_names(broker, header, request: MetadataRequest) -> list:
    wanted = request.get("Topics")
    if wanted is None:      # all topics: those the principal may not describe are left out
        return sorted(authz.allowed_topics(broker, header, authz.Op.DESCRIBE, broker.image.topics))
    names = []
    for t in wanted:
        name: str | tuple[str, bytes] | None = t.get("Name")
        if name is None and t.get("TopicId", NO_TOPIC_ID) != NO_TOPIC_ID:
            found = broker.image.topic_by_id(t["TopicId"])
            name = found.name if found else ("", t["TopicId"])
        names.append(name)
    return names


def _topic(broker, header, name, allow_create) -> MetadataResponseTopic:
    if isinstance(name, tuple):                   # asked by an id we do not know
        return _error(ErrorCode.UNKNOWN_TOPIC_ID, None, name[1])
    if name is None:                              # neither a name nor an id
        return _error(ErrorCode.INVALID_REQUEST, None)
    if not authz.topic(broker, header, authz.Op.DESCRIBE, name):     # existence is not revealed
        return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
    topic = broker.image.topics.get(name)
    if topic is None and not _legal_name(name):
        return _error(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    if topic is None:
        if not (allow_create and broker.config["auto.create.topics.enable"]) or name == CLUSTER_METADATA_TOPIC:
            return _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
        if not (authz.cluster(broker, header, authz.Op.CREATE) or authz.topic(broker, header, authz.Op.CREATE, name)):
            return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
        auto_create(broker, name)
        return _error(ErrorCode.LEADER_NOT_AVAILABLE, name)     # Kafka's answer while it is being created
    return {
        "ErrorCode": ErrorCode.NONE, "Name": topic.name, "TopicId": topic.topic_id,
        "IsInternal": topic.name in INTERNAL_TOPICS,
        "Partitions": [{"ErrorCode": ErrorCode.NONE, "PartitionIndex": p.partition, "LeaderId": p.leader,
                        "LeaderEpoch": p.leader_epoch, "ReplicaNodes": list(p.replicas),
                        "IsrNodes": list(p.isr), "OfflineReplicas": []} for p in topic.partitions],
        "TopicAuthorizedOperations": OPS_NOT_REQUESTED,
    }


def _legal_name(name: str) -> bool:
    """Kafka's Topic.validate (no creation is attempted for an illegal name, with or without
    auto-create: KafkaApis and AutoTopicCreationManager answer INVALID_TOPIC_EXCEPTION)."""
    try:
        validate_topic_name(name)
    except RuleError:
        return False
    return True


def auto_create(broker, name: str) -> None:
    """Ask the controller to create ``name`` with the defaults, in the background (Kafka's
    auto.create.topics.enable); the client's next Metadata request finds it."""
    body = {"Topics": [{"Name": name, "NumPartitions": -1, "ReplicationFactor": -1, "Assignments": [],
                        "Configs": []}], "timeoutMs": 10000, "validateOnly": False}
    broker.background.spawn(broker.controller_channel.send(ApiKey.CREATE_TOPICS, body, 10.0, 7),
                            name=f"auto-create-{name}")


def _error(code, name, topic_id=NO_TOPIC_ID) -> MetadataResponseTopic:
    return {"ErrorCode": code, "Name": name, "TopicId": topic_id, "IsInternal": False, "Partitions": [],
            "TopicAuthorizedOperations": OPS_NOT_REQUESTED}
