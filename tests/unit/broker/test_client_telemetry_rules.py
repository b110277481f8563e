"""KIP-714 on the broker, sans-IO: GetTelemetrySubscriptions / PushTelemetry rules, the pushed
OTLP metrics as Prometheus series, and the bounds (instances, series)."""

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from prometheus_client import CollectorRegistry, generate_latest

from tierlog.broker import client_telemetry
from tierlog.broker.client_telemetry import ClientTelemetry
from tierlog.broker.telemetry_series import TelemetrySeries
from tierlog.protocol.errors import ErrorCode
from tierlog.records.compression import CompressionType, compress

SUBS = {"producers": {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000"}}
CLIENT = {"client_id": "orders", "principal": "User:alice", "client_source_address": "10.0.0.7"}


def _metrics(value: float, *, name="org.apache.kafka.producer.record.send.total", monotonic=True,
             delta=True, node_id="1") -> bytes:
    point = metrics_pb2.NumberDataPoint(as_double=value, attributes=[
        KeyValue(key="node.id", value=AnyValue(string_value=node_id))])
    if monotonic is None:
        metric = metrics_pb2.Metric(name=name, gauge=metrics_pb2.Gauge(data_points=[point]))
    else:
        metric = metrics_pb2.Metric(name=name, sum=metrics_pb2.Sum(
            data_points=[point], is_monotonic=monotonic, aggregation_temporality=1 if delta else 2))
    resource = metrics_pb2.ResourceMetrics(scope_metrics=[metrics_pb2.ScopeMetrics(metrics=[metric])])
    resource.resource.attributes.append(KeyValue(key="client_rack", value=AnyValue(string_value="r1")))
    return metrics_pb2.MetricsData(resource_metrics=[resource]).SerializeToString()


def _telemetry(subs=SUBS, max_bytes=100_000, series_max=10_000):
    holder = {"subs": subs}
    ids = iter(bytes([i]) * 16 for i in range(1, 255))
    telemetry = ClientTelemetry(lambda: holder["subs"], max_bytes, None, new_id=lambda: next(ids))
    telemetry.series = TelemetrySeries(lambda: telemetry.instance_count, series_max)
    return telemetry, holder


def _push(t, got, now, **fields):
    body = {"ClientInstanceId": got["ClientInstanceId"], "SubscriptionId": got["SubscriptionId"],
            "Terminating": False, "CompressionType": 0, "Metrics": b""} | fields
    return t.push(body, CLIENT, now)


def _exposed(series: TelemetrySeries) -> str:
    registry = CollectorRegistry()
    registry.register(series)
    series.prepare()
    return generate_latest(registry).decode()


def test_get_assigns_an_instance_and_answers_the_subscription():
    t, _ = _telemetry()
    got = t.get_subscriptions(bytes(16), CLIENT, 0)
    assert got["ErrorCode"] == 0 and got["ClientInstanceId"] == bytes([1]) * 16
    assert got["PushIntervalMs"] == 1000 and got["RequestedMetrics"] == ["org.apache.kafka.producer."]
    assert got["AcceptedCompressionTypes"] == [4, 3, 1, 2] and got["DeltaTemporality"] is True
    assert got["TelemetryMaxBytes"] == 100_000
    again = t.get_subscriptions(got["ClientInstanceId"], CLIENT, 500)
    assert again["ErrorCode"] == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert t.get_subscriptions(got["ClientInstanceId"], CLIENT, 1500)["ErrorCode"] == 0


def test_push_intervals_and_the_terminating_push():
    t, _ = _telemetry()
    got = t.get_subscriptions(bytes(16), CLIENT, 0)
    assert _push(t, got, 10) == 0                               # the first push after a get may come early
    assert _push(t, got, 500) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert _push(t, got, 1010) == 0
    assert _push(t, got, 1200, Terminating=True) == 0           # the terminating push is never throttled
    assert _push(t, got, 5000) == ErrorCode.INVALID_REQUEST      # nothing after it
    assert _push(t, got, 5000, ClientInstanceId=bytes(16)) == ErrorCode.INVALID_REQUEST


def test_errors_in_kafkas_order():
    t, holder = _telemetry(max_bytes=1000)
    got = t.get_subscriptions(bytes(16), CLIENT, 0)
    assert _push(t, got, 10, SubscriptionId=got["SubscriptionId"] + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    # after UNKNOWN_SUBSCRIPTION_ID the client may ask again at once
    assert t.get_subscriptions(got["ClientInstanceId"], CLIENT, 20)["ErrorCode"] == 0
    assert _push(t, got, 30, CompressionType=7) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert _push(t, got, 40, Metrics=bytes(1001)) == ErrorCode.TELEMETRY_TOO_LARGE
    t2, _ = _telemetry(max_bytes=1000)
    got2 = t2.get_subscriptions(bytes(16), CLIENT, 0)
    bomb = compress(CompressionType.ZSTD, bytes(5000))           # small on the wire, too large unpacked
    assert _push(t2, got2, 10, CompressionType=4, Metrics=bomb) == ErrorCode.TELEMETRY_TOO_LARGE
    t3, _ = _telemetry()
    got3 = t3.get_subscriptions(bytes(16), CLIENT, 0)
    assert _push(t3, got3, 10, Metrics=b"\xff\xff\xff") == ErrorCode.INVALID_RECORD
    # a changed subscription set gives the instance a new id: its next push is refused, it asks again
    holder["subs"] = {"producers": {**SUBS["producers"], "interval.ms": "2000"}}
    assert _push(t, got, 5000) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    renewed = t.get_subscriptions(got["ClientInstanceId"], CLIENT, 5010)
    assert renewed["PushIntervalMs"] == 2000 and renewed["SubscriptionId"] != got["SubscriptionId"]


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.ZSTD, CompressionType.LZ4,
                                   CompressionType.GZIP, CompressionType.SNAPPY])
def test_pushed_metrics_become_labelled_series(codec):
    t, _ = _telemetry()
    got = t.get_subscriptions(bytes(16), CLIENT, 0)
    payload = _metrics(3)
    if codec != CompressionType.NONE:
        payload = compress(codec, payload)
    assert _push(t, got, 10, CompressionType=int(codec), Metrics=payload) == 0
    assert _push(t, got, 1010, CompressionType=0, Metrics=_metrics(2)) == 0
    text = _exposed(t.series)
    line = [x for x in text.splitlines() if x.startswith("org_apache_kafka_producer_record_send_total{")]
    assert len(line) == 1 and line[0].endswith(" 5.0"), text          # deltas add up
    for label in ('client_id="orders"', 'principal="User:alice"', 'client_source_address="10.0.0.7"',
                  'client_rack="r1"', 'node_id="1"', 'client_instance_id="01010101-0101-0101-0101-010101010101"'):
        assert label in line[0]
    assert "# TYPE org_apache_kafka_producer_record_send_total counter" in text
    assert "kafka_server_client_metrics_instance_count 1.0" in text


def test_gauges_and_cumulative_sums_replace():
    series = TelemetrySeries()
    for value in (7, 4):
        series.take(b"i" * 16, CLIENT, _metrics(value, name="a.gauge", monotonic=None), 0)
        series.take(b"i" * 16, CLIENT, _metrics(value, name="a.total", delta=False), 0)
    text = _exposed(series)
    assert any(x.startswith("a_gauge{") and x.endswith(" 4.0") for x in text.splitlines()), text
    assert any(x.startswith("a_total{") and x.endswith(" 4.0") for x in text.splitlines()), text


def test_series_are_bounded_and_go_with_their_client():
    t, _ = _telemetry(series_max=3)
    got = t.get_subscriptions(bytes(16), CLIENT, 0)
    for i, now in enumerate((10, 1010, 2010, 3010, 4010)):
        assert _push(t, got, now, Metrics=_metrics(1, node_id=str(i))) == 0
    assert t.series.series_count == 3 and t.series.dropped == 2
    assert "tierlog_client_telemetry_series_dropped_total 2.0" in _exposed(t.series)
    assert _push(t, got, 5010, Terminating=True) == 0
    assert t.series.series_count == 0


def test_instances_are_bounded_and_expire(monkeypatch):
    monkeypatch.setattr(client_telemetry, "CLIENT_INSTANCES_MAX", 2)
    t, _ = _telemetry()
    ids = [t.get_subscriptions(bytes(16), CLIENT, 0)["ClientInstanceId"] for _ in range(3)]
    assert t.instance_count == 2
    assert t.get_subscriptions(ids[0], CLIENT, 1)["ErrorCode"] == 0     # evicted: a new instance may ask at once
    assert t.get_subscriptions(ids[2], CLIENT, 1)["ErrorCode"] == ErrorCode.THROTTLING_QUOTA_EXCEEDED   # kept
    t.expire(10 * 60_000)
    assert t.instance_count == 0
