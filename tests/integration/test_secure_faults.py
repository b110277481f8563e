"""A kill -9 of a partition leader under an acks=all stream on a 3 controller + 3 broker
cluster where everything is SASL_SSL (laid out as ``tierlog up --security sasl_ssl``: SCRAM-SHA-512
between brokers, PLAIN between controllers, TLS everywhere): a new leader is elected over the
secured channels, the old leader restarts and rejoins the ISR, and every acknowledged record is
read back at its acknowledged offset (the lean TLS version of test_replication_faults.py)."""

from __future__ import annotations

import pytest
from clients import AckedStream, read_back
from cluster import wait_for
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from secured import check_logs, start_secured

pytestmark = pytest.mark.timeout(300)
TOPIC = "secured-faults"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_secured(tmp_path_factory.mktemp("secure-faults"), controllers=3, brokers=3,
                            overrides={"offsets.topic.num.partitions": "1"})
    yield cluster
    check_logs(cluster)


def _partition(admin: AdminClient):
    """Partition 0's metadata (leader, isrs) as a live broker answers it, None while unknown."""
    try:
        topic = admin.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
    except KafkaException:      # a broker just killed: ask again
        return None
    return None if topic is None or topic.error is not None or 0 not in topic.partitions else topic.partitions[0]


def test_acked_records_survive_kill9_of_the_leader_over_sasl_ssl(cluster):
    admin = AdminClient(cluster.admin)
    admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(timeout=30)
    wait_for(lambda: (p := _partition(admin)) and p.leader >= 0 and len(p.isrs) == 3, 30, "a full ISR")
    streamer = AckedStream(cluster.bootstrap, TOPIC, partitions=1, conf=cluster.admin)
    streamer.start()
    try:
        wait_for(lambda: len(streamer.acked) >= 200, 30, "the first acknowledged records")
        victim_id = _partition(admin).leader
        victim = next(b for b in cluster.brokers if b.node_id == victim_id)
        victim.kill9()
        wait_for(lambda: (p := _partition(admin)) and p.leader not in (victim_id, -1), 30, "a new leader")
        before = len(streamer.acked)
        wait_for(lambda: len(streamer.acked) > before + 100, 40, "acknowledgements after the kill")
        victim.start()
        wait_for(lambda: (p := _partition(admin)) and victim_id in p.isrs, 40, f"broker {victim_id} back in the ISR")
    finally:
        left = streamer.finish()
    assert left == 0 and not streamer.errors, (left, streamer.errors[:5])
    mine = streamer.acked_on(0)
    read = read_back(cluster.bootstrap, TOPIC, 1, conf=cluster.admin)[0]
    missing = [(off, v) for off, v in mine if read.get(off) != v]
    assert not missing, f"{len(missing)} of {len(mine)} acknowledged records not read back, first {missing[:5]}"
    assert len(set(read.values())) == len(read), "duplicates despite idempotence"
