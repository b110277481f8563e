"""Kafka's topic-based RemoteLogMetadataManager: remote segment metadata in ``__remote_log_metadata``.

- The topic (``remote.log.metadata.topic.num.partitions`` partitions, replication
  factor min(``.replication.factor``, live brokers), retention.ms
  ``.retention.ms`` (-1), cleanup.policy=delete) is created through the
  controller on first use; TOPIC_ALREADY_EXISTS counts as created.
- ``assign(tip)`` starts following the metadata partition of a hosted user
  partition: one consumer task per metadata partition fetches it from offset 0
  from its current leader (a consumer's Fetch over the wire, to this broker
  too) and applies the records to the per-partition ``RemoteLogMetadataCache``s
  of the assigned partitions; records of others are skipped. A partition is
  *ready* once its consumer has reached the high watermark seen by a fetch
  after the assignment (until then the broker answers REPLICA_NOT_AVAILABLE).
- ``publish(record)`` produces the record (acks=all) to the leader of its
  metadata partition, retrying retriable errors for up to PUBLISH_TIMEOUT_S,
  then waits until this broker's own consumer has applied it (Kafka's
  waitTillConsumptionCatchesUp), so a caller sees its own write in the cache.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tierlog.net.client import DEFAULT_ROUTE, PeerRoute, Peers, PeerUnavailable
from tierlog.net.tasks import TaskSet
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records import Record, build_batch, decode_batches
from tierlog.tiered import (
    REMOTE_LOG_METADATA_TOPIC,
    RemoteLogMetadataCache,
    RemoteLogMetadataFormatError,
    RemoteStorageError,
    TopicIdPartition,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
    metadata_partition,
)

from .metadata_position import ConsumedPosition

__all__ = ["PUBLISH_TIMEOUT_S", "RemoteLogMetadataManager", "RemoteMetadataUnavailable"]

log = logging.getLogger(__name__)
PUBLISH_TIMEOUT_S = 30.0
RETRY_BACKOFF_S = 0.1
FETCH_MAX_WAIT_MS = 500
FETCH_MAX_BYTES = 4 * 1024 * 1024
REQUEST_TIMEOUT_S = 10.0
FETCH_VERSION, PRODUCE_VERSION, CREATE_TOPICS_VERSION = 12, 9, 7
_RETRIABLE = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_ENOUGH_REPLICAS,
                        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT,
                        ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR})


class RemoteMetadataUnavailable(RemoteStorageError):
    """A metadata record could not be written to (or read back from) ``__remote_log_metadata``."""


class RemoteLogMetadataManager:
    def __init__(self, node_id: int, config, metadata, controller_channel, clock_ms: Callable[[], int],
                 inter_broker: PeerRoute = DEFAULT_ROUTE):
        self.node_id = node_id
        self.num_partitions = int(config["remote.log.metadata.topic.num.partitions"])
        self._replication_factor = int(config["remote.log.metadata.topic.replication.factor"])
        self._retention_ms = int(config["remote.log.metadata.topic.retention.ms"])
        self._metadata = metadata                     # .image, async .wait_for(predicate, timeout_s)
        self._controller = controller_channel
        self._clock_ms = clock_ms
        self._route = inter_broker                    # the leaders' inter-broker listener and its security
        self._peers = inter_broker.peers(f"tierlog-rlmm-{node_id}")   # produces; each consumer has its own
        self._caches: dict[TopicIdPartition, RemoteLogMetadataCache] = {}
        self._positions: dict[int, ConsumedPosition] = {}
        self._consumers: dict[int, asyncio.Task] = {}
        self._listeners: list[Callable[[TopicIdPartition], None]] = []
        self._tasks = TaskSet(f"remote log metadata {node_id}")
        self._topic_ready: asyncio.Task | None = None

    # --- the interface the RemoteLogManager and the read path use ---------------------------------

    def assign(self, tip: TopicIdPartition) -> None:
        if tip in self._caches:
            return
        self._caches[tip] = RemoteLogMetadataCache(tip)
        partition = self._partition_of(tip)
        position = self._positions.get(partition)
        if position is None:
            position = self._positions[partition] = ConsumedPosition()
            task = self._tasks.spawn(self._consume(partition, position), name=f"rlmm-consumer-{partition}")
            if task is not None:
                self._consumers[partition] = task
        elif position.offset > 0:
            self._replay(partition)
        else:
            position.ready = False          # the next fetch answer decides, after this assignment

    def _partition_of(self, tip: TopicIdPartition) -> int:
        return metadata_partition(tip.topic_id, tip.partition, self.num_partitions)

    def unassign(self, tip: TopicIdPartition) -> None:
        self._caches.pop(tip, None)

    def is_ready(self, tip: TopicIdPartition) -> bool:
        position = self._positions.get(self._partition_of(tip))
        return tip in self._caches and position is not None and position.ready

    def cache(self, tip: TopicIdPartition) -> RemoteLogMetadataCache | None:
        return self._caches.get(tip)

    def add_listener(self, fn: Callable[[TopicIdPartition], None]) -> None:
        self._listeners.append(fn)

    async def publish(self, record) -> None:
        tip = _tip_of(record)
        partition = self._partition_of(tip)
        if partition not in self._positions:         # checked first: nothing is written for a refused call
            raise RemoteMetadataUnavailable(f"{tip} is not assigned: cannot read back its metadata")
        value = encode_remote_log_metadata(record)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PUBLISH_TIMEOUT_S
        offset = await self._produce(partition, value, deadline)
        position = self._positions[partition]
        if not await position.wait_past(offset, max(0.0, deadline - loop.time())):
            raise RemoteMetadataUnavailable(f"metadata record at {REMOTE_LOG_METADATA_TOPIC}-{partition}@{offset} "
                                            f"not consumed back within {PUBLISH_TIMEOUT_S:.0f}s")

    async def close(self) -> None:
        await self._tasks.close()
        self._peers.close()

    # --- the topic ---------------------------------------------------------------------------------

    async def ensure_topic(self) -> None:
        """Create the topic if the image does not have it (once at a time), then wait for its leaders."""
        if self._topic_ready is None or (self._topic_ready.done() and self._topic_ready.exception() is not None):
            self._topic_ready = asyncio.ensure_future(self._create_topic())
        await asyncio.shield(self._topic_ready)

    async def _create_topic(self) -> None:
        image = self._metadata.image
        if REMOTE_LOG_METADATA_TOPIC not in image.topics:
            live = sum(1 for b in image.brokers.values() if b.usable)
            body = {"Topics": [{"Name": REMOTE_LOG_METADATA_TOPIC, "NumPartitions": self.num_partitions,
                                "ReplicationFactor": max(1, min(self._replication_factor, live)), "Assignments": [],
                                "Configs": [{"Name": "retention.ms", "Value": str(self._retention_ms)},
                                            {"Name": "cleanup.policy", "Value": "delete"}]}],
                    "timeoutMs": int(REQUEST_TIMEOUT_S * 1000), "validateOnly": False}
            answer = await self._controller.send(ApiKey.CREATE_TOPICS, body, REQUEST_TIMEOUT_S, CREATE_TOPICS_VERSION)
            code = answer["Topics"][0]["ErrorCode"]
            if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                raise RemoteMetadataUnavailable(f"cannot create {REMOTE_LOG_METADATA_TOPIC}: error {code} "
                                                f"({answer['Topics'][0].get('ErrorMessage')})")
            log.info("created %s (%d partitions)", REMOTE_LOG_METADATA_TOPIC, self.num_partitions)
        if not await self._metadata.wait_for(lambda im: REMOTE_LOG_METADATA_TOPIC in im.topics, REQUEST_TIMEOUT_S):
            raise RemoteMetadataUnavailable(f"{REMOTE_LOG_METADATA_TOPIC} did not reach this broker's metadata")

    def _leader(self, partition: int, peers: Peers | None = None) -> int | None:
        topic = self._metadata.image.topics.get(REMOTE_LOG_METADATA_TOPIC)
        if topic is None or partition >= len(topic.partitions):
            return None
        leader = topic.partitions[partition].leader
        info = self._metadata.image.brokers.get(leader)
        address = None if leader < 0 or info is None else self._route.address(info)
        if address is None:
            return None
        (peers or self._peers).set_address(leader, *address)
        return leader

    # --- producing -----------------------------------------------------------------------------------

    async def _produce(self, partition: int, value: bytes, deadline: float) -> int:
        loop = asyncio.get_running_loop()
        last = "no attempt"
        while loop.time() < deadline:
            try:
                await self.ensure_topic()
                leader = self._leader(partition)
                if leader is None:
                    last = "no leader"
                else:
                    code, offset = await self._produce_once(leader, partition, value)
                    if code == ErrorCode.NONE:
                        return offset
                    if code not in _RETRIABLE:
                        raise RemoteMetadataUnavailable(f"producing to {REMOTE_LOG_METADATA_TOPIC}-{partition} "
                                                        f"failed with error {code}")
                    last = f"error {code}"
            except (PeerUnavailable, TimeoutError, OSError, RemoteMetadataUnavailable) as e:
                if isinstance(e, RemoteMetadataUnavailable) and "failed with error" in str(e):
                    raise
                last = str(e) or type(e).__name__
            await asyncio.sleep(RETRY_BACKOFF_S)
        raise RemoteMetadataUnavailable(f"cannot write to {REMOTE_LOG_METADATA_TOPIC}-{partition} within "
                                        f"{PUBLISH_TIMEOUT_S:.0f}s ({last})")

    async def _produce_once(self, leader: int, partition: int, value: bytes) -> tuple[int, int]:
        batch = build_batch([Record(0, self._clock_ms(), None, value, [])])
        body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": int(REQUEST_TIMEOUT_S * 1000),
                "TopicData": [{"Name": REMOTE_LOG_METADATA_TOPIC,
                               "PartitionData": [{"Index": partition, "Records": batch}]}]}
        answer = await self._peers.request(leader, ApiKey.PRODUCE, body, REQUEST_TIMEOUT_S + 5, PRODUCE_VERSION)
        p = answer["Responses"][0]["PartitionResponses"][0]
        return p["ErrorCode"], p["BaseOffset"]

    # --- consuming -----------------------------------------------------------------------------------

    async def _consume(self, partition: int, position: ConsumedPosition) -> None:
        # its own connections: a broker answers one request per connection at a time, so a parked
        # fetch would hold back produces and other partitions' fetches sharing the connection
        peers = self._route.peers(f"tierlog-rlmm-{self.node_id}-{partition}")
        try:
            while True:
                try:
                    await self.ensure_topic()
                    leader = self._leader(partition, peers)
                    if leader is None:
                        await asyncio.sleep(RETRY_BACKOFF_S)
                        continue
                    answer = await peers.request(leader, ApiKey.FETCH, self._fetch_body(partition, position),
                                                 REQUEST_TIMEOUT_S + FETCH_MAX_WAIT_MS / 1000, FETCH_VERSION)
                    if not self._on_fetched(partition, position, answer):
                        await asyncio.sleep(RETRY_BACKOFF_S)        # a partition error: not in a tight loop
                except (PeerUnavailable, TimeoutError, OSError, RemoteMetadataUnavailable) as e:
                    log.debug("%s-%d: fetch failed: %s", REMOTE_LOG_METADATA_TOPIC, partition, e)
                    await asyncio.sleep(RETRY_BACKOFF_S)
        finally:
            peers.close()

    def _fetch_body(self, partition: int, position: ConsumedPosition) -> dict:
        return {"ReplicaId": -1, "MaxWaitMs": FETCH_MAX_WAIT_MS, "MinBytes": 1, "MaxBytes": FETCH_MAX_BYTES,
                "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
                "Topics": [{"Topic": REMOTE_LOG_METADATA_TOPIC, "Partitions": [
                    {"Partition": partition, "CurrentLeaderEpoch": -1, "FetchOffset": position.offset,
                     "LastFetchedEpoch": -1, "LogStartOffset": -1, "PartitionMaxBytes": FETCH_MAX_BYTES}]}],
                "ForgottenTopicsData": [], "RackId": ""}

    def _on_fetched(self, partition: int, position: ConsumedPosition, answer: dict) -> bool:
        """Apply a fetch answer; False when the partition came back with an error."""
        ok = True
        for topic in answer.get("Responses", ()):
            for p in topic["Partitions"]:
                if p["ErrorCode"] != ErrorCode.NONE:
                    log.debug("%s-%d: fetch error %d", REMOTE_LOG_METADATA_TOPIC, partition, p["ErrorCode"])
                    ok = False
                    continue
                touched = self._apply_records(partition, position, p.get("Records") or b"")
                position.fetched(p["HighWatermark"])
                for tip in touched:
                    for fn in self._listeners:
                        fn(tip)
        return ok

    def _apply_records(self, partition: int, position: ConsumedPosition, data) -> set[TopicIdPartition]:
        touched = set()
        for header, records in decode_batches(bytes(data), partial_ok=True):
            if header.last_offset < position.offset:
                continue
            for record in records:
                if record.offset >= position.offset and not header.is_control and record.value is not None:
                    tip = self._apply_one(partition, record.offset, record.value)
                    if tip is not None:
                        touched.add(tip)
            position.consumed(header.last_offset + 1)
        return touched

    def _apply_one(self, partition: int, offset: int, value: bytes) -> TopicIdPartition | None:
        try:
            record = decode_remote_log_metadata(value)
        except RemoteLogMetadataFormatError as e:
            log.warning("%s-%d@%d: skipping a record that does not decode: %s", REMOTE_LOG_METADATA_TOPIC,
                        partition, offset, e)
            return None
        tip = _tip_of(record)
        cache = self._caches.get(tip)
        if cache is None:
            return None
        result = cache.apply(record)
        if result.name != "APPLIED":
            log.debug("%s: metadata record at %d not applied: %s", tip, offset, result.name)
        return tip

    def _replay(self, partition: int) -> None:
        """A partition assigned after its metadata partition's consumer went past offset 0:
        every cache of that metadata partition starts afresh and the consumer from offset 0
        (ready again once caught up), so the new cache sees every record."""
        task = self._consumers.pop(partition, None)
        if task is not None:
            task.cancel()
        for tip in [t for t in self._caches if self._partition_of(t) == partition]:
            self._caches[tip] = RemoteLogMetadataCache(tip)
        position = self._positions[partition]
        position.restart()              # the same object: a publisher waiting on it keeps waiting
        new = self._tasks.spawn(self._consume(partition, position), name=f"rlmm-consumer-{partition}")
        if new is not None:
            self._consumers[partition] = new


def _tip_of(record) -> TopicIdPartition:
    tip = getattr(record, "topic_id_partition", None)
    return tip if tip is not None else record.segment_id.topic_id_partition
