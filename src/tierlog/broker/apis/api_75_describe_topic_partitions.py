"""DescribeTopicPartitions (75), v0 (KIP-966): topics, partitions, leader epochs, ISR and ELR.

Answered from this broker's metadata image, with Kafka's paging rules
(:func:`describe`, pure):

- an empty Topics asks for every topic; topics are answered sorted by name,
  each from partition 0 except the Cursor's topic, which starts at the
  Cursor's partition; topics named before the Cursor's topic are skipped;
- at most ``min(ResponsePartitionLimit, max.request.partition.size.limit)``
  partitions (at least 1) are answered; when a topic is cut short, NextCursor
  names it and its first partition left out; when the limit is used up
  exactly at the end of a topic and another topic follows, NextCursor names
  that topic at partition 0 (whether or not it exists);
- a named topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION (an
  illegal name INVALID_TOPIC_EXCEPTION) and takes none of the limit; with
  an empty Topics nothing is answered for it;
- a Cursor whose topic is not among the named topics, or whose partition is
  negative, answers INVALID_REQUEST for every named topic (Kafka's error
  response for the request);
- ACLs: a topic the caller may not DESCRIBE is left out, or answered
  TOPIC_AUTHORIZATION_FAILED when named; TopicAuthorizedOperations is the caller's bit set.

Per partition: the leader if it is a registered broker (else -1), the leader
epoch, replicas and ISR as in the image, the ELR and last known ELR (KIP-966,
null when empty) and, as offline replicas, those on brokers that are not
registered or are fenced. tierlog's tagged ``LocalLogCoverage`` (KIP-1303)
lists every replica's reported local log coverage from the image and whether
it is eligible now, with the effective thresholds: topic override, else the
cluster-wide dynamic value, else this broker's server.properties default
(the controller elects with *its* static default; ``tierlog up`` gives every
node the same file). Left out: internal topics (tierlog has none; IsInternal is
true only for __consumer_offsets).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from tierlog.metadata.acls import ResourceType
from tierlog.metadata.image import MetadataImage, PartitionInfo, TopicInfo
from tierlog.metadata.leader_election import EligibilityThresholds, is_eligible
from tierlog.metadata.topic_rules import RuleError, validate_topic_name
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_topic_partitions import (
        Cursor,
        DescribeTopicPartitionsRequest,
        DescribeTopicPartitionsResponse,
        DescribeTopicPartitionsResponsePartition,
        DescribeTopicPartitionsResponseTopic,
        ReplicaLocalLogCoverage,
    )

__all__ = ["API_KEY", "MAX_VERSION", "MIN_VERSION", "TopicAccess", "describe", "handle"]

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0
PARTITION_LIMIT_CONFIG = "max.request.partition.size.limit"
NO_LEADER = -1
NO_TOPIC_ID = bytes(16)
OPS_NOT_COMPUTED = -2147483648


class TopicAccess(NamedTuple):
    """What the ACLs let the caller see: ``may_describe(name)``, ``operations(name)`` (a bit set)."""

    may_describe: Callable[[str], bool]
    operations: Callable[[str], int]


_OPEN = TopicAccess(lambda name: True, lambda name: OPS_NOT_COMPUTED)
ELIGIBLE_MS, ELIGIBLE_BYTES = "leader.election.eligible.local.log.ms", "leader.election.eligible.local.log.bytes"
_OFF = EligibilityThresholds()          # KIP-1303 off (-1, -1)


def handle(broker: HandlerContext, header: RequestHeader,
           request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    defaults = EligibilityThresholds(_int(broker.config[ELIGIBLE_MS]), _int(broker.config[ELIGIBLE_BYTES]))
    access = TopicAccess(lambda name: authz.topic(broker, header, authz.Op.DESCRIBE, name),
                         lambda name: authz.authorized_operations(broker, header, ResourceType.TOPIC, name))
    return describe(broker.image, request, broker.config[PARTITION_LIMIT_CONFIG], defaults, broker.clock_ms(), access)


def describe(image: MetadataImage, request: DescribeTopicPartitionsRequest, limit_max: int,
             eligibility_defaults: EligibilityThresholds = _OFF, now_ms: int = 0,
             access: TopicAccess | None = None) -> DescribeTopicPartitionsResponse:
    """The response to ``request`` from ``image``, answering at most ``limit_max`` partitions;
    ``eligibility_defaults`` are the static KIP-1303 thresholds, ``now_ms`` the time they are judged at;
    ``access``: the ACLs (a topic it refuses is left out, or TOPIC_AUTHORIZATION_FAILED when named;
    TopicAuthorizedOperations); None: everything allowed, operations not computed."""
    access = access or _OPEN
    judge = (eligibility_defaults, now_ms)
    named = [t["Name"] for t in request.get("Topics") or []]
    cursor = request.get("Cursor")
    if _bad_cursor(named, cursor):
        return _response([_topic_error(ErrorCode.INVALID_REQUEST, name) for name in named])
    start_name = cursor["TopicName"] if cursor else ""
    names = sorted(n for n in set(named or image.topics) if n >= start_name)
    budget = max(min(limit_max, request.get("ResponsePartitionLimit", limit_max)), 1)
    topics: list[DescribeTopicPartitionsResponseTopic] = []
    next_cursor: Cursor | None = None
    for name in names:
        if budget <= 0:
            next_cursor = {"TopicName": name, "PartitionIndex": 0}
            break
        if not access.may_describe(name):
            if named:
                topics.append(_topic_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name))
            continue
        topic = image.topics.get(name)
        if topic is None:
            if named:
                topics.append(_unknown(name))
            continue
        first = cursor["PartitionIndex"] if cursor and name == start_name else 0
        answered, next_index = _partitions(image, topic, first, budget, judge)
        topics.append(_topic(topic, answered, access.operations(name)))
        if next_index is not None:
            next_cursor = {"TopicName": name, "PartitionIndex": next_index}
            break
        budget -= len(answered)
    return _response(topics, next_cursor)


def _bad_cursor(named: list, cursor: Cursor | None) -> bool:
    """Kafka's INVALID_REQUEST cases: a negative cursor partition, or a cursor topic not named."""
    if cursor is None:
        return False
    return cursor["PartitionIndex"] < 0 or bool(named) and cursor["TopicName"] not in named


def _partitions(image: MetadataImage, topic: TopicInfo, first: int, budget: int,
                judge: tuple) -> tuple[list[DescribeTopicPartitionsResponsePartition], int | None]:
    """Partitions [first, first + budget) of ``topic``, and the first one left out (None if none)."""
    end = min(len(topic.partitions), first + budget)
    defaults, now_ms = judge
    thresholds = EligibilityThresholds(_int(image.config(ELIGIBLE_MS, topic, defaults.local_log_ms)),
                                       _int(image.config(ELIGIBLE_BYTES, topic, defaults.local_log_bytes)))
    answered = [_partition(image, p, thresholds, now_ms) for p in topic.partitions[first:end]]
    return answered, (end if end < len(topic.partitions) else None)


def _coverage(p: PartitionInfo, thresholds: EligibilityThresholds, now_ms: int) -> list[ReplicaLocalLogCoverage]:
    """KIP-1303: each replica's reported local log coverage and its eligibility now."""
    known = p.coverage()
    out: list[ReplicaLocalLogCoverage] = []
    for r in p.replicas:
        c = known.get(r)
        out.append({"BrokerId": r,
                    "LocalLogStartTimestamp": c.local_log_start_timestamp if c else -1,
                    "LocalLogSizeBytes": c.local_log_size_bytes if c else -1,
                    "Eligible": is_eligible(c, thresholds, now_ms)})
    return out


def _int(value, default: int = -1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _partition(image: MetadataImage, p: PartitionInfo, thresholds: EligibilityThresholds = _OFF,
               now_ms: int = 0) -> DescribeTopicPartitionsResponsePartition:
    brokers = image.brokers
    return {
        "ErrorCode": ErrorCode.NONE, "PartitionIndex": p.partition,
        "LeaderId": p.leader if p.leader in brokers else NO_LEADER,
        "LeaderEpoch": p.leader_epoch,
        "ReplicaNodes": list(p.replicas), "IsrNodes": list(p.isr),
        "EligibleLeaderReplicas": list(p.elr) or None,
        "LastKnownElr": list(p.last_known_elr) or None,
        "OfflineReplicas": [r for r in p.replicas if r not in brokers or brokers[r].fenced],
        "LocalLogCoverage": _coverage(p, thresholds, now_ms),
    }


def _topic(topic: TopicInfo, partitions: list[DescribeTopicPartitionsResponsePartition],
           operations: int = OPS_NOT_COMPUTED) -> DescribeTopicPartitionsResponseTopic:
    return {"ErrorCode": ErrorCode.NONE, "Name": topic.name, "TopicId": topic.topic_id,
            "IsInternal": topic.name == "__consumer_offsets",
            "Partitions": partitions, "TopicAuthorizedOperations": operations}


def _unknown(name: str) -> DescribeTopicPartitionsResponseTopic:
    try:
        validate_topic_name(name)
    except RuleError as e:
        return _topic_error(e.error_code, name)
    return _topic_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)


def _topic_error(code: int, name: str) -> DescribeTopicPartitionsResponseTopic:
    return {"ErrorCode": code, "Name": name, "TopicId": NO_TOPIC_ID, "IsInternal": False,
            "Partitions": [], "TopicAuthorizedOperations": OPS_NOT_COMPUTED}


def _response(topics: list[DescribeTopicPartitionsResponseTopic],
              next_cursor: Cursor | None = None) -> DescribeTopicPartitionsResponse:
    return {"ThrottleTimeMs": 0, "Topics": topics, "NextCursor": next_cursor}
