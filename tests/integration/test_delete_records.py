"""DeleteRecords (21) over sockets on 1 controller + 3 brokers, RF 3.

confluent-kafka's ``AdminClient.delete_records`` and kafka-python's
``delete_records`` raise a partition's log start offset; the answer comes once
every ISR replica has it (LowWatermark); a consumer from earliest then starts
there, ListOffsets -2 on the leader agrees, and a fetch below it is
OFFSET_OUT_OF_RANGE.  Bad input: an offset beyond the high watermark, an
unknown topic, a broker that does not lead the partition.  On a tiered topic
whose older segments live only in remote storage, deleting up to an offset
in the remote range moves the log start there too: ListOffsets -2 answers it,
a consumer from earliest is served from remote storage from it, and the remote
segments wholly below it are expired.

The first two tests share one cluster (``shared_cluster``), each on a topic of its own.
"""
import pytest
from clients import produce_all
from cluster import Cluster, request, running, wait_for
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import OffsetOutOfRangeError
from tiered import TIERED_TOPIC, fs_props, remote_listing, tiered_state

pytestmark = pytest.mark.integration

LIST_OFFSETS, FETCH, DELETE_RECORDS = 2, 1, 21
EARLIEST = -2
NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER = 0, 1, 3, 6
TOPIC, RECORDS = "deletes", 100


def _leader(cluster, topic: str, partition: int = 0):
    parts = wait_for(lambda: cluster.live_partitions(topic, partition + 1), 30, "the topic in metadata")
    return cluster.broker(parts[partition]["LeaderId"])


def _earliest(broker, topic: str, partition: int = 0) -> int:
    body = {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [{"Name": topic, "Partitions": [
        {"PartitionIndex": partition, "CurrentLeaderEpoch": -1, "Timestamp": EARLIEST}]}]}
    p = request("127.0.0.1", broker.port, LIST_OFFSETS, body, version=7)["Topics"][0]["Partitions"][0]
    assert p["ErrorCode"] == NONE, p
    return p["Offset"]


def _first_consumed_offset(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "deletes-reader", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, -2)])        # OFFSET_BEGINNING
    try:
        def first():
            m = c.poll(1.0)
            if m is not None:
                assert m.error() is None, m.error()
                return m
            return None
        return wait_for(first, 60, "a record from earliest").offset()
    finally:
        c.close()


def _delete_raw(broker, topic: str, offset: int, timeout_ms: int = 30000) -> dict:
    body = {"Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": 0, "Offset": offset}]}],
            "TimeoutMs": timeout_ms}
    return request("127.0.0.1", broker.port, DELETE_RECORDS, body, version=2,
                   timeout_s=timeout_ms / 1000 + 10)["Topics"][0]["Partitions"][0]


def test_both_clients_raise_the_log_start_on_every_replica(shared_cluster):
    cluster = shared_cluster
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(30)
    produce_all(cluster.bootstrap, TOPIC, [(0, None, b"v%d" % i, None, None) for i in range(RECORDS)])

    tp = TopicPartition(TOPIC, 0, 40)
    deleted = admin.delete_records([tp], request_timeout=60)[tp].result(60)
    assert deleted.low_watermark == 40
    leader = _leader(cluster, TOPIC)
    assert _earliest(leader, TOPIC) == 40
    assert _first_consumed_offset(cluster.bootstrap, TOPIC) == 40

    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        result = kp.delete_records({KpTopicPartition(TOPIC, 0): 60}, timeout_ms=30000)
        assert result[KpTopicPartition(TOPIC, 0)]["low_watermark"] == 60
        with pytest.raises(OffsetOutOfRangeError):      # beyond the high watermark
            kp.delete_records({KpTopicPartition(TOPIC, 0): RECORDS + 1}, timeout_ms=30000)
    finally:
        kp.close()
    assert _earliest(leader, TOPIC) == 60
    assert _first_consumed_offset(cluster.bootstrap, TOPIC) == 60
    # a fetch below the new log start is out of range
    body = {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 0, "MaxBytes": 1 << 20, "IsolationLevel": 0,
            "Topics": [{"Topic": TOPIC, "Partitions": [{"Partition": 0, "FetchOffset": 10,
                                                        "PartitionMaxBytes": 1 << 20}]}]}
    fetched = request("127.0.0.1", leader.port, FETCH, body, version=11)["Responses"][0]["Partitions"][0]
    assert (fetched["ErrorCode"], fetched["LogStartOffset"]) == (OFFSET_OUT_OF_RANGE, 60)

    # -1 deletes everything below the high watermark, on every replica (the answer waits for the ISR)
    answer = _delete_raw(leader, TOPIC, -1)
    assert (answer["ErrorCode"], answer["LowWatermark"]) == (NONE, RECORDS)
    assert _earliest(leader, TOPIC) == RECORDS


def test_bad_input_gets_kafka_error_codes(shared_cluster):
    cluster = shared_cluster
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("deletes-bad", 1, 1)])["deletes-bad"].result(30)
    produce_all(cluster.bootstrap, "deletes-bad", [(0, None, b"x", None, None)] * 5)
    leader = _leader(cluster, "deletes-bad")
    assert _delete_raw(leader, "deletes-bad", 6)["ErrorCode"] == OFFSET_OUT_OF_RANGE
    other = next(b for b in cluster.brokers if b is not leader)
    wait_for(lambda: cluster.partitions(other, "deletes-bad"), 30, "the other broker to know the topic")
    assert _delete_raw(other, "deletes-bad", 1)["ErrorCode"] == NOT_LEADER_OR_FOLLOWER

    assert _delete_raw(leader, "no-such-topic", 1)["ErrorCode"] == UNKNOWN_TOPIC_OR_PARTITION

    tp = TopicPartition("deletes-bad", 0, 6)
    with pytest.raises(KafkaException) as e:
        admin.delete_records([tp], request_timeout=30)[tp].result(30)
    assert e.value.args[0].name() == "OFFSET_OUT_OF_RANGE", e.value
    assert _earliest(leader, "deletes-bad") == 0


def test_delete_records_on_a_tiered_topic_moves_the_log_start_into_remote_storage(tmp_path):
    props = fs_props(tmp_path / "remote-storage")
    with running(Cluster(tmp_path, controllers=1, brokers=3, props=props)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("tiered-deletes", 1, 2, config=TIERED_TOPIC)])["tiered-deletes"].result(30)
        produce_all(cluster.bootstrap, "tiered-deletes",
                    [(0, None, b"%08d:" % i + b"x" * 180, None, None) for i in range(25_000)])
        state = wait_for(lambda: (s := tiered_state(cluster, "tiered-deletes", 0)) and s["local_start"] > 2
                         and s["tiered"] > 0 and s, 120, "older segments only in remote storage")
        target = state["local_start"] // 2              # in the remote-only range
        tp = TopicPartition("tiered-deletes", 0, target)
        assert admin.delete_records([tp], request_timeout=60)[tp].result(60).low_watermark == target
        leader = _leader(cluster, "tiered-deletes")
        assert _earliest(leader, "tiered-deletes") == target
        assert _first_consumed_offset(cluster.bootstrap, "tiered-deletes") == target     # read from remote
        wait_for(lambda: min(seg.metadata.end_offset for part in remote_listing(props, "tiered-deletes")
                             for seg in part.segments) >= target, 60, "remote segments below the log start expired")
