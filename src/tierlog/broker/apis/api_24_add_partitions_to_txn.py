"""AddPartitionsToTxn (24), v0-5: a transactional producer adds partitions to its transaction
before its first write to each (KIP-98), at the transaction coordinator of its id (v0-3);
v4+ is the broker-to-broker batched form, whose VerifyOnly transactions a partition leader
sends before a producer's first transactional batch there (KIP-890 part 1): per partition NONE
if it is in the producer's ongoing transaction, else TRANSACTION_ABORTABLE (or the producer's
error for all of them).

One error for every partition (the coordinator's: NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
below v2), CONCURRENT_TRANSACTIONS, ...); a partition
that does not exist answers UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED
(nothing is added), as Kafka answers.  ACLs (Kafka's handleAddPartitionsToTxnRequest): v0-3 need
WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED everywhere) and WRITE on
each topic (TOPIC_AUTHORIZATION_FAILED there, OPERATION_NOT_ATTEMPTED elsewhere); v4+ is for
brokers only: CLUSTER_ACTION on the cluster (else CLUSTER_AUTHORIZATION_FAILED). A v4+ request
carries the verifications of many producers (the leaders group them per coordinator): its
transactions are decided side by side, so one held for its previous transaction's Complete*
write does not hold the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.add_partitions_to_txn import (
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnResponse,
        AddPartitionsToTxnResult,
        AddPartitionsToTxnTransaction,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5
PRODUCER_FENCED_FROM = 2           # older clients do not know PRODUCER_FENCED (Kafka answers 47)
BATCHED_FROM = 4


def handle(broker: HandlerContext, header: RequestHeader, request: AddPartitionsToTxnRequest
           ) -> AddPartitionsToTxnResponse | Awaitable[AddPartitionsToTxnResponse]:
    """The answer; at once for a leaders' request of VerifyOnly transactions only (each decided from
    the coordinator's state in process: no task per request), else an awaitable of it."""
    if header.api_version >= BATCHED_FROM:
        if not authz.cluster(broker, header, authz.Op.CLUSTER_ACTION):
            return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    "ResultsByTransaction": []}
        transactions = request["Transactions"]
        if all(t["VerifyOnly"] for t in transactions):
            return _batched_answer([_verified(broker, t) for t in transactions])
        return _batched_async(broker, transactions)
    return _add(broker, header, request)


async def _add(broker, header: RequestHeader, request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    """A producer's own request (v0-3): the partitions added, after the coordinator's write."""
    topics = request["V3AndBelowTopics"]
    wanted = [(t["Name"], index) for t in topics for index in t["Partitions"]]
    refused = _refused(broker, header, request["V3AndBelowTransactionalId"], wanted)
    if refused:
        errors = {p: refused.get(p, ErrorCode.OPERATION_NOT_ATTEMPTED) for p in wanted}
    else:
        error = await broker.transactions.add_partitions(request["V3AndBelowTransactionalId"],
                                                         request["V3AndBelowProducerId"],
                                                         request["V3AndBelowProducerEpoch"], frozenset(wanted))
        if error == ErrorCode.PRODUCER_FENCED and header.api_version < PRODUCER_FENCED_FROM:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        errors = dict.fromkeys(wanted, error)
    return {"ThrottleTimeMs": 0, "ResultsByTopicV3AndBelow": [
        {"Name": t["Name"], "ResultsByPartition": [
            {"PartitionIndex": i, "PartitionErrorCode": errors[(t["Name"], i)]} for i in t["Partitions"]]}
        for t in topics]}


async def _batched_async(broker, transactions: list[AddPartitionsToTxnTransaction]) -> AddPartitionsToTxnResponse:
    """A leaders' request with transactions to add (v5, a transaction.version 2 client's first
    write): they are decided side by side."""
    return _batched_answer(list(await asyncio.gather(*(_batched(broker, t) for t in transactions))))


def _batched_answer(results: list[AddPartitionsToTxnResult]) -> AddPartitionsToTxnResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ResultsByTransaction": results}


async def _batched(broker, txn: AddPartitionsToTxnTransaction) -> AddPartitionsToTxnResult:
    if txn["VerifyOnly"]:
        return _verified(broker, txn)
    wanted = [(t["Name"], index) for t in txn["Topics"] for index in t["Partitions"]]
    error = await broker.transactions.add_partitions(txn["TransactionalId"], txn["ProducerId"],
                                                     txn["ProducerEpoch"], frozenset(wanted))
    return _result(txn, dict.fromkeys(wanted, error))


def _verified(broker, txn: AddPartitionsToTxnTransaction) -> AddPartitionsToTxnResult:
    """A VerifyOnly transaction's answer (KIP-890 part 1), from the coordinator's state as it is."""
    wanted = [(t["Name"], index) for t in txn["Topics"] for index in t["Partitions"]]
    return _result(txn, broker.transactions.verify_partitions(txn["TransactionalId"], txn["ProducerId"],
                                                              txn["ProducerEpoch"], wanted))


def _result(txn: AddPartitionsToTxnTransaction, errors: dict) -> AddPartitionsToTxnResult:
    return {"TransactionalId": txn["TransactionalId"], "TopicResults": [
        {"Name": t["Name"], "ResultsByPartition": [
            {"PartitionIndex": i, "PartitionErrorCode": errors[(t["Name"], i)]} for i in t["Partitions"]]}
        for t in txn["Topics"]]}


def _refused(broker, header: RequestHeader, transactional_id: str, wanted: list) -> dict:
    """Partition -> why it cannot be added (ACLs first, then existence); empty: all can."""
    if not authz.transactional_id(broker, header, authz.Op.WRITE, transactional_id):
        return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    writable = authz.allowed_topics(broker, header, authz.Op.WRITE, (name for name, _ in wanted))
    return {p: ErrorCode.TOPIC_AUTHORIZATION_FAILED if p[0] not in writable else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            for p in wanted if p[0] not in writable or not _exists(broker.image, *p)}


def _exists(image, topic: str, index: int) -> bool:
    info = image.topics.get(topic)
    return info is not None and 0 <= index < len(info.partitions)
