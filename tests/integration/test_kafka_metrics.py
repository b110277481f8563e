"""Kafka's metrics at /metrics of a busy cluster, scraped over HTTP while real clients work it.

One cluster for the module (2 controllers, 3 brokers, tiered storage on a directory):
confluent-kafka produces and consumes, and each test checks that the families a Kafka
dashboard reads moved by what was sent. Under pytest-xdist a module's tests may be split
over workers (each with a cluster of its own), so each test makes its own traffic; the
follower kill comes last in the file, hence last on any worker.
"""
import gzip
import urllib.error
import urllib.request

import pytest
from clients import produce_all
from cluster import Cluster, running, wait_for
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition
from prometheus_client.parser import text_string_to_metric_families
from tiered import TIERED_TOPIC, fs_props, wait_tiered

from tierlog.cli.monitoring import SHARE_TRAFFIC_METRICS, dashboard_metrics

pytestmark = pytest.mark.integration
BTM = "kafka_server_brokertopicmetrics_"
RECORDS, VALUE_BYTES = 600, 200


@pytest.fixture(scope="module")
def metered(tmp_path_factory):
    root = tmp_path_factory.mktemp("metrics")
    props = {**fs_props(root / "remote-storage"), "metrics.prometheus.listener": "127.0.0.1:0"}
    with running(Cluster(root, controllers=2, brokers=3, props=props)) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        topics = [NewTopic("metered", 3, 3), NewTopic("lagged", 1, 3),
                  NewTopic("tiered-metered", 1, 2, config=TIERED_TOPIC)]
        for future in admin.create_topics(topics, request_timeout=15).values():
            future.result(30)
        yield c


def _get(node, path="/metrics", method="GET", headers=None):
    req = urllib.request.Request(f"http://{node.announced['metrics']}{path}", method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def _samples(node) -> list:
    _, _, body = _get(node)
    return [s for family in text_string_to_metric_families(body.decode()) for s in family.samples]


def _total(nodes, name: str, **labels) -> float:
    return sum(s.value for n in nodes if n.alive() for s in _samples(n)
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def test_produce_and_consume_move_the_topic_and_request_counters(metered):
    brokers = metered.brokers
    produce_all(metered.bootstrap, "metered", [(i % 3, None, b"v" * VALUE_BYTES, None, None)
                                              for i in range(RECORDS)])
    assert _total(brokers, BTM + "messagesin_total", topic="metered") == RECORDS
    bytes_in = _total(brokers, BTM + "bytesin_total", topic="metered")
    assert RECORDS * VALUE_BYTES < bytes_in < RECORDS * (VALUE_BYTES + 100)
    assert _total(brokers, BTM + "totalproducerequests_total", topic="metered") >= 3
    # a produce may fail and be retried (a leader not known yet): counted, and not appended twice
    assert _total(brokers, BTM + "failedproducerequests_total", topic="metered") < \
        _total(brokers, BTM + "totalproducerequests_total", topic="metered")

    consumer = Consumer({"bootstrap.servers": metered.bootstrap, "group.id": "metered-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("metered", p, 0) for p in range(3)])
    got = 0
    while got < RECORDS:
        got += len([m for m in consumer.consume(1000, 1) if m.error() is None])
    consumer.close()
    # what the consumer fetched, at least once (a fetch may be repeated), and nothing for followers
    assert _total(brokers, BTM + "bytesout_total", topic="metered") >= RECORDS * VALUE_BYTES
    assert _total(brokers, BTM + "totalfetchrequests_total", topic="metered") >= 3
    assert _total(brokers, "kafka_network_requestmetrics_requests_total", request="Produce") >= 3
    assert _total(brokers, "kafka_network_requestmetrics_totaltimems_count", request="Produce") >= 3
    assert _total(brokers, "kafka_network_requestmetrics_requestqueuetimems_count", request="FetchConsumer") >= 1
    assert _total(brokers, "kafka_network_requestmetrics_requests_total", request="FetchFollower") >= 1
    assert _total(brokers, "kafka_log_log_size", topic="metered") >= 3 * bytes_in     # RF 3
    assert _total(brokers, "kafka_server_replicamanager_partitioncount") >= 3 * 3 + 1 + 2
    # on a loaded machine a broker may miss its session for a while: the gauge follows
    wait_for(lambda: _total(brokers, "kafka_server_replicamanager_leadercount") >= 3 + 1 + 1, 30,
             "every partition led")


def test_group_lag_is_what_was_left_unconsumed_and_the_dashboard_reads_served_names(metered):
    produce_all(metered.bootstrap, "lagged", [(0, None, b"x", None, None) for _ in range(30)])
    # kafka-python's commit waits for the group's coordinator (librdkafka's gives up while it is looked up)
    consumer = KafkaConsumer(bootstrap_servers=metered.bootstrap, group_id="lagging", enable_auto_commit=False,
                             auto_offset_reset="earliest")
    consumer.assign([KafkaTopicPartition("lagged", 0)])
    seen = []
    while len(seen) < 10:
        seen += [r for records in consumer.poll(1000, max_records=10 - len(seen)).values() for r in records]
    consumer.commit({KafkaTopicPartition("lagged", 0): OffsetAndMetadata(seen[-1].offset + 1, "", -1)})
    consumer.close()
    labels = {"consumergroup": "lagging", "topic": "lagged", "partition": "0"}
    wait_for(lambda: _total(metered.brokers, "kafka_consumergroup_lag", **labels) == 20, 15,
             "a lag of 20 on the group's coordinator")
    assert _total(metered.brokers, "kafka_consumergroup_current_offset", **labels) == 10

    served = {s.name for n in metered.nodes for s in _samples(n)}
    served |= {name.removesuffix("_bucket") for name in served}
    assert dashboard_metrics() - served - SHARE_TRAFFIC_METRICS == set()    # those: test_share_consumer.py


def test_exactly_one_controller_is_active(metered):
    counts = [_total([c], "kafka_controller_kafkacontroller_activecontrollercount") for c in metered.controllers]
    assert sorted(counts) == [0, 1]
    assert _total(metered.controllers, "kafka_controller_kafkacontroller_globalpartitioncount") >= 3 + 1 + 1
    assert _total(metered.controllers, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert _total(metered.brokers, "kafka_controller_kafkacontroller_activecontrollercount") == 0


def test_tiering_moves_the_remote_copy_metrics(metered):
    produce_all(metered.bootstrap, "tiered-metered", [(0, None, b"t" * 1000, None, None) for _ in range(3500)])
    wait_for(lambda: _total(metered.brokers, BTM + "remotecopybytes_total", topic="tiered-metered") > 0, 60,
             "a segment of tiered-metered copied to remote storage")
    assert _total(metered.brokers, BTM + "remotelogsizebytes", topic="tiered-metered") > 0
    assert _total(metered.brokers, BTM + "remotecopyerrors_total", topic="tiered-metered") == 0
    # once local retention dropped the copied segments, a read from offset 0 is served from remote storage
    wait_tiered(metered, "tiered-metered", 1, {0: 3500})
    consumer = Consumer({"bootstrap.servers": metered.bootstrap, "group.id": "tiered-reader"})
    consumer.assign([TopicPartition("tiered-metered", 0, 0)])
    first = None
    while first is None:
        first = next((m for m in consumer.consume(1, 1) if m.error() is None), None)
    consumer.close()
    assert first.offset() == 0
    assert _total(metered.brokers, BTM + "remotefetchbytes_total", topic="tiered-metered") > 0


def test_head_gzip_openmetrics_and_process_metrics(metered):
    node = metered.brokers[0]
    status, headers, body = _get(node)
    assert status == 200 and body and "process_resident_memory_bytes" in body.decode()
    status, head_headers, head_body = _get(node, method="HEAD")
    assert status == 200 and head_body == b"" and int(head_headers["Content-Length"]) > 0
    status, headers, body = _get(node, headers={"Accept-Encoding": "gzip"})
    assert headers["Content-Encoding"] == "gzip"
    assert "kafka_server_replicamanager_partitioncount" in gzip.decompress(body).decode()
    status, headers, body = _get(node, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert headers["Content-Type"].startswith("application/openmetrics-text") and body.endswith(b"# EOF\n")
    assert _get(node, "/other")[0] == 404
    assert _get(node, method="POST")[0] == 405


def test_under_replicated_partitions_when_a_follower_dies(metered):
    # on a loaded machine a follower may fall behind replica.lag.time.max.ms for a while: wait until
    # every ISR is whole again (ISR expands), then kill one
    try:
        wait_for(lambda: _total(metered.brokers, "kafka_server_replicamanager_underreplicatedpartitions") == 0,
                 90, "no under-replicated partition")
    except AssertionError:
        under = [s.labels for b in metered.brokers for s in _samples(b)
                 if s.name == "kafka_cluster_partition_underreplicated" and s.value]
        raise AssertionError(f"still under-replicated: {under}\n{metered.logs_tail(60)}") from None
    victim = metered.brokers[2]
    victim.kill9()
    live = [b for b in metered.brokers if b is not victim]
    wait_for(lambda: _total(live, "kafka_server_replicamanager_underreplicatedpartitions") > 0, 30,
             "under-replicated partitions on the live brokers")
