"""The transaction coordinator's marker sender (Kafka's ``TransactionMarkerChannelManager``):
writes a transaction's COMMIT or ABORT markers on every partition it touched, at their
leaders, and retries until all are written.

Partitions are grouped by leader (the metadata image) and queued for that leader; each leader
has one request in flight at a time, which takes everything queued for it (at most
``TXN_MARKERS_PER_REQUEST_MAX`` transactions' markers), so the markers of transactions that end
while a request is out go together in the next one, as Kafka's sender thread drains its
per-broker queue: one WriteTxnMarkers (v2, each marker with its transaction's TransactionVersion,
KIP-1228) per leader, and at the leader one append per partition for all of them
(``txn_marker_writer``).  This broker's own partitions are written in process
(``txn_marker_writer.write_markers``, as the WriteTxnMarkers handler does), the others over the
inter-broker route's connections.

Each transaction's ``write`` waits for its own partitions only. A partition that failed (no
leader, a peer down, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, a timeout) is retried after
``retry.backoff.ms``-style backoff (``MARKER_RETRY_BACKOFF_MS``) against its leader then; a
partition of a deleted topic is dropped (Kafka drops it too); INVALID_PRODUCER_EPOCH /
TRANSACTION_COORDINATOR_FENCED mean a newer epoch or coordinator wrote there already and count
as done.  Sending stops once ``still_valid`` is false (this broker no longer coordinates the
transaction: the new coordinator resumes it from its Prepare* state); a queued marker whose
transaction is no longer valid is left out of the request.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import NamedTuple, cast

from tierlog.net.client import DEFAULT_ROUTE, PeerRoute, PeerUnavailable
from tierlog.net.node_batches import NodeBatches
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.typed.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerResult,
)

from .txn_marker_writer import marker_of, result_of, write_markers

__all__ = ["TxnMarkerSender"]

log = logging.getLogger(__name__)

MARKER_RETRY_BACKOFF_MS = 100
TXN_MARKERS_PER_REQUEST_MAX = 100   # transactions' markers in one WriteTxnMarkers to a leader; more wait
WRITE_TXN_MARKERS_VERSION = 2
_DONE = frozenset({ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})


class TxnMarkerSender:
    def __init__(self, node_id: int, image_fn: Callable, replicas, led_partition: Callable,
                 on_offsets_marker: Callable | None, clock_ms: Callable[[], int], request_timeout_ms: int,
                 route: PeerRoute = DEFAULT_ROUTE):
        self.node_id = node_id
        self._image_fn = image_fn
        self._replicas = replicas
        self._led_partition = led_partition
        self._on_offsets_marker = on_offsets_marker
        self._clock_ms = clock_ms
        self._timeout_ms = request_timeout_ms
        self._route = route
        self._peers = route.peers(f"tierlog-txn-markers-{node_id}")
        self._batches: NodeBatches[_Queued, frozenset[tuple[str, int]]] = NodeBatches(
            self._send, frozenset(), TXN_MARKERS_PER_REQUEST_MAX, "txn-markers")

    async def write(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                    partitions: frozenset[tuple[str, int]], still_valid: Callable[[], bool],
                    transaction_version: int = 0) -> bool:
        """True once every partition has its marker; False when ``still_valid`` turned false."""
        remaining = set(partitions)
        fields = {"ProducerId": producer_id, "ProducerEpoch": producer_epoch, "TransactionResult": commit,
                  "CoordinatorEpoch": coordinator_epoch, "TransactionVersion": transaction_version}
        while remaining and still_valid():
            by_leader = self._by_leader(remaining)
            queued = [self._batches.submit(leader, _Queued(_marker(fields, parts), still_valid))
                      for leader, parts in by_leader.items() if leader >= 0]
            for done in await asyncio.gather(*queued):
                remaining -= done
            if remaining:
                await asyncio.sleep(MARKER_RETRY_BACKOFF_MS / 1000)
        return not remaining

    def _by_leader(self, remaining: set) -> dict[int, list[tuple[str, int]]]:
        image = self._image_fn()
        out: dict[int, list[tuple[str, int]]] = {}
        for topic, index in list(remaining):
            info = image.topics.get(topic)
            if info is None or index >= len(info.partitions):
                log.info("dropping the marker of %s-%d: the partition no longer exists", topic, index)
                remaining.discard((topic, index))
                continue
            out.setdefault(info.partitions[index].leader, []).append((topic, index))
        return out

    async def _send(self, leader: int, queued: list[_Queued]) -> list[frozenset[tuple[str, int]]]:
        """One WriteTxnMarkers of the queued markers still wanted: per item, the partitions written."""
        wanted = [q.still_valid() for q in queued]
        valid = [q for q, w in zip(queued, wanted) if w]
        if not valid:
            return [frozenset()] * len(queued)
        _debug(valid, leader, "sent")
        try:
            results = await self._request(leader, [q.marker for q in valid])
        except (PeerUnavailable, TimeoutError, OSError) as e:
            log.info("markers of %d transactions to node %d not written: %s", len(valid), leader, e)
            results = []
        _debug(valid, leader, "answered")
        written = iter([_written(q.marker, results[i] if i < len(results) else None) for i, q in enumerate(valid)])
        return [next(written) if w else frozenset() for w in wanted]

    async def _request(self, leader: int, markers: list[WritableTxnMarker]) -> list[WritableTxnMarkerResult]:
        if leader == self.node_id:
            typed = [marker_of(m) for m in markers]
            errors = await write_markers(self._replicas, self._led_partition, typed, self._timeout_ms,
                                         self._clock_ms(), self._on_offsets_marker)
            return [result_of(m, e) for m, e in zip(typed, errors, strict=True)]
        broker = self._image_fn().brokers.get(leader)
        address = self._route.address(broker) if broker is not None else None
        if address is None:
            raise PeerUnavailable(f"no address for node {leader}")
        self._peers.set_address(leader, *address)
        resp = await self._peers.request(leader, ApiKey.WRITE_TXN_MARKERS, {"Markers": markers},
                                         self._timeout_ms / 1000 + 5, WRITE_TXN_MARKERS_VERSION)
        return resp["Markers"]

    def close(self) -> None:
        self._batches.close()
        self._peers.close()


class _Queued(NamedTuple):
    """A transaction's markers for one leader, waiting for the leader's next request."""

    marker: WritableTxnMarker
    still_valid: Callable[[], bool]


def _marker(fields: dict, parts: list[tuple[str, int]]) -> WritableTxnMarker:
    """The coordinator's fields and the partitions, as the wire has them."""
    by_topic: dict[str, list[int]] = {}
    for topic, index in parts:
        by_topic.setdefault(topic, []).append(index)
    return cast(WritableTxnMarker,
                {**fields, "Topics": [{"Name": t, "PartitionIndexes": ids} for t, ids in by_topic.items()]})


def _written(marker: WritableTxnMarker, answered: WritableTxnMarkerResult | None) -> frozenset[tuple[str, int]]:
    """The partitions of ``marker`` whose marker is written (or needs none any more), by the
    answer at its position (the leader answers the markers in order; one for another producer
    counts as none)."""
    producer_id = marker["ProducerId"]
    if answered is None or answered["ProducerId"] != producer_id:
        return frozenset()
    done: set[tuple[str, int]] = set()
    for topic in answered["Topics"]:
        for p in topic["Partitions"]:
            if p["ErrorCode"] in _DONE:
                done.add((topic["Name"], p["PartitionIndex"]))
            else:
                log.info("marker for producer %d on %s-%d: error %d, retrying", producer_id, topic["Name"],
                         p["PartitionIndex"], p["ErrorCode"])
    return frozenset(done)


def _debug(queued: list[_Queued], leader: int, what: str) -> None:
    if log.isEnabledFor(logging.DEBUG):         # bench/txn_timeline.py reads these lines
        for q in queued:
            log.debug("markers of producer %d to node %d: %s", q.marker["ProducerId"], leader, what)
