"""BrokerTopicStats: Kafka's BrokerTopicMetrics counted once per answered Produce / Fetch, from the batch headers."""
from tierlog.broker.topic_stats import BrokerTopicStats, record_count
from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader
from tierlog.records import CompressionType, Record, build_batch

TOPIC_ID = b"\x01" * 16


def _batch(count: int, base: int = 0, compression=CompressionType.NONE) -> bytes:
    return build_batch([Record(base + i, 1_000, None, b"v" * 10) for i in range(count)], base, compression)


def test_record_count_reads_each_batch_header_compressed_or_not():
    data = _batch(3) + _batch(5, 3, CompressionType.ZSTD) + _batch(1, 8)
    assert record_count(data) == 9
    assert record_count(data + b"\x00" * 20) == 9          # a torn tail is not a batch
    assert record_count(b"\xff" * 100) == 0                 # nor is garbage (a negative length)
    assert record_count(b"") == 0


def _header(api_key, version=9):
    return RequestHeader(api_key, version, 1, "test")


def test_produce_counts_appended_bytes_and_records_and_failed_partitions():
    stats = BrokerTopicStats(lambda topic_id: None)
    ok, refused = _batch(4), _batch(2)
    request = {"TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": ok},
                                                             {"Index": 1, "Records": refused}]}]}
    response = {"Responses": [{"Name": "t", "PartitionResponses": [{"Index": 0, "ErrorCode": 0},
                                                                   {"Index": 1, "ErrorCode": 6}]}]}
    stats.on_response(_header(ApiKey.PRODUCE), request, response, 0, 0)
    stats.on_response(_header(ApiKey.PRODUCE), request, None, 0, 0)          # acks=0: no answer, appended
    t = stats.topic("t")
    assert (t.bytes_in, t.messages_in) == (len(ok) + len(ok) + len(refused), 4 + 4 + 2)
    assert (t.produce_requests, t.failed_produce_requests) == (4, 1)


def test_fetch_counts_consumer_bytes_by_topic_id_and_not_followers():
    stats = BrokerTopicStats(lambda topic_id: "t" if topic_id == TOPIC_ID else None)
    records = [_batch(2), b"xyz"]
    response = {"Responses": [
        {"TopicId": TOPIC_ID, "Partitions": [{"PartitionIndex": 0, "ErrorCode": 0, "Records": records},
                                             {"PartitionIndex": 1, "ErrorCode": 1, "Records": b""}]},
        {"TopicId": b"\x02" * 16, "Partitions": [{"PartitionIndex": 0, "ErrorCode": 0, "Records": b"abc"}]}]}
    stats.on_response(_header(ApiKey.FETCH, 16), {"ReplicaState": {"ReplicaId": -1}}, response, 0, 0)
    stats.on_response(_header(ApiKey.FETCH, 16), {"ReplicaState": {"ReplicaId": 2}}, response, 0, 0)
    t = stats.topic("t")
    assert t.bytes_out == len(records[0]) + 3                 # the consumer's only
    assert (t.fetch_requests, t.failed_fetch_requests) == (4, 2)
    assert [name for name, _ in stats.items()] == ["t"]       # an unknown topic id is not counted


def test_remote_counters_and_deleted_topics_are_forgotten():
    stats = BrokerTopicStats(lambda topic_id: None)
    stats.remote_copied("a", 100)
    stats.remote_copy_failed("a")
    stats.remote_fetched("b", 7)
    stats.remote_fetch_failed("b")
    a, b = stats.topic("a"), stats.topic("b")
    assert (a.remote_copy_bytes, a.remote_copy_requests, a.remote_copy_errors) == (100, 2, 1)
    assert (b.remote_fetch_bytes, b.remote_fetch_requests, b.remote_fetch_errors) == (7, 2, 1)
    stats.retain(["b"])
    assert [name for name, _ in stats.items()] == ["b"]
