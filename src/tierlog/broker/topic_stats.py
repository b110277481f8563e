"""BrokerTopicStats: Kafka's ``BrokerTopicMetrics`` per topic, as plain counters a scrape reads.

Fed by the request dispatcher once per answered request (``on_response``, a
dispatcher observer), so the produce and fetch paths carry no metrics code: per
partition of a Produce, ``produce_requests`` and, when its error code is NONE, the
batch bytes (``bytes_in``) and their records (``messages_in``, the record counts of
the batch headers: one read per batch, never per record), else ``failed_produce_requests``
(an acks=0 Produce has no answer and counts as appended); per partition of a Fetch
answer, ``fetch_requests`` (and ``failed_fetch_requests`` when its error code is not NONE), and the records' bytes as
``bytes_out`` when a consumer fetched (a follower's bytes are replication, not
BytesOut, as in Kafka). A partition a Fetch session left out of the answer (nothing
new) is not counted.

Tiered storage adds per topic ``remote_copy_bytes`` / ``remote_copy_requests`` /
``remote_copy_errors`` (the RemoteLogManager's uploads) and ``remote_fetch_bytes`` /
``remote_fetch_requests`` / ``remote_fetch_errors`` (the RemoteReader), through
``topic(name)``.

Bounded by the topics that exist: ``retain(names)`` (called at scrape time with the
metadata image's topics) drops the counters of deleted topics, as Kafka removes
their metrics.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterable

from tierlog.net.request_metrics import fetch_replica_id
from tierlog.protocol.api import ApiKey
from tierlog.records.header import LENGTH_OFFSET, LOG_OVERHEAD, RECORDS_COUNT_OFFSET

__all__ = ["COUNTERS", "BrokerTopicStats", "TopicCounters", "record_count"]

COUNTERS = ("bytes_in", "bytes_out", "messages_in", "produce_requests", "failed_produce_requests",
            "fetch_requests", "failed_fetch_requests", "remote_copy_bytes", "remote_copy_requests",
            "remote_copy_errors", "remote_fetch_bytes", "remote_fetch_requests", "remote_fetch_errors")
_INT32, _UINT32 = struct.Struct(">i"), struct.Struct(">I")


class TopicCounters:
    __slots__ = COUNTERS
    # one int per name of COUNTERS (set in __init__), declared for the type checker
    bytes_in: int
    bytes_out: int
    messages_in: int
    produce_requests: int
    failed_produce_requests: int
    fetch_requests: int
    failed_fetch_requests: int
    remote_copy_bytes: int
    remote_copy_requests: int
    remote_copy_errors: int
    remote_fetch_bytes: int
    remote_fetch_requests: int
    remote_fetch_errors: int

    def __init__(self) -> None:
        for name in COUNTERS:
            setattr(self, name, 0)


def record_count(records) -> int:
    """Records in a run of v2 batches, from each batch header (a torn tail is ignored)."""
    count, pos, end = 0, 0, len(records)
    while end - pos >= RECORDS_COUNT_OFFSET + 4:
        (length,) = _INT32.unpack_from(records, pos + LENGTH_OFFSET)
        if length < RECORDS_COUNT_OFFSET + 4 - LOG_OVERHEAD:
            break                   # not a batch: nothing more to count
        count += _UINT32.unpack_from(records, pos + RECORDS_COUNT_OFFSET)[0]
        pos += LOG_OVERHEAD + length
    return count


class BrokerTopicStats:
    def __init__(self, topic_name_of: Callable[[bytes], str | None]):
        """``topic_name_of(topic_id)``: the name of a topic id (Fetch v13+ names topics by id)."""
        self._topics: dict[str, TopicCounters] = {}
        self._topic_name_of = topic_name_of

    def topic(self, name: str) -> TopicCounters:
        counters = self._topics.get(name)
        if counters is None:
            counters = self._topics[name] = TopicCounters()
        return counters

    def items(self) -> list[tuple[str, TopicCounters]]:
        return sorted(self._topics.items())

    def retain(self, names: Iterable[str]) -> None:
        """Forget the topics not in ``names`` (deleted)."""
        keep = set(names)
        for name in [n for n in self._topics if n not in keep]:
            del self._topics[name]

    def remote_copied(self, topic: str, nbytes: int) -> None:
        counters = self.topic(topic)
        counters.remote_copy_requests += 1
        counters.remote_copy_bytes += nbytes

    def remote_copy_failed(self, topic: str) -> None:
        counters = self.topic(topic)
        counters.remote_copy_requests += 1
        counters.remote_copy_errors += 1

    def remote_fetched(self, topic: str, nbytes: int) -> None:
        counters = self.topic(topic)
        counters.remote_fetch_requests += 1
        counters.remote_fetch_bytes += nbytes

    def remote_fetch_failed(self, topic: str) -> None:
        counters = self.topic(topic)
        counters.remote_fetch_requests += 1
        counters.remote_fetch_errors += 1

    def on_response(self, header, request: dict, response, received_ns: int, started_ns: int) -> None:
        if header.api_key == ApiKey.PRODUCE:
            self._produced(request, response)
        elif header.api_key == ApiKey.FETCH and response is not None:
            self._fetched(request, response, header.api_version)

    def _produced(self, request: dict, response) -> None:
        topics = request["TopicData"]
        if len(topics) == 1 and len(topics[0]["PartitionData"]) == 1:      # librdkafka's keyed traffic
            self._produced_one(topics[0], response)
            return
        errors = {} if response is None else {
            (t["Name"], p["Index"]): p["ErrorCode"] for t in response["Responses"] for p in t["PartitionResponses"]}
        for t in request["TopicData"]:
            counters = self.topic(t["Name"])
            for p in t["PartitionData"]:
                counters.produce_requests += 1
                if errors.get((t["Name"], p["Index"]), 0):
                    counters.failed_produce_requests += 1
                elif p["Records"] is not None:
                    counters.bytes_in += len(p["Records"])
                    counters.messages_in += record_count(p["Records"])

    def _produced_one(self, topic: dict, response) -> None:
        """``_produced`` of a request for one partition (its answer, if any, names that one alone)."""
        counters = self.topic(topic["Name"])
        counters.produce_requests += 1
        if response is not None and response["Responses"][0]["PartitionResponses"][0]["ErrorCode"]:
            counters.failed_produce_requests += 1
            return
        records = topic["PartitionData"][0]["Records"]
        if records is not None:
            counters.bytes_in += len(records)
            counters.messages_in += record_count(records)

    def _fetched(self, request: dict, response: dict, version: int) -> None:
        consumer = fetch_replica_id(request, version) < 0
        for t in response["Responses"]:
            name = t["Topic"] if "Topic" in t else self._topic_name_of(t["TopicId"])
            if name is None:
                continue
            counters = self.topic(name)
            for p in t["Partitions"]:
                counters.fetch_requests += 1
                if p["ErrorCode"]:
                    counters.failed_fetch_requests += 1
                elif consumer:
                    counters.bytes_out += _size(p["Records"])


def _size(records) -> int:
    """Bytes of a Fetch answer's records: bytes, or a list of bytes and file regions."""
    if records is None or isinstance(records, (bytes, bytearray, memoryview)):
        return 0 if records is None else len(records)
    return sum(len(part) for part in records)
