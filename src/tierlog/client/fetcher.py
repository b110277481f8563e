"""Read one partition's offset range ``[start, end)`` as Arrow record batches.

Fetch requests go to the partition's leader (found through Metadata); the next
request is sent before the current answer is decoded, so the broker works while
we decode. Leader changes and connection loss refresh metadata and retry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa

from tierlog.client.arrow_records import decode_fetched
from tierlog.client.cluster import EARLIEST, Cluster, KafkaError
from tierlog.client.connection import ConnectionError_
from tierlog.protocol import ApiKey, is_retriable
from tierlog.protocol.errors import ErrorCode
from tierlog.records.header import (
    BASE_OFFSET_OFFSET,
    HEADER_SIZE,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
)

__all__ = ["DataLossError", "read_range"]

FETCH_VERSION = 12              # topic names; Kafka 2.8+
FETCH_BYTES_MAX = 8 * 1024 * 1024


class DataLossError(Exception):
    """Records between the requested offsets are gone (retention, truncation)."""


def _fetch_body(topic: str, partition: int, offset: int, max_bytes: int, max_wait_ms: int) -> dict:
    return {"ReplicaId": -1, "MaxWaitMs": max_wait_ms, "MinBytes": 1, "MaxBytes": max_bytes,
            "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
            "Topics": [{"Topic": topic, "Partitions": [{
                "Partition": partition, "CurrentLeaderEpoch": -1, "FetchOffset": offset,
                "LastFetchedEpoch": -1, "LogStartOffset": -1, "PartitionMaxBytes": max_bytes}]}],
            "ForgottenTopicsData": [], "RackId": ""}


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
    deadline = time.monotonic() + retry_timeout_s
    conn, node = None, None
    inflight = None      # the offset an outstanding request asked for
    empty_answers = 0
    while position < end:
        try:
            if conn is None:
                node = cluster.leader(tp)
                conn = cluster.connection(node)
                state["node"] = node
                inflight = None
            if inflight is None:
                conn.send(ApiKey.FETCH, FETCH_VERSION, _fetch_body(topic, partition, position, max_bytes, 500))
                inflight = position
            state["inflight"] = True
            resp = conn.receive()
            state["inflight"] = False
            inflight = None
        except KafkaError as e:                 # no leader right now: wait for one
            if not is_retriable(e.code) or time.monotonic() > deadline:
                raise
            conn = None
            time.sleep(0.2)
            continue
        except (ConnectionError_, OSError) as e:
            if node is not None:
                cluster.drop_connection(node)
            conn = None
            if time.monotonic() > deadline:
                raise ConnectionError_(f"fetching {topic}-{partition} at offset {position}: {e}") from e
            time.sleep(0.2)
            continue
        part = resp["Responses"][0]["Partitions"][0]
        code = part["ErrorCode"] or resp.get("ErrorCode", ErrorCode.NONE)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            position = _after_lost_data(cluster, tp, position, end, fail_on_data_loss)
            continue
        if code:
            if not is_retriable(code) or time.monotonic() > deadline:
                raise KafkaError(code, f"Fetch {topic}-{partition} at offset {position}")
            cluster.refresh([topic])
            conn = None
            time.sleep(0.1)
            continue
        deadline = time.monotonic() + retry_timeout_s
        records = part["Records"]
        next_position = _next_offset_after(records, position)
        if next_position < end and next_position > position:
            # ask for the next chunk before decoding this one
            conn.send(ApiKey.FETCH, FETCH_VERSION, _fetch_body(topic, partition, next_position, max_bytes, 500))
            inflight = next_position
            state["inflight"] = True
        if next_position == position:
            empty_answers += 1
            if part["HighWatermark"] <= position:
                lost = f"{topic}-{partition}: offsets {position}..{end - 1} were expected but the log ends at " \
                       f"{part['HighWatermark']}"
                if fail_on_data_loss:
                    raise DataLossError(lost + " (set failOnDataLoss=false to skip them)")
                return
            if empty_answers > 50:
                raise KafkaError(ErrorCode.NONE, f"Fetch {topic}-{partition} at offset {position} made no progress")
            continue
        empty_answers = 0
        chunk = decode_fetched(records, topic, partition, position, end, include_headers)
        if chunk.batch is not None and chunk.batch.num_rows:
            yield chunk.batch
        position = next_position


def _after_lost_data(cluster: Cluster, tp, position: int, end: int, fail_on_data_loss: bool) -> int:
    log_start = cluster.list_offsets([tp], EARLIEST)[tp]
    if position >= log_start:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"Fetch {tp[0]}-{tp[1]} at offset {position}")
    if fail_on_data_loss:
        raise DataLossError(
            f"{tp[0]}-{tp[1]}: offsets {position}..{min(end, log_start) - 1} are gone (the log now starts at "
            f"{log_start}, retention or deletion removed them); set failOnDataLoss=false to skip lost data")
    return min(end, log_start)
