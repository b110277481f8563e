"""Produce (0), v3-10: validate each batch (header, CRC), stamp offsets in place, append.

Batches stay bytes: the records are never decoded.  acks must be -1, 0 or 1
(else INVALID_REQUIRED_ACKS); acks=0 gets no response.  acks=1 is answered
after the leader's append; acks=-1 waits in the partition's purgatory until the
high watermark covers the batch (every ISR member has it) or TimeoutMs passes
(REQUEST_TIMED_OUT), and is refused with NOT_ENOUGH_REPLICAS before the append
when the ISR is under min.insync.replicas (all of it in ``Partition.append_as_leader``, through
``ReplicaManager.append_records``, which parks acks=all).  v10 errors carry KIP-951's CurrentLeader and
NodeEndpoints; a partition this broker may not know the leader of yet waits for
its metadata to catch up first (``stale_metadata``).  Idempotent producers are served by the partition's producer state: a retried batch is answered with its original
offsets and not appended again, a sequence gap with OUT_OF_ORDER_SEQUENCE_NUMBER,
an old producer epoch with INVALID_PRODUCER_EPOCH.  Clients never write to
``__consumer_offsets`` or ``__transaction_state`` (INVALID_TOPIC_EXCEPTION, Kafka's
"Cannot append to internal topic"; the group coordinator appends without this API).  Left out: transactions
(InitProducerId refuses a TransactionalId, so clients never send transactional batches).
ACLs: WRITE on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions (``authz``).
"""
import asyncio

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from ..leader_hint import HINTED_ERRORS, LeaderHints
from ..partition import AppendOrigin, append_origin_error
from . import authz
from .context import HandlerContext
from .stale_metadata import catch_up_once, produce_may_be_stale

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.PRODUCE, 3, 10


async def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    if produce_may_be_stale(broker, request):
        await catch_up_once(broker)
    acks = request["Acks"]
    hints = LeaderHints(broker, header.listener)
    topics, waits = [], []
    writable = authz.allowed_topics(broker, header, authz.Op.WRITE, (t["Name"] for t in request["TopicData"]))
    for t in request["TopicData"]:
        if t["Name"] not in writable:
            parts = [_refused(p["Index"]) for p in t["PartitionData"]]
        else:
            parts = [_produce_one(broker, t["Name"], p, acks, hints, request.get("TimeoutMs", 30000), waits)
                     for p in t["PartitionData"]]
        topics.append({"Name": t["Name"], "PartitionResponses": parts})
    if waits:
        errors = await asyncio.gather(*(fut for _, _, fut in waits))
        for (topic, resp, _), error in zip(waits, errors):
            if error:
                resp["ErrorCode"] = error
                if error in HINTED_ERRORS:
                    resp["CurrentLeader"] = hints.current_leader(topic, resp["Index"])
    if acks == 0:
        return None
    return {"Responses": topics, "ThrottleTimeMs": 0, "NodeEndpoints": hints.node_endpoints()}


def _refused(index: int) -> dict:
    return {"Index": index, "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "BaseOffset": -1,
            "LogAppendTimeMs": -1, "LogStartOffset": -1, "RecordErrors": [], "ErrorMessage": None}


def _produce_one(broker, topic, pdata, acks, hints, timeout_ms, waits) -> dict:
    index = pdata["Index"]
    resp = {"Index": index, "ErrorCode": ErrorCode.NONE, "BaseOffset": -1, "LogAppendTimeMs": -1,
            "LogStartOffset": -1, "RecordErrors": [], "ErrorMessage": None}
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
        return outcome.error, outcome.message
    if fut is not None:
        waits.append((topic, resp, fut))
    resp["BaseOffset"] = outcome.base_offset
    resp["LogAppendTimeMs"] = outcome.log_append_time_ms
    resp["LogStartOffset"] = outcome.log_start_offset
    return ErrorCode.NONE, None
