"""The transaction coordinator's marker sender (Kafka's ``TransactionMarkerChannelManager``):
writes a transaction's COMMIT or ABORT markers on every partition it touched, at their
leaders, and retries until all are written.

Partitions are grouped by leader (the metadata image); this broker's own are written in
process (``txn_marker_writer.write_markers``, as the WriteTxnMarkers handler does), the
others with one WriteTxnMarkers (v2, with the transaction's TransactionVersion, KIP-1228) per leader over the inter-broker route's connections.
A partition that failed (no leader, a peer down, NOT_LEADER_OR_FOLLOWER,
NOT_ENOUGH_REPLICAS, a timeout) is retried after ``retry.backoff.ms``-style backoff
(``MARKER_RETRY_BACKOFF_MS``) against its leader then; a partition of a deleted topic is
dropped (Kafka drops it too); INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED mean a
newer epoch or coordinator wrote there already and count as done.  Sending stops once
``still_valid`` is false (this broker no longer coordinates the transaction: the new
coordinator resumes it from its Prepare* state).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import cast

from tierlog.net.client import DEFAULT_ROUTE, PeerRoute, PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.typed.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerResult,
)

from .txn_marker_writer import write_markers

__all__ = ["TxnMarkerSender"]

log = logging.getLogger(__name__)

MARKER_RETRY_BACKOFF_MS = 100
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

    async def write(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                    partitions: frozenset[tuple[str, int]], still_valid: Callable[[], bool],
                    transaction_version: int = 0) -> bool:
        """True once every partition has its marker; False when ``still_valid`` turned false."""
        remaining = set(partitions)
        marker = {"ProducerId": producer_id, "ProducerEpoch": producer_epoch, "TransactionResult": commit,
                  "CoordinatorEpoch": coordinator_epoch, "TransactionVersion": transaction_version}
        while remaining and still_valid():
            by_leader = self._by_leader(remaining)
            sends = [self._send(leader, marker, parts) for leader, parts in by_leader.items() if leader >= 0]
            for done in await asyncio.gather(*sends):
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

    async def _send(self, leader: int, fields: dict, parts: list[tuple[str, int]]) -> set[tuple[str, int]]:
        """The partitions whose marker is written (or need none any more)."""
        by_topic: dict[str, list[int]] = {}
        for topic, index in parts:
            by_topic.setdefault(topic, []).append(index)
        marker = cast(WritableTxnMarker,       # the coordinator's fields and the partitions, as the wire has them
                      {**fields, "Topics": [{"Name": t, "PartitionIndexes": ids} for t, ids in by_topic.items()]})
        producer_id = marker["ProducerId"]
        log.debug("markers of producer %d to node %d: sent", producer_id, leader)
        try:
            results = await self._request(leader, marker)
        except (PeerUnavailable, TimeoutError, OSError) as e:
            log.info("markers for producer %d to node %d not written: %s", producer_id, leader, e)
            return set()
        log.debug("markers of producer %d to node %d: answered", producer_id, leader)
        done: set[tuple[str, int]] = set()
        for answered in results[0]["Topics"] if results else ():
            for p in answered["Partitions"]:
                if p["ErrorCode"] in _DONE:
                    done.add((answered["Name"], p["PartitionIndex"]))
                else:
                    log.info("marker for producer %d on %s-%d: error %d, retrying", producer_id, answered["Name"],
                             p["PartitionIndex"], p["ErrorCode"])
        return done

    async def _request(self, leader: int, marker: WritableTxnMarker) -> list[WritableTxnMarkerResult]:
        if leader == self.node_id:
            return await write_markers(self._replicas, self._led_partition, [marker], self._timeout_ms,
                                       self._clock_ms(), self._on_offsets_marker)
        broker = self._image_fn().brokers.get(leader)
        address = self._route.address(broker) if broker is not None else None
        if address is None:
            raise PeerUnavailable(f"no address for node {leader}")
        self._peers.set_address(leader, *address)
        resp = await self._peers.request(leader, ApiKey.WRITE_TXN_MARKERS, {"Markers": [marker]},
                                         self._timeout_ms / 1000 + 5, WRITE_TXN_MARKERS_VERSION)
        return resp["Markers"]

    def close(self) -> None:
        self._peers.close()
