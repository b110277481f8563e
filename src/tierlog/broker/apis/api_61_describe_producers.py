"""DescribeProducers (61), v0 (KIP-664): the producers a partition's leader knows, with the
first offset of each one's open transaction (CurrentTxnStartOffset, -1 without one) and the
coordinator epoch of its latest marker.  Per partition NOT_LEADER_OR_FOLLOWER off the leader,
UNKNOWN_TOPIC_OR_PARTITION for one that does not exist, TOPIC_AUTHORIZATION_FAILED without READ on
its topic (Kafka).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_producers import (
        DescribeProducersRequest,
        DescribeProducersResponse,
        PartitionResponse,
        ProducerState,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_PRODUCERS, 0, 0


def handle(broker: HandlerContext, header: RequestHeader, request: DescribeProducersRequest) -> DescribeProducersResponse:
    readable = authz.allowed_topics(broker, header, authz.Op.READ, (t["Name"] for t in request["Topics"]))
    return {"ThrottleTimeMs": 0, "Topics": [
        {"Name": t["Name"], "Partitions": [_partition(broker, t["Name"], i) if t["Name"] in readable else _refused(i)
                                           for i in t["PartitionIndexes"]]}
        for t in request["Topics"]]}


def _refused(index: int) -> PartitionResponse:
    return {"PartitionIndex": index, "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "ErrorMessage": None,
            "ActiveProducers": []}


def _partition(broker, topic: str, index: int) -> PartitionResponse:
    part, error = broker.led_partition(topic, index)
    if error:
        return {"PartitionIndex": index, "ErrorCode": error, "ErrorMessage": None, "ActiveProducers": []}
    producers: list[ProducerState] = [{"ProducerId": p.producer_id, "ProducerEpoch": p.epoch, "LastSequence": p.last_sequence,
                  "LastTimestamp": p.last_timestamp, "CoordinatorEpoch": p.coordinator_epoch,
                  "CurrentTxnStartOffset": p.txn_first_offset} for p in part.active_producers()]
    return {"PartitionIndex": index, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "ActiveProducers": producers}
