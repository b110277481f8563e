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
