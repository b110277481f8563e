"""RequestMetrics: Kafka's RequestMetrics per request type (RequestsPerSec, TotalTimeMs, RequestQueueTimeMs)."""
from prometheus_client import CollectorRegistry

from tierlog.net.request_metrics import RequestMetrics, request_name
from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

MS = 1_000_000


def test_kafka_request_names():
    assert request_name(ApiKey.PRODUCE) == "Produce"
    assert request_name(ApiKey.LIST_OFFSETS) == "ListOffsets"
    assert request_name(ApiKey.DESCRIBE_TOPIC_PARTITIONS) == "DescribeTopicPartitions"
    assert request_name(ApiKey.FETCH) == "FetchConsumer"
    assert request_name(ApiKey.FETCH, from_follower=True) == "FetchFollower"


def test_counts_and_times_per_request_type_and_version():
    registry = CollectorRegistry()
    metrics = RequestMetrics(registry)
    metrics.observe(ApiKey.PRODUCE, 9, False, received_ns=0, started_ns=3 * MS, done_ns=20 * MS)
    metrics.observe(ApiKey.PRODUCE, 10, False, received_ns=0, started_ns=0, done_ns=1 * MS)
    metrics.on_response(RequestHeader(ApiKey.FETCH, 16, 1, "f"), {"ReplicaState": {"ReplicaId": 3}}, {}, 0, 0)

    def value(name, **labels):
        return registry.get_sample_value(name, labels)

    assert value("kafka_network_requestmetrics_requests_total", request="Produce", version="9") == 1
    assert value("kafka_network_requestmetrics_requests_total", request="Produce", version="10") == 1
    assert value("kafka_network_requestmetrics_requests_total", request="FetchFollower", version="16") == 1
    assert value("kafka_network_requestmetrics_totaltimems_sum", request="Produce") == 21
    assert value("kafka_network_requestmetrics_requestqueuetimems_sum", request="Produce") == 3
    assert value("kafka_network_requestmetrics_totaltimems_bucket", request="Produce", le="1.0") == 1


def test_buckets_counts_and_sums_as_prometheus_histograms_expose_them():
    """The collector's samples equal those of prometheus_client's own Counter and Histograms fed alike."""
    import random

    from prometheus_client import Counter, Histogram

    from tierlog.net.request_metrics import TIME_BUCKETS_MS
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    metrics = RequestMetrics(ours)
    count = Counter("kafka_network_requestmetrics_requests", "", ["request", "version"], registry=theirs)
    total = Histogram("kafka_network_requestmetrics_totaltimems", "", ["request"], buckets=TIME_BUCKETS_MS,
                      registry=theirs)
    queue = Histogram("kafka_network_requestmetrics_requestqueuetimems", "", ["request"], buckets=TIME_BUCKETS_MS,
                      registry=theirs)
    rng = random.Random(36)
    for _ in range(500):
        key = rng.choice([ApiKey.PRODUCE, ApiKey.METADATA])
        received, started = rng.randrange(10 * MS), rng.randrange(10 * MS)
        done = received + rng.choice([0, MS // 2, MS, 5 * MS, rng.randrange(40_000 * MS)])
        metrics.observe(key, 9, False, received, started, done)
        name = request_name(key)
        count.labels(name, "9").inc()
        total.labels(name).observe((done - received) / MS)
        queue.labels(name).observe(max(0, started - received) / MS)

    def samples(registry):
        return sorted((s.name, tuple(sorted(s.labels.items())), round(s.value, 6))
                      for family in registry.collect() for s in family.samples if not s.name.endswith("_created"))
    assert samples(ours) == samples(theirs)
