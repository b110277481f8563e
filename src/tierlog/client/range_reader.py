"""Read one partition's offset range ``[start, end)`` as Arrow record batches.

Fetch requests go to the partition's leader (found through Metadata); the next
request is sent before the current answer is decoded, so the broker works while
we decode. Leader changes and connection loss refresh metadata and retry.

The Fetch version is the highest both sides speak up to v16 (ApiVersions), so
KIP-951 hints arrive; from v13 the partition is named by topic id. Each fetch
carries the cached leader epoch (CurrentLeaderEpoch), so a deposed leader answers
FENCED_LEADER_EPOCH. KIP-951 "Client": when a NOT_LEADER_OR_FOLLOWER or
FENCED_LEADER_EPOCH answer names a newer leader we can reach, the fetch is sent
to it at once, without a backoff or a Metadata round trip; the metadata refresh
it asks for happens after the new leader's first answer is handed out.

At the cluster's isolation level read_committed (KIP-98) the leader answers up to
the last stable offset with the aborted transactions overlapping the records, and
their batches are dropped (``records.aborted``). Offsets with no record to show
(markers, aborted data) are stepped over by whole batches, never taken for lost
data: only a log that ends (at the LSO for read_committed) before ``end`` is.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa

from tierlog.client.cluster import EARLIEST, Cluster, KafkaError
from tierlog.client.leader_hint import HINTED_ERRORS
from tierlog.clock import monotonic_s
from tierlog.net.request_pipeline import RECEIVE_MESSAGE_MAX_BYTES, PeerUnavailable
from tierlog.protocol import ApiKey, is_retriable
from tierlog.protocol.errors import ErrorCode
from tierlog.records.aborted import READ_COMMITTED, AbortedFilter
from tierlog.records.arrow_records import decode_fetched
from tierlog.records.header import (
    BASE_OFFSET_OFFSET,
    HEADER_SIZE,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
)

__all__ = ["DataLossError", "read_range", "receive_message_max_bytes_for"]

FETCH_VERSION = 16              # KIP-951: CurrentLeader + NodeEndpoints on leader errors
FETCH_VERSION_MIN = 4           # the lowest Kafka 4 accepts
TOPIC_IDS_FROM = 13
FETCH_BYTES_MAX = 8 * 1024 * 1024


def receive_message_max_bytes_for(fetch_max_bytes: int) -> int:
    """The response bound for fetches of ``fetch_max_bytes``: librdkafka's rule,
    receive.message.max.bytes at least fetch.max.bytes + 512."""
    return max(RECEIVE_MESSAGE_MAX_BYTES, fetch_max_bytes + 512)


class DataLossError(Exception):
    """Records between the requested offsets are gone (retention, truncation)."""


class _Target:
    """Where and how the next fetch of one partition goes: node, connection, version, leader epoch."""

    __slots__ = ("conn", "epoch", "isolation", "node", "topic_id", "version")

    def __init__(self, cluster: Cluster, tp):
        self.isolation = cluster.isolation_level
        self.node = cluster.leader(tp)
        self.conn = cluster.connection(self.node)
        self.version = cluster.version_for(self.node, ApiKey.FETCH, FETCH_VERSION_MIN, FETCH_VERSION)
        self.epoch = cluster.leader_epoch(tp)
        self.topic_id = cluster.topic_ids.get(tp[0], bytes(16))
        if self.version >= TOPIC_IDS_FROM and self.topic_id == bytes(16):
            self.version = TOPIC_IDS_FROM - 1       # no topic id known: name the topic

    def send(self, tp, offset: int, max_bytes: int, max_wait_ms: int) -> None:
        topic = {"TopicId": self.topic_id} if self.version >= TOPIC_IDS_FROM else {"Topic": tp[0]}
        self.conn.send(ApiKey.FETCH, self.version, {
            "ReplicaId": -1, "MaxWaitMs": max_wait_ms, "MinBytes": 1, "MaxBytes": max_bytes,
            "IsolationLevel": self.isolation, "SessionId": 0, "SessionEpoch": -1,
            "Topics": [{**topic, "Partitions": [{
                "Partition": tp[1], "CurrentLeaderEpoch": self.epoch, "FetchOffset": offset,
                "LastFetchedEpoch": -1, "LogStartOffset": -1, "PartitionMaxBytes": max_bytes}]}],
            "ForgottenTopicsData": [], "RackId": ""})


def _next_offset_after(records, position: int) -> int:
    """Offset after the last whole batch in ``records`` (``position`` if none)."""
    if records is None:
        return position
    view = memoryview(records)
    pos = 0
    while len(view) - pos >= HEADER_SIZE:
        size = int.from_bytes(view[pos + LENGTH_OFFSET:pos + LENGTH_OFFSET + 4], "big", signed=True) + LOG_OVERHEAD
        if size > len(view) - pos:
            break
        base = int.from_bytes(view[pos + BASE_OFFSET_OFFSET:pos + BASE_OFFSET_OFFSET + 8], "big", signed=True)
        delta = int.from_bytes(view[pos + LAST_OFFSET_DELTA_OFFSET:pos + LAST_OFFSET_DELTA_OFFSET + 4], "big")
        position = max(position, base + delta + 1)
        pos += size
    return position


def read_range(cluster: Cluster, topic: str, partition: int, start: int, end: int, *,
               include_headers: bool = False, fail_on_data_loss: bool = True,
               max_bytes: int = FETCH_BYTES_MAX, retry_timeout_s: float = 30.0) -> Iterator[pa.RecordBatch]:
    """Yield Arrow batches of the records with ``start <= offset < end``."""
    state = {"node": None, "inflight": False}
    try:
        yield from _read(cluster, topic, partition, start, end, include_headers, fail_on_data_loss,
                         max_bytes, retry_timeout_s, state)
    finally:
        if state["inflight"] and state["node"] is not None:
            cluster.drop_connection(state["node"])    # an answer is still on its way: do not reuse


def _read(cluster, topic, partition, start, end, include_headers, fail_on_data_loss, max_bytes,
          retry_timeout_s, state):
    position = start
    tp = (topic, partition)
    deadline = monotonic_s() + retry_timeout_s
    target = None
    inflight = None      # the offset an outstanding request asked for
    empty_answers = 0
    while position < end:
        try:
            if target is None:
                target = _Target(cluster, tp)
                state["node"] = target.node
                inflight = None
            if inflight is None:
                target.send(tp, position, max_bytes, 500)
                inflight = position
            state["inflight"] = True
            resp = target.conn.receive()
            state["inflight"] = False
            inflight = None
        except KafkaError as e:                 # no leader right now: wait for one
            if not is_retriable(e.code) or monotonic_s() > deadline:
                raise
            target = None
            time.sleep(0.2)
            continue
        except PeerUnavailable as e:
            if state["node"] is not None:
                cluster.drop_connection(state["node"])
            target = None
            if monotonic_s() > deadline:
                raise PeerUnavailable(f"fetching {topic}-{partition} at offset {position}: {e}") from e
            time.sleep(0.2)
            continue
        part = _partition_answer(resp)
        code = resp.get("ErrorCode", ErrorCode.NONE) or part["ErrorCode"]
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            position = _after_lost_data(cluster, tp, position, end, fail_on_data_loss)
            continue
        if code in HINTED_ERRORS and cluster.apply_leader_hint(tp, code, part.get("CurrentLeader"),
                                                               resp.get("NodeEndpoints")):
            target = None                       # KIP-951 "Client": retry on the new leader now, no backoff
            continue
        if code:
            if not is_retriable(code) or monotonic_s() > deadline:
                raise KafkaError(code, f"Fetch {topic}-{partition} at offset {position}")
            cluster.refresh([topic])
            target = None
            time.sleep(0.1)
            continue
        deadline = monotonic_s() + retry_timeout_s
        records = part["Records"]
        next_position = _next_offset_after(records, position)
        if next_position < end and next_position > position:
            # ask for the next chunk before decoding this one
            target.send(tp, next_position, max_bytes, 500)
            inflight = next_position
            state["inflight"] = True
        if next_position == position:
            empty_answers += 1
            readable_end = _readable_end(part, cluster.isolation_level)
            if readable_end <= position:
                lost = f"{topic}-{partition}: offsets {position}..{end - 1} were expected but the log ends at " \
                       f"{readable_end}"
                if fail_on_data_loss:
                    raise DataLossError(lost + " (set failOnDataLoss=false to skip them)")
                return
            if empty_answers > 50:
                raise KafkaError(ErrorCode.NONE, f"Fetch {topic}-{partition} at offset {position} made no progress")
            continue
        empty_answers = 0
        aborted = AbortedFilter(part.get("AbortedTransactions")) if cluster.isolation_level == READ_COMMITTED else None
        chunk = decode_fetched(records, topic, partition, position, end, include_headers, aborted)
        if chunk.batch is not None and chunk.batch.num_rows:
            yield chunk.batch
        position = next_position
        cluster.refresh_stale()                 # KIP-951 "Client": the refresh a taken hint asked for


def _readable_end(part: dict, isolation_level: int) -> int:
    """Where a reader at ``isolation_level`` stands at the end: the last stable offset for
    read_committed, else the high watermark."""
    if isolation_level == READ_COMMITTED and part.get("LastStableOffset", -1) >= 0:
        return part["LastStableOffset"]
    return part["HighWatermark"]


def _partition_answer(resp: dict) -> dict:
    """The one partition a single-partition Fetch answer carries (a stand-in error when it has none:
    the top-level error code, if any, wins over it)."""
    for t in resp.get("Responses") or ():
        for p in t["Partitions"]:
            return p
    return {"ErrorCode": ErrorCode.UNKNOWN_SERVER_ERROR, "HighWatermark": -1, "Records": None}


def _after_lost_data(cluster: Cluster, tp, position: int, end: int, fail_on_data_loss: bool) -> int:
    log_start = cluster.list_offsets([tp], EARLIEST)[tp]
    if position >= log_start:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"Fetch {tp[0]}-{tp[1]} at offset {position}")
    if fail_on_data_loss:
        raise DataLossError(
            f"{tp[0]}-{tp[1]}: offsets {position}..{min(end, log_start) - 1} are gone (the log now starts at "
            f"{log_start}, retention or deletion removed them); set failOnDataLoss=false to skip lost data")
    return min(end, log_start)
