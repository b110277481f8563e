"""Produce (0), v3-12: validate each batch (header, CRC), stamp offsets in place, append.

Batches stay bytes: the records are never decoded.  acks must be -1, 0 or 1
(else INVALID_REQUIRED_ACKS); acks=0 gets no response.  acks=1 is answered
after the leader's append; acks=-1 waits in the partition's purgatory until the
high watermark covers the batch (every ISR member has it) or TimeoutMs passes
(REQUEST_TIMED_OUT), the connection meanwhile free for the next request (``net.pipelining``), and is refused with
NOT_ENOUGH_REPLICAS before the append when the ISR is under min.insync.replicas (all of it in ``Partition.append_as_leader``,
through ``ReplicaManager.append_records``, which parks acks=all).  v10 errors carry KIP-951's CurrentLeader and
NodeEndpoints; a partition this broker may not know the leader of yet waits for
its metadata to catch up first (``stale_metadata``).  Idempotent producers are served by the partition's producer state: a retried
batch is answered with its original offsets and not appended again, a sequence gap with OUT_OF_ORDER_SEQUENCE_NUMBER,
an old producer epoch with INVALID_PRODUCER_EPOCH.  Clients never write to
``__consumer_offsets`` or ``__transaction_state`` (INVALID_TOPIC_EXCEPTION, Kafka's
"Cannot append to internal topic"; the group coordinator appends without this API).  A batch
with invalid records (keyless records to a compacted topic) is refused whole with INVALID_RECORD,
its RecordErrors (v8+, KIP-467) naming each bad record's index and ErrorMessage summing them up.
Transactional batches: before a producer's first batch of a transaction on a partition the leader
verifies with the coordinator that the partition is in the transaction (KIP-890 part 1,
``txn_verification``: INVALID_TXN_STATE if not (TRANSACTION_ABORTABLE from v11), NOT_ENOUGH_REPLICAS while
the coordinator cannot answer); from v12 (a transaction.version 2 client, KIP-890 part 2) the leader
adds the partition to the transaction instead, the client having sent no AddPartitionsToTxn.
ACLs (``authz``): WRITE on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions; a
transactional request also WRITE on its transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tierlog.net.pipelining import release_connection
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from ..leader_hint import HINTED_ERRORS, LeaderHints
from ..partition import AppendOrigin, append_origin_error
from . import authz
from .context import HandlerContext
from .stale_metadata import catch_up_once, produce_may_be_stale

if TYPE_CHECKING:
    from tierlog.protocol.typed.produce import (
        PartitionProduceData,
        PartitionProduceResponse,
        ProduceRequest,
        ProduceResponse,
        TopicProduceResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.PRODUCE, 3, 12


async def handle(broker: HandlerContext, header: RequestHeader, request: ProduceRequest) -> ProduceResponse | None:
    if produce_may_be_stale(broker, request):
        await catch_up_once(broker)
    acks = request["Acks"]
    hints = LeaderHints(broker, header.listener)
    refused = await broker.txn_verifier.verify(request, header.api_version) \
        if request.get("TransactionalId") else {}                               # KIP-890 parts 1 and 2
    topics: list[TopicProduceResponse] = []
    waits: list[tuple[str, PartitionProduceResponse, asyncio.Future]] = []
    writable, denied = _writable(broker, header, request)
    for t in request["TopicData"]:
        if t["Name"] not in writable:
            parts = [_not_authorized(p["Index"], denied) for p in t["PartitionData"]]
        else:
            parts = [_produce_one(broker, t["Name"], p, acks, hints, request.get("TimeoutMs", 30000), waits,
                                  refused.get((t["Name"], p["Index"])))
                     for p in t["PartitionData"]]
        topics.append({"Name": t["Name"], "PartitionResponses": parts})
    if waits:
        release_connection()        # appended in request order; the wait for followers need not hold the connection
        errors = [await waits[0][2]] if len(waits) == 1 else await asyncio.gather(*(fut for _, _, fut in waits))
        for (topic, resp, _), error in zip(waits, errors):
            if error:
                resp["ErrorCode"] = error
                if error in HINTED_ERRORS:
                    resp["CurrentLeader"] = hints.current_leader(topic, resp["Index"])
    if acks == 0:
        return None
    return {"Responses": topics, "ThrottleTimeMs": 0, "NodeEndpoints": hints.node_endpoints()}


def _not_authorized(index: int, code: ErrorCode) -> PartitionProduceResponse:
    return {"Index": index, "ErrorCode": code, "BaseOffset": -1,
            "LogAppendTimeMs": -1, "LogStartOffset": -1, "RecordErrors": [], "ErrorMessage": None}


def _writable(broker, header, request: ProduceRequest) -> tuple[set, ErrorCode]:
    """The topics this request may write, and the error of the others (Kafka's handleProduceRequest)."""
    txn_id = request.get("TransactionalId")
    if txn_id is not None and not authz.transactional_id(broker, header, authz.Op.WRITE, txn_id):
        return set(), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    names = (t["Name"] for t in request["TopicData"])
    return authz.allowed_topics(broker, header, authz.Op.WRITE, names), ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _produce_one(broker, topic, pdata: PartitionProduceData, acks, hints, timeout_ms, waits,
                 refused=None) -> PartitionProduceResponse:
    index = pdata["Index"]
    resp: PartitionProduceResponse = {"Index": index, "ErrorCode": ErrorCode.NONE, "BaseOffset": -1, "LogAppendTimeMs": -1,
            "LogStartOffset": -1, "RecordErrors": [], "ErrorMessage": None}
    if refused:
        error, message = refused, "the partition is not in the producer's transaction (KIP-890)"
    else:
        error, message = _append(broker, topic, index, pdata["Records"], acks, resp, timeout_ms, waits)
    if error:
        resp["ErrorCode"], resp["ErrorMessage"] = error, message
        if error in HINTED_ERRORS:
            resp["CurrentLeader"] = hints.current_leader(topic, index)
    return resp


def _append(broker, topic, index, records, acks, resp, timeout_ms, waits):
    if acks not in (-1, 0, 1):
        return ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks} is not one of -1, 0, 1"
    error, message = append_origin_error(topic, AppendOrigin.CLIENT)
    if error:
        return error, message
    part, error = broker.led_partition(topic, index)
    if error:
        return error, None
    if not records:
        return ErrorCode.INVALID_RECORD, "the produce request has no records"
    outcome, fut = broker.replicas.append_records(part, records, AppendOrigin.CLIENT, acks, timeout_ms)
    if outcome.error:
        resp["RecordErrors"] = [{"BatchIndex": i, "BatchIndexErrorMessage": m} for i, m in outcome.record_errors]
        return outcome.error, outcome.message
    if fut is not None:
        waits.append((topic, resp, fut))
    resp["BaseOffset"] = outcome.base_offset
    resp["LogAppendTimeMs"] = outcome.log_append_time_ms
    resp["LogStartOffset"] = outcome.log_start_offset
    return ErrorCode.NONE, None
