"""Produce (0), v3-12: validate each batch (header, CRC), stamp offsets in place, append.

Batches stay bytes: the records are never decoded.  acks must be -1, 0 or 1
(else INVALID_REQUIRED_ACKS); acks=0 gets no response.  acks=1 is answered
after the leader's append; acks=-1 waits in the partition's purgatory until the
high watermark covers the batch (every ISR member has it) or TimeoutMs passes
(REQUEST_TIMED_OUT), the connection meanwhile free for the next request (``net.pipelining``), and is refused with
NOT_ENOUGH_REPLICAS before the append when the ISR is under min.insync.replicas (all of it in ``Partition.append_as_leader``,
through ``ReplicaManager.append_records``, which parks acks=all).  v10 errors carry KIP-951's CurrentLeader and
NodeEndpoints; a partition refused for what this broker may not know yet (it does not lead it, or
the topic is unknown) is tried once more after its metadata caught up (``stale_metadata``; a
transactional request is verified again for it).  The request becomes typed parameters here (one
``_Append`` per partition); the internal-topic rule, leadership, empty records and
min.insync.replicas are checked once, by the partition (``Partition.append_as_leader``).
Idempotent producers are served by the partition's producer state: a retried batch is answered
with its original offsets and not appended again, a sequence gap with OUT_OF_ORDER_SEQUENCE_NUMBER,
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
import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, NamedTuple

from tierlog.net.pipelining import Released, release_connection
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from ..leader_hint import HINTED_ERRORS, LeaderHints
from ..partition import AppendOrigin
from . import authz
from .context import HandlerContext
from .stale_metadata import catch_up_once, may_be_stale

if TYPE_CHECKING:
    from tierlog.protocol.typed.produce import (
        PartitionProduceResponse,
        ProduceRequest,
        ProduceResponse,
        TopicProduceResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.PRODUCE, 3, 12
NOT_IN_TXN = "the partition is not in the producer's transaction (KIP-890)"
_NO_RECORDS = bytearray()


class _Append(NamedTuple):
    """One partition of the request as the handler hands it on: no request dict goes further."""

    topic: str
    partition: int
    records: bytearray                    # empty when the request has none (the partition refuses it)
    resp: PartitionProduceResponse        # filled in place, answered in request order


def handle(broker: HandlerContext, header: RequestHeader,
           request: ProduceRequest) -> ProduceResponse | None | Awaitable[ProduceResponse | None]:
    """The answer, at once when nothing waits (no verification, no catch-up, acks 0 or 1: no task
    per request), else an awaitable of it."""
    acks, timeout_ms = request["Acks"], request.get("TimeoutMs", 30000)
    hints = LeaderHints(broker, header.listener)
    txn_id = request.get("TransactionalId")
    topics: list[TopicProduceResponse] = []
    appends: list[_Append] = []
    writable, denied = _writable(broker, header, request)
    for t in request["TopicData"]:
        name = t["Name"]
        if writable is not None and name not in writable:
            parts = [_response(p["Index"], denied) for p in t["PartitionData"]]
        else:
            parts = []
            for p in t["PartitionData"]:
                resp = _response(p["Index"])
                parts.append(resp)
                appends.append(_Append(name, p["Index"], p["Records"] or _NO_RECORDS, resp))
        topics.append({"Name": name, "PartitionResponses": parts})
    produce = _Produce(broker, header.api_version, txn_id, acks, timeout_ms, hints,
                       None if acks == 0 else {"Responses": topics, "ThrottleTimeMs": 0, "NodeEndpoints": []})
    if txn_id:
        return produce.verified(appends)
    return produce.append(appends, {})


class _Produce:
    """One request's appends after its partitions became ``_Append``s: at once, or (verification,
    catch-up, acks=all) through the coroutines that wait."""

    def __init__(self, broker: HandlerContext, version: int, txn_id: str | None, acks: int, timeout_ms: int,
                 hints: LeaderHints, answer: ProduceResponse | None):
        self.broker, self.version, self.txn_id, self.acks, self.timeout_ms = broker, version, txn_id, acks, timeout_ms
        self.hints, self.answer = hints, answer
        self.waits: list[tuple[str, PartitionProduceResponse, asyncio.Future]] = []

    async def verified(self, appends: list[_Append]) -> ProduceResponse | None:
        assert self.txn_id
        broker = self.broker
        refused = await broker.txn_verifier.verify(self.txn_id, appends, self.version)   # KIP-890
        answer = self.append(appends, refused)
        return await answer if inspect.isawaitable(answer) else answer

    def append(self, appends: list[_Append], refused: dict) -> ProduceResponse | None | Awaitable[ProduceResponse | None]:
        if self.acks not in (-1, 0, 1):
            for a in appends:
                txn_error = refused.get((a.topic, a.partition)) if refused else None
                _refuse(a, txn_error or ErrorCode.INVALID_REQUIRED_ACKS,
                        NOT_IN_TXN if txn_error else f"acks={self.acks} is not one of -1, 0, 1", self.hints)
            return self._answered()
        stale = _append_all(self.broker, appends, refused, self.acks, self.timeout_ms, self.waits, self.hints,
                            may_retry=True)
        if stale:               # refused for what this broker may not know yet: catch up, then once more
            return self._after_catch_up(stale)
        return Released(self._replicated()) if self.waits else self._answered()   # appended: the rest waits

    async def _after_catch_up(self, stale: list[_Append]) -> ProduceResponse | None:
        broker = self.broker
        await catch_up_once(broker)
        refused = {}
        if self.txn_id:         # the partitions it only now leads are verified too (KIP-890)
            refused = await broker.txn_verifier.verify(self.txn_id, stale, self.version)
        _append_all(self.broker, stale, refused, self.acks, self.timeout_ms, self.waits, self.hints, may_retry=False)
        return await self._replicated() if self.waits else self._answered()

    async def _replicated(self) -> ProduceResponse | None:
        release_connection()    # appended in request order; the wait for followers need not hold the connection
        waits = self.waits
        errors = [await waits[0][2]] if len(waits) == 1 else await asyncio.gather(*(fut for _, _, fut in waits))
        for (topic, resp, _), error in zip(waits, errors):
            if error:
                resp["ErrorCode"] = error
                if error in HINTED_ERRORS:
                    resp["CurrentLeader"] = self.hints.current_leader(topic, resp["Index"])
        return self._answered()

    def _answered(self) -> ProduceResponse | None:
        if self.answer is not None:
            self.answer["NodeEndpoints"] = self.hints.node_endpoints()     # KIP-951: the leaders named above
        return self.answer


def _response(index: int, code: ErrorCode = ErrorCode.NONE) -> PartitionProduceResponse:
    return {"Index": index, "ErrorCode": code, "BaseOffset": -1,
            "LogAppendTimeMs": -1, "LogStartOffset": -1, "RecordErrors": [], "ErrorMessage": None}


def _writable(broker, header, request: ProduceRequest) -> tuple[set | None, ErrorCode]:
    """The topics this request may write (None: all, there is no authorizer), and the error of the
    others (Kafka's handleProduceRequest)."""
    if broker.authorizer is None:
        return None, ErrorCode.NONE
    txn_id = request.get("TransactionalId")
    if txn_id is not None and not authz.transactional_id(broker, header, authz.Op.WRITE, txn_id):
        return set(), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    names = (t["Name"] for t in request["TopicData"])
    return authz.allowed_topics(broker, header, authz.Op.WRITE, names), ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _append_all(broker, appends: list[_Append], refused, acks: int, timeout_ms: int, waits, hints,
                may_retry: bool) -> list[_Append]:
    """Append each partition in request order (``Partition.append_as_leader`` checks the internal
    topics and leadership, once); those refused with an error this broker's image may be behind on
    are handed back unanswered when ``may_retry`` (``stale_metadata``)."""
    stale = []
    for a in appends:
        error = refused.get((a.topic, a.partition)) if refused else None
        if error:
            _refuse(a, error, NOT_IN_TXN, hints)
            continue
        part = broker.replicas.get(a.topic, a.partition)
        if part is None:
            error, message = broker.unhosted_error(a.topic, a.partition), None
        else:
            error, message = _append(broker, part, a, acks, timeout_ms, waits)
        if not error:
            continue
        if may_retry and may_be_stale(part, error):
            stale.append(a)
        else:
            _refuse(a, error, message, hints)
    return stale


def _refuse(a: _Append, error: int, message: str | None, hints) -> None:
    resp = a.resp
    resp["ErrorCode"], resp["ErrorMessage"] = error, message
    if error in HINTED_ERRORS:
        resp["CurrentLeader"] = hints.current_leader(a.topic, a.partition)


def _append(broker, part, a: _Append, acks: int, timeout_ms: int, waits) -> tuple[int, str | None]:
    outcome, fut = broker.replicas.append_records(part, a.records, AppendOrigin.CLIENT, acks, timeout_ms)
    resp = a.resp
    if outcome.error:
        resp["RecordErrors"] = [{"BatchIndex": i, "BatchIndexErrorMessage": m} for i, m in outcome.record_errors]
        return outcome.error, outcome.message
    if fut is not None:
        waits.append((a.topic, resp, fut))
    resp["BaseOffset"] = outcome.base_offset
    resp["LogAppendTimeMs"] = outcome.log_append_time_ms
    resp["LogStartOffset"] = outcome.log_start_offset
    return ErrorCode.NONE, None
