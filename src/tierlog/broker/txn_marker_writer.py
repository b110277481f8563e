"""Writing transaction markers on the partitions this broker leads (WriteTxnMarkers, the
partition leader's side of KIP-98; Kafka's ``ReplicaManager.appendRecords`` with
``AppendOrigin.COORDINATOR`` for markers).

A request may carry the markers of several transactions (the coordinator's sender drains its
queue for this broker into one request, ``txn_marker_sender.py``): the markers for one partition
are written together, one control batch each, in one append through
``ReplicaManager.append_markers`` (origin MARKER, acks=all: the coordinator moves on only once
every marker is committed), so several producers' markers cost one write and one replication
wait.  Per producer and partition, as Kafka answers: NOT_LEADER_OR_FOLLOWER /
UNKNOWN_TOPIC_OR_PARTITION when not led here, the partition's append errors (INVALID_PRODUCER_EPOCH
for a marker older than the producer's epoch, or not newer with TransactionVersion 2 (KIP-1228),
TRANSACTION_COORDINATOR_FENCED for one of an older coordinator epoch, NOT_ENOUGH_REPLICAS, ...),
REQUEST_TIMED_OUT when the ISR does not take it in time; one refused marker does not hold back
the others of its write.  A committed marker on ``__consumer_offsets`` is handed to
``on_offsets_marker`` (the group coordinator applies or drops the transaction's offsets; KIP-98).
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from tierlog.protocol.errors import ErrorCode
from tierlog.records.control import build_marker

if TYPE_CHECKING:
    from tierlog.protocol.typed.write_txn_markers import (
        WritableTxnMarker,
        WritableTxnMarkerPartitionResult,
        WritableTxnMarkerResult,
        WritableTxnMarkerTopicResult,
    )

__all__ = ["write_markers"]

_Entry = tuple["WritableTxnMarker", "WritableTxnMarkerPartitionResult"]


async def write_markers(replicas, led_partition, markers: list[WritableTxnMarker], timeout_ms: int, now_ms: int,
                        on_offsets_marker: Callable | None = None) -> list[WritableTxnMarkerResult]:
    """The WriteTxnMarkers answer (``Markers`` of the response) for the request's ``Markers``."""
    results: list[WritableTxnMarkerResult] = []
    by_partition: dict[tuple[str, int], list[_Entry]] = {}
    for m in markers:
        topics: list[WritableTxnMarkerTopicResult] = []
        for t in m["Topics"]:
            parts: list[WritableTxnMarkerPartitionResult] = []
            for index in t["PartitionIndexes"]:
                parts.append({"PartitionIndex": index, "ErrorCode": ErrorCode.NONE})
                by_partition.setdefault((t["Name"], index), []).append((m, parts[-1]))
            topics.append({"Name": t["Name"], "Partitions": parts})
        results.append({"ProducerId": m["ProducerId"], "Topics": topics})
    waits = [_write_partition(replicas, led_partition, key, entries, timeout_ms, now_ms, on_offsets_marker)
             for key, entries in by_partition.items()]
    await asyncio.gather(*(w for w in waits if w is not None))
    return results


def _write_partition(replicas, led_partition, key: tuple[str, int], entries: list[_Entry], timeout_ms: int,
                     now_ms: int, on_offsets_marker) -> Awaitable[None] | None:
    """Append the partition's markers in one write; what to await for their replication (None: nothing)."""
    part, error = led_partition(*key)
    if error:
        for _m, resp in entries:
            resp["ErrorCode"] = error
        return None
    batches = [(bytearray(build_marker(m["ProducerId"], m["ProducerEpoch"], m["TransactionResult"],
                                       m["CoordinatorEpoch"], now_ms)), m.get("TransactionVersion", 0))
               for m, _resp in entries]
    codes, fut = replicas.append_markers(part, batches, timeout_ms)
    written = []
    for (m, resp), code in zip(entries, codes, strict=True):
        resp["ErrorCode"] = code
        if code == ErrorCode.NONE:
            written.append((m, resp))
    if fut is None:
        _committed(part, written, on_offsets_marker)
        return None
    return _then(fut, part, written, on_offsets_marker)


async def _then(fut: asyncio.Future, part, written: list[_Entry], on_offsets_marker) -> None:
    code = await fut
    for _m, resp in written:
        resp["ErrorCode"] = code
    if code == ErrorCode.NONE:
        _committed(part, written, on_offsets_marker)


def _committed(part, written: list[_Entry], on_offsets_marker) -> None:
    if on_offsets_marker is not None:
        for m, _resp in written:
            on_offsets_marker(part, m["ProducerId"], m["TransactionResult"])
