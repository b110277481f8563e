"""Each broker serves its metadata apply metrics at metrics.prometheus.listener (Prometheus text format)."""
import urllib.request

import pytest
from cluster import FAST_REPLICATION, wait_for
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

PREFIX = "broker_metadata_metrics_"
pytestmark = [pytest.mark.integration, pytest.mark.cluster(
    controllers=1, brokers=2, props={**FAST_REPLICATION, "metrics.prometheus.listener": "127.0.0.1:0"})]


def _scrape(node) -> dict[str, float]:
    """The node's samples by name (label-free ones, and the histogram's _count)."""
    with urllib.request.urlopen(f"http://{node.announced['metrics']}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return {s.name: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if not s.labels}


def test_every_broker_reports_having_applied_a_new_topic(cluster):
    before = {b.node_id: _scrape(b)[PREFIX + "apply_lag_ms_count"] for b in cluster.brokers}
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("applied", 1, 2)])["applied"].result(30)
    change_offset = cluster.quorum()["HighWatermark"] - 1       # the TopicRecord is at or below it

    for broker in cluster.brokers:
        samples = wait_for(lambda b=broker: (s := _scrape(b))[PREFIX + "last_applied_record_offset"]
                           >= change_offset and s, 15, f"broker {broker.node_id} to apply offset {change_offset}")
        assert samples[PREFIX + "apply_lag_ms_count"] > before[broker.node_id]
        assert samples[PREFIX + "last_applied_record_timestamp"] > 0
        assert samples[PREFIX + "last_applied_record_lag_ms"] >= 0
        assert samples[PREFIX + "metadata_load_error_count"] == 0
        assert samples[PREFIX + "metadata_apply_error_count"] == 0
    assert all("metrics" in c.announced for c in cluster.controllers)
