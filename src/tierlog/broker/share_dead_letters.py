"""A share group's dead-letter topic (KIP-1191 as planned, beyond Kafka 4.2): a record archived as
failed -- rejected by its member, or delivered ``share.delivery.count.limit`` times -- is copied to
the topic the group's ``errors.deadletterqueue.topic.name`` names, so a poison record is never
silently dropped.

The copy keeps the key, value, timestamp and headers, and adds headers naming where it came from
and why: ``__dlq.errors.group``, ``__dlq.errors.topic``, ``__dlq.errors.partition``,
``__dlq.errors.offset``, ``__dlq.errors.delivery.count`` and ``__dlq.errors.reason`` ("rejected" or
"delivery count limit").  It goes to partition (source partition mod the topic's partitions), with
acks=all, through the inter-broker route to that partition's leader (this broker too), before
the share-partition's state is written; a dead-letter topic that does not exist, or a produce that
fails, is logged with the offsets and the state is written all the same (the member's answer does
not wait on the dead-letter topic's health).  Records are read from the local log (up to
``DLQ_READ_BYTES`` per read).
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from tierlog.net.client import DEFAULT_ROUTE, PeerRoute, PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records.builder import build_batch
from tierlog.records.decoder import decode_batches
from tierlog.records.record import Record

from .partition import FetchIsolation

__all__ = ["DLQ_READ_BYTES", "DeadLetters"]

log = logging.getLogger(__name__)

DLQ_READ_BYTES = 1 << 20
DLQ_PRODUCE_TIMEOUT_S = 10.0
_PRODUCE_VERSION = 9


class DeadLetters:
    def __init__(self, node_id: int, image_fn: Callable, route: PeerRoute = DEFAULT_ROUTE):
        self._image_fn = image_fn
        self._route = route
        self._peers = route.peers(f"tierlog-share-dlq-{node_id}")

    async def send(self, group: str, topic: str, part, archived: list[tuple[int, int, str]]) -> int:
        """Copy the ``archived`` (offset, delivery count, reason) records of ``part`` to ``topic``:
        how many were copied."""
        found = self._read(part, {offset for offset, _n, _r in archived})
        why = {offset: (count, reason) for offset, count, reason in archived}
        letters = [Record(i, r.timestamp, r.key, r.value, [*list(r.headers or ()), *_headers(
            group, part.topic, part.index, r.offset, *why[r.offset])]) for i, r in enumerate(found)]
        if not letters:
            return 0
        info = self._image_fn().topics.get(topic)
        if info is None or not info.partitions:
            log.warning("share group %s: dead-letter topic %s does not exist; %s-%d offsets %s not copied",
                        group, topic, part.topic, part.index, sorted(why))
            return 0
        index = part.index % len(info.partitions)
        error = await self._produce(info.partitions[index].leader, topic, index, build_batch(letters))
        if error:
            log.warning("share group %s: copying %s-%d offsets %s to %s failed (error %d)", group, part.topic,
                        part.index, sorted(why), topic, error)
            return 0
        return len(letters)

    def _read(self, part, offsets: set[int]) -> list[Record]:
        """The records at ``offsets`` still in the local log, in offset order."""
        found: list[Record] = []
        position = min(offsets, default=0)
        last = max(offsets, default=-1)
        while position <= last:
            got = part.read(position, DLQ_READ_BYTES, FetchIsolation.HIGH_WATERMARK, min_one_batch=True)
            if got.error or not got.size:
                break
            data = b"".join(region.read() for region in got.parts)
            end = position
            for header, records in decode_batches(data):
                found.extend(r for r in records if r.offset in offsets and r.offset >= position)
                end = max(end, header.next_offset)
            if end <= position:
                break
            position = end
        return found

    async def _produce(self, leader: int, topic: str, index: int, batch: bytes) -> int:
        body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": int(DLQ_PRODUCE_TIMEOUT_S * 1000),
                "TopicData": [{"Name": topic, "PartitionData": [{"Index": index, "Records": batch}]}]}
        try:
            broker = self._image_fn().brokers.get(leader)
            address = self._route.address(broker) if broker is not None else None
            if address is None:
                return ErrorCode.LEADER_NOT_AVAILABLE
            self._peers.set_address(leader, *address)
            resp = await self._peers.request(leader, ApiKey.PRODUCE, body, DLQ_PRODUCE_TIMEOUT_S, _PRODUCE_VERSION)
        except (PeerUnavailable, TimeoutError, OSError) as e:
            log.info("dead-letter produce to node %d failed: %s", leader, e)
            return ErrorCode.NETWORK_EXCEPTION
        return resp["Responses"][0]["PartitionResponses"][0]["ErrorCode"]

    def close(self) -> None:
        self._peers.close()


def _headers(group: str, topic: str, partition: int, offset: int, count: int,
             reason: str) -> list[tuple[str, bytes | None]]:
    return [("__dlq.errors.group", group.encode()), ("__dlq.errors.topic", topic.encode()),
            ("__dlq.errors.partition", str(partition).encode()), ("__dlq.errors.offset", str(offset).encode()),
            ("__dlq.errors.delivery.count", str(count).encode()), ("__dlq.errors.reason", reason.encode())]
