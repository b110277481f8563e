"""Writing transaction markers on the partitions this broker leads (WriteTxnMarkers, the
partition leader's side of KIP-98; Kafka's ``ReplicaManager.appendRecords`` with
``AppendOrigin.COORDINATOR`` for markers).

Each marker is one control batch appended through ``ReplicaManager.append_records`` (origin
MARKER, acks=all: the coordinator moves on only once every marker is committed).  Per
partition: NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION when not led here, the
partition's append errors (INVALID_PRODUCER_EPOCH for a marker older than the producer's
epoch, or not newer with TransactionVersion 2 (KIP-1228), TRANSACTION_COORDINATOR_FENCED for one of an older coordinator epoch,
NOT_ENOUGH_REPLICAS, ...), REQUEST_TIMED_OUT when the ISR does not take it in time.  A
committed marker on ``__consumer_offsets`` is handed to ``on_offsets_marker`` (the group
coordinator applies or drops the transaction's offsets; KIP-98).
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from tierlog.protocol.errors import ErrorCode
from tierlog.records.control import build_marker

from .partition import AppendOrigin

if TYPE_CHECKING:
    from tierlog.protocol.typed.write_txn_markers import (
        WritableTxnMarker,
        WritableTxnMarkerPartitionResult,
        WritableTxnMarkerResult,
        WritableTxnMarkerTopicResult,
    )

__all__ = ["write_markers"]

ACKS_ALL = -1


async def write_markers(replicas, led_partition, markers: list[WritableTxnMarker], timeout_ms: int, now_ms: int,
                        on_offsets_marker: Callable | None = None) -> list[WritableTxnMarkerResult]:
    """The WriteTxnMarkers answer (``Markers`` of the response) for the request's ``Markers``."""
    pending: list[tuple[WritableTxnMarkerPartitionResult, asyncio.Future[int]]] = []
    results: list[WritableTxnMarkerResult] = []
    for m in markers:
        topics: list[WritableTxnMarkerTopicResult] = []
        for t in m["Topics"]:
            parts = [_write_one(replicas, led_partition, m, t["Name"], index, timeout_ms, now_ms, pending,
                                on_offsets_marker) for index in t["PartitionIndexes"]]
            topics.append({"Name": t["Name"], "Partitions": parts})
        results.append({"ProducerId": m["ProducerId"], "Topics": topics})
    if pending:
        codes = await asyncio.gather(*(fut for _resp, fut in pending))
        for (resp, _fut), code in zip(pending, codes, strict=True):
            resp["ErrorCode"] = code
    return results


def _write_one(replicas, led_partition, m: WritableTxnMarker, topic: str, index: int, timeout_ms: int, now_ms: int,
               pending: list, on_offsets_marker) -> WritableTxnMarkerPartitionResult:
    resp: WritableTxnMarkerPartitionResult = {"PartitionIndex": index, "ErrorCode": ErrorCode.NONE}
    part, error = led_partition(topic, index)
    if error:
        resp["ErrorCode"] = error
        return resp
    batch = bytearray(build_marker(m["ProducerId"], m["ProducerEpoch"], m["TransactionResult"],
                                   m["CoordinatorEpoch"], now_ms))
    outcome, fut = replicas.append_records(part, batch, AppendOrigin.MARKER, ACKS_ALL, timeout_ms,
                                           m.get("TransactionVersion", 0))
    if outcome.error:
        resp["ErrorCode"] = outcome.error
    elif fut is not None:
        pending.append((resp, _then(fut, part, m, on_offsets_marker)))
    elif on_offsets_marker is not None:
        on_offsets_marker(part, m["ProducerId"], m["TransactionResult"])
    return resp


async def _then(fut, part, m: WritableTxnMarker, on_offsets_marker) -> int:
    code = await fut
    if code == ErrorCode.NONE and on_offsets_marker is not None:
        on_offsets_marker(part, m["ProducerId"], m["TransactionResult"])
    return code
