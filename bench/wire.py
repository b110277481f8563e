"""Kafka requests over a socket for benchmarks: one call per connection, and a timed Fetch loop.

``call`` sends one request with tierlog's codec and returns the decoded answer.
``timed_fetches`` reads ``[start, end)`` of one partition from one broker the way
a consumer does (one Fetch in flight, librdkafka's default per-partition bound
of 1 MiB, ``fetch.max.bytes`` 50 MiB) and times every Fetch round trip, so the
latency percentiles are per fetch, not per record.
"""
from __future__ import annotations

import socket
import struct
import time

from tierlog.protocol import decode_response, encode_request

__all__ = ["call", "timed_fetches"]

FETCH, FETCH_VERSION = 1, 12                 # v12: the topic by name, no session
PARTITION_MAX_BYTES = 1 << 20                 # librdkafka max.partition.fetch.bytes
FETCH_MAX_BYTES = 50 * (1 << 20)              # librdkafka fetch.max.bytes
FETCH_MAX_WAIT_MS = 500                       # librdkafka fetch.wait.max.ms
BATCH_LENGTH_AT, LAST_OFFSET_DELTA_AT, LOG_OVERHEAD = 8, 23, 12
EMPTY_FETCHES_MAX = 200                       # empty answers in a row below the end: give up


def _recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def _round_trip(s: socket.socket, api: int, version: int, body: dict, client_id: str = "bench") -> dict:
    frame = encode_request(api, version, 1, client_id, body)
    s.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", _recv(s, 4))[0]
    return decode_response(api, version, _recv(s, size))[1]


def call(port: int, api: int, version: int, body: dict, timeout_s: float = 30.0) -> dict:
    """One request to 127.0.0.1:``port`` on a fresh connection; the decoded answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        return _round_trip(s, api, version, body)


def _next_offset(records: bytes, position: int) -> int:
    """The offset after the last whole batch in ``records`` (``position`` if there is none)."""
    at = 0
    while at + LOG_OVERHEAD <= len(records):
        length = struct.unpack_from(">i", records, at + BATCH_LENGTH_AT)[0]
        if at + LOG_OVERHEAD + length > len(records):
            break
        base = struct.unpack_from(">q", records, at)[0]
        position = max(position, base + struct.unpack_from(">i", records, at + LAST_OFFSET_DELTA_AT)[0] + 1)
        at += LOG_OVERHEAD + length
    return position


def timed_fetches(port: int, topic: str, start: int, end: int, timeout_s: float = 60.0) -> dict:
    """Fetch ``topic``-0 from ``start`` until ``end`` from the broker at ``port``: every Fetch's
    round trip in ms, the bytes read, and the error codes answered (a read stops at an error)."""
    latencies, position, nbytes, empty, errors = [], start, 0, 0, []
    began = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        while position < end:
            body = {"ReplicaId": -1, "MaxWaitMs": FETCH_MAX_WAIT_MS, "MinBytes": 1, "MaxBytes": FETCH_MAX_BYTES,
                    "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
                    "Topics": [{"Topic": topic, "Partitions": [{
                        "Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": position,
                        "LastFetchedEpoch": -1, "LogStartOffset": -1, "PartitionMaxBytes": PARTITION_MAX_BYTES}]}],
                    "ForgottenTopicsData": [], "RackId": ""}
            sent = time.perf_counter()
            answer = _round_trip(s, FETCH, FETCH_VERSION, body)
            latencies.append(1000 * (time.perf_counter() - sent))
            part = answer["Responses"][0]["Partitions"][0]
            if part["ErrorCode"]:
                errors.append(part["ErrorCode"])
                break
            records = bytes(part["Records"] or b"")
            after = _next_offset(records, position)
            empty = empty + 1 if after == position else 0
            if empty > EMPTY_FETCHES_MAX:
                errors.append(-1)
                break
            nbytes, position = nbytes + len(records), after
    seconds = time.perf_counter() - began
    return {"start": start, "end": end, "reached": position, "fetches": len(latencies), "bytes": nbytes,
            "seconds": round(seconds, 3), "mib_per_s": round(nbytes / (1 << 20) / seconds, 1) if seconds else 0.0,
            "errors": errors, "latencies_ms": latencies}
