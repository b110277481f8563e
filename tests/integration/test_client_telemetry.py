"""Client telemetry (KIP-714) end to end: confluent-kafka pushes, the broker's /metrics shows it.

One combined node with a metrics listener. `tierlog configs --entity-type client-metrics`
creates a subscription (every producer metric, pushed each second, for client ids matching
``telemetry-.*``); a confluent-kafka producer with such a client id gets it through
GetTelemetrySubscriptions and pushes OpenTelemetry metrics with PushTelemetry; the node's
/metrics then has librdkafka's producer metrics labelled with the client's instance id and
client id. ListClientMetricsResources and DescribeConfigs answer the subscription; a
producer whose client id does not match is subscribed to nothing and so pushes nothing.
Kafka's errors over a socket: a push with a wrong subscription id is UNKNOWN_SUBSCRIPTION_ID,
one too large TELEMETRY_TOO_LARGE, a second GetTelemetrySubscriptions within the interval
THROTTLING_QUOTA_EXCEEDED, a push after the terminating one INVALID_REQUEST.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
import uuid

import pytest
from cluster import wait_for
from confluent_kafka import Producer
from nodeproc import NodeProcess, free_port

from tierlog.net.blocking import BlockingConnection
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(240)

CLI = [sys.executable, "-m", "tierlog.cli.main"]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    node = NodeProcess(tmp_path_factory.mktemp("telemetry"), 1, free_port(), {
        "metrics.prometheus.listener": "127.0.0.1:0", "telemetry.max.bytes": "200000",
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1"})
    node.start()
    yield node
    node.stop()
    log = node.log_path.read_text(errors="replace")
    assert "Traceback" not in log, node.log_tail(60)


def _cli(node, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([*CLI, "configs", "--bootstrap-server", node.bootstrap, *args], capture_output=True,
                          text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    return done


def _scrape(node) -> str:
    with urllib.request.urlopen(f"http://{node.announced['metrics']}/metrics", timeout=10) as resp:
        return resp.read().decode()


@pytest.fixture(scope="module")
def subscribed(node):
    _cli(node, "--entity-type", "client-metrics", "--entity-name", "producers", "--alter", "--add-config",
         "metrics=[org.apache.kafka.producer.],interval.ms=1000,match=[client_id=telemetry-.*]")
    return node


def test_the_subscription_is_listed_and_described(subscribed):
    described = _cli(subscribed, "--entity-type", "client-metrics", "--describe").stdout
    assert "Dynamic configs for client-metric producers are interval.ms=1000,match=client_id=telemetry-.*," \
           "metrics=org.apache.kafka.producer." in described, described
    refused = subprocess.run([*CLI, "configs", "--bootstrap-server", subscribed.bootstrap, "--entity-type",
                              "client-metrics", "--entity-name", "bad", "--alter", "--add-config", "interval.ms=5"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 1 and "interval.ms" in refused.stderr and len(refused.stderr.splitlines()) == 1


def _produce(node, client_id: str, seconds_of_pushes: int) -> list[str]:
    """A producer that sends a few records and lives long enough to push; its /metrics lines."""
    producer = Producer({"bootstrap.servers": node.bootstrap, "client.id": client_id, "linger.ms": 5})
    topic = f"tele-{uuid.uuid4().hex[:6]}"
    lines: list[str] = []

    def pushed() -> bool:
        for i in range(5):
            producer.produce(topic, b"v%d" % i)
        producer.poll(0.5)
        lines[:] = [line for line in _scrape(node).splitlines() if f'client_id="{client_id}"' in line]
        return any(line.startswith("org_apache_kafka_producer_") for line in lines)

    try:
        if seconds_of_pushes:
            wait_for(pushed, 60, f"{client_id}'s pushed metrics on /metrics")
        else:
            for _ in range(6):
                pushed()
    finally:
        producer.flush(10)
    return lines


def test_confluent_kafka_pushes_its_metrics_to_the_broker(subscribed):
    lines = _produce(subscribed, "telemetry-orders", 1)
    names = {line.split("{")[0] for line in lines}
    assert any(n.startswith("org_apache_kafka_producer_node_request_latency") for n in names), sorted(names)
    instance = [line for line in lines if "client_instance_id=" in line]
    assert instance, lines[:5]
    assert all(line.startswith("org_apache_kafka_producer_") for line in lines), sorted(names)
    scrape = _scrape(subscribed)
    assert "kafka_server_client_metrics_instance_count" in scrape
    assert "tierlog_client_telemetry_series_dropped_total 0.0" in scrape


def test_a_client_no_subscription_matches_pushes_nothing(subscribed):
    assert _produce(subscribed, "other-app", 0) == []


def test_kafkas_errors_over_a_socket(subscribed):
    host, port = subscribed.bootstrap.split(":")
    conn = BlockingConnection(host, int(port), client_id="telemetry-raw", timeout_s=10)
    try:
        got = conn.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"ClientInstanceId": bytes(16)})
        assert got["ErrorCode"] == 0 and got["ClientInstanceId"] != bytes(16)
        assert got["PushIntervalMs"] == 1000 and got["RequestedMetrics"] == ["org.apache.kafka.producer."]
        assert got["AcceptedCompressionTypes"] == [4, 3, 1, 2] and got["TelemetryMaxBytes"] == 200000
        instance, subscription = got["ClientInstanceId"], got["SubscriptionId"]
        again = conn.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"ClientInstanceId": instance})
        assert again["ErrorCode"] == ErrorCode.THROTTLING_QUOTA_EXCEEDED

        def push(**fields) -> int:
            body = {"ClientInstanceId": instance, "SubscriptionId": subscription, "Terminating": False,
                    "CompressionType": 0, "Metrics": b""} | fields
            return conn.request(ApiKey.PUSH_TELEMETRY, 0, body)["ErrorCode"]
        assert push(SubscriptionId=subscription + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        assert push(Metrics=bytes(200001)) == ErrorCode.TELEMETRY_TOO_LARGE
        assert push(CompressionType=9) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert push(Terminating=True) == ErrorCode.NONE
        assert push() == ErrorCode.INVALID_REQUEST                      # after the terminating push
        assert push(ClientInstanceId=bytes(16)) == ErrorCode.INVALID_REQUEST
        listed = conn.request(ApiKey.LIST_CLIENT_METRICS_RESOURCES, 0, {})
        assert listed == {"ThrottleTimeMs": 0, "ErrorCode": 0, "ClientMetricsResources": [{"Name": "producers"}]}
    finally:
        conn.close()
