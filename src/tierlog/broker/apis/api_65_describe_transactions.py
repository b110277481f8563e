"""DescribeTransactions (65), v0 (KIP-664): transactional ids' state at their coordinator:
state name (Kafka's: "Ongoing", "PrepareCommit", ...), timeout, start time, producer id and
epoch, partitions.  Per id NOT_COORDINATOR off its coordinator, COORDINATOR_LOAD_IN_PROGRESS
while it loads, TRANSACTIONAL_ID_NOT_FOUND for an id it does not know,
TRANSACTIONAL_ID_AUTHORIZATION_FAILED without DESCRIBE on it; partitions of topics the principal
may not DESCRIBE are left out (Kafka).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_transactions import (
        DescribeTransactionsRequest,
        DescribeTransactionsResponse,
        DescribeTransactionsTransactionState,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_TRANSACTIONS, 0, 0


def handle(broker: HandlerContext, header: RequestHeader, request: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    return {"ThrottleTimeMs": 0,
            "TransactionStates": [_describe(broker, header, tid) for tid in request["TransactionalIds"]]}


def _describe(broker, header: RequestHeader, tid: str) -> DescribeTransactionsTransactionState:
    meta, error = broker.transactions.describe(tid)
    if not authz.transactional_id(broker, header, authz.Op.DESCRIBE, tid):
        meta, error = None, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if meta is None:
        return {"ErrorCode": error or ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, "TransactionalId": tid,
                "TransactionState": "", "TransactionTimeoutMs": 0, "TransactionStartTimeMs": -1, "ProducerId": -1,
                "ProducerEpoch": -1, "Topics": []}
    by_topic: dict[str, list[int]] = {}
    describable = authz.allowed_topics(broker, header, authz.Op.DESCRIBE, (t for t, _ in meta.partitions))
    for topic, index in sorted(p for p in meta.partitions if p[0] in describable):
        by_topic.setdefault(topic, []).append(index)
    return {"ErrorCode": ErrorCode.NONE, "TransactionalId": tid, "TransactionState": meta.state.kafka_name,
            "TransactionTimeoutMs": meta.timeout_ms, "TransactionStartTimeMs": meta.start_timestamp_ms,
            "ProducerId": meta.producer_id, "ProducerEpoch": meta.producer_epoch,
            "Topics": [{"Topic": t, "Partitions": ids} for t, ids in by_topic.items()]}
