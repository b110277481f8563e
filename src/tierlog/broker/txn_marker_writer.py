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

No wire dict comes in: the WriteTxnMarkers handler and the coordinator's sender turn the wire's
markers into ``TxnMarker``s (``marker_of``) and the error codes back (``result_of``).
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

from tierlog.protocol.errors import ErrorCode
from tierlog.records.control import build_marker

if TYPE_CHECKING:
    from tierlog.protocol.typed.write_txn_markers import WritableTxnMarker, WritableTxnMarkerResult

__all__ = ["TxnMarker", "marker_of", "result_of", "write_markers"]

Key = tuple[str, int]


class TxnMarker(NamedTuple):
    """One transaction's marker to write on the partitions named (WriteTxnMarkers' WritableTxnMarker)."""

    producer_id: int
    producer_epoch: int
    committed: bool                       # TransactionResult: COMMIT (true) or ABORT
    coordinator_epoch: int
    transaction_version: int              # v2's TransactionVersion (KIP-1228); 0 before
    partitions: tuple[Key, ...]


def marker_of(m: WritableTxnMarker) -> TxnMarker:
    """The wire's marker as the writer takes it."""
    return TxnMarker(m["ProducerId"], m["ProducerEpoch"], bool(m["TransactionResult"]), m["CoordinatorEpoch"],
                     m.get("TransactionVersion", 0),
                     tuple((t["Name"], i) for t in m["Topics"] for i in t["PartitionIndexes"]))


def result_of(marker: TxnMarker, errors: dict[Key, int]) -> WritableTxnMarkerResult:
    """The wire's answer for ``marker``: its partitions' error codes, by topic in the marker's order."""
    topics: dict[str, list] = {}
    for key in marker.partitions:
        topics.setdefault(key[0], []).append({"PartitionIndex": key[1], "ErrorCode": errors[key]})
    return {"ProducerId": marker.producer_id,
            "Topics": [{"Name": name, "Partitions": parts} for name, parts in topics.items()]}


async def write_markers(replicas, led_partition, markers: Iterable[TxnMarker], timeout_ms: int, now_ms: int,
                        on_offsets_marker: Callable | None = None) -> list[dict[Key, int]]:
    """Each marker's partitions' error codes (NONE: written and replicated), in order."""
    markers = list(markers)
    results: list[dict[Key, int]] = [dict.fromkeys(m.partitions, ErrorCode.NONE) for m in markers]
    by_partition: dict[Key, list[int]] = {}
    for i, m in enumerate(markers):
        for key in m.partitions:
            by_partition.setdefault(key, []).append(i)
    waits = [w for w in (_write_partition(replicas, led_partition, key, [markers[i] for i in ids],
                                          [results[i] for i in ids], timeout_ms, now_ms, on_offsets_marker)
                         for key, ids in by_partition.items()) if w is not None]
    if len(waits) == 1:
        await waits[0]
    elif waits:
        await asyncio.gather(*waits)
    return results


def _write_partition(replicas, led_partition, key: Key, markers: list[TxnMarker], errors: list[dict[Key, int]],
                     timeout_ms: int, now_ms: int, on_offsets_marker) -> asyncio.Future | None:
    """Append the partition's markers in one write (``errors``: each marker's answer, filled in);
    the future of their replication, whose end fills in the answers (None: nothing to wait for)."""
    part, error = led_partition(*key)
    if error:
        for answer in errors:
            answer[key] = error
        return None
    batches = [(bytearray(build_marker(m.producer_id, m.producer_epoch, m.committed, m.coordinator_epoch,
                                       now_ms)), m.transaction_version) for m in markers]
    codes, fut = replicas.append_markers(part, batches, timeout_ms)
    written = []
    for m, answer, code in zip(markers, errors, codes, strict=True):
        answer[key] = code
        if code == ErrorCode.NONE:
            written.append((m, answer))
    if fut is None:
        _committed(part, written, on_offsets_marker)
        return None
    if fut.done() and not fut.cancelled() and fut.exception() is None:     # settled within the append
        _replicated(fut, part, key, written, on_offsets_marker)
        return None
    fut.add_done_callback(lambda done: _replicated(done, part, key, written, on_offsets_marker))
    return fut


def _replicated(fut: asyncio.Future, part, key: Key, written: list, on_offsets_marker) -> None:
    """The write's replication ended (a callback of its future, run before its awaiter resumes):
    its error code is the answer of every marker it wrote."""
    if fut.cancelled() or fut.exception() is not None:
        return                  # the awaiter gets the cancellation or the error
    code = fut.result()
    for _m, answer in written:
        answer[key] = code
    if code == ErrorCode.NONE:
        _committed(part, written, on_offsets_marker)


def _committed(part, written: list, on_offsets_marker) -> None:
    if on_offsets_marker is not None:
        for m, _answer in written:
            on_offsets_marker(part, m.producer_id, m.committed)
