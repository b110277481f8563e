"""Tiered storage (KIP-405) over sockets with real processes: 1 controller + 3 brokers.

1. A tiered topic with 1 MiB segments and 1 MiB of local retention: 50k records
   from confluent-kafka, wait until most segments are in remote storage and gone
   locally, then read every record from offset 0 with confluent-kafka and with
   kafka-python: the same bytes at the same offsets. Remote storage describes
   itself (listed with no broker), and its segments do not overlap.
2. The same against S3 served by a moto server process.
3. kill -9 of a leader while uploads run: nothing acknowledged is lost, no
   overlapping remote segments, uploads go on under the new leader.
4. Deleting the topic deletes its remote objects.
5. Bad tiered configs are refused with INVALID_CONFIG.
6. An empty follower rebuilds its state from remote storage (KIP-405's follower path).
7. Remote storage that cannot be reached: retried uploads, nothing deleted locally, a clear log line.

1 and 5 share a cluster (``fs_cluster``); the others change theirs (a kill, a wipe, a deleted
topic whose every remote object must go) or need another store.
"""
from __future__ import annotations

import shutil

import pytest
from clients import AckedStream, consume_all
from cluster import Cluster, running, wait_for
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition
from nodeproc import free_port
from tiered import (
    TIERED_TOPIC,
    MotoServer,
    assert_no_overlap,
    fs_props,
    leader_broker,
    offsets,
    remote_listing,
    tiered_state,
    wait_tiered,
    with_moto_credentials,
)

RECORDS, PARTITIONS = 50_000, 2
VALUE_PAD = b"x" * 180          # ~200-byte records: about 5 segments of 1 MiB per partition


def _value(i: int) -> bytes:
    return b"%08d:" % i + VALUE_PAD


def _create(cluster, topic: str, partitions: int, rf: int = 3, configs: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, rf, config={**TIERED_TOPIC, **(configs or {})})],
                                  request_timeout=15)
    futures[topic].result(timeout=20)


def _produce(cluster, topic: str, count: int) -> dict[int, dict[int, bytes]]:
    """``count`` records round-robin over the partitions; partition -> {offset: value} as acknowledged."""
    acked: dict[int, dict[int, bytes]] = {}
    errors = []

    def delivered(err, msg):
        if err:
            errors.append(err)
        else:
            acked.setdefault(msg.partition(), {})[msg.offset()] = msg.value()

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.size": 64 * 1024, "enable.idempotence": True})
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=_value(i), partition=i % PARTITIONS, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0 and not errors, errors[:3]
    return acked


def _read_confluent(cluster, topic: str, expected: int) -> dict[int, dict[int, bytes]]:
    out: dict[int, dict[int, bytes]] = {}
    for m in consume_all(cluster.bootstrap, topic, PARTITIONS, expected, timeout_s=180):
        out.setdefault(m.partition(), {})[m.offset()] = m.value()
    return out


def _read_kafka_python(cluster, topic: str, ends: dict[int, int]) -> dict[int, dict[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap.split(","), enable_auto_commit=False,
                             group_id=None, consumer_timeout_ms=30_000, fetch_max_bytes=8 * 1024 * 1024)
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    out: dict[int, dict[int, bytes]] = {p: {} for p in range(PARTITIONS)}
    try:
        for m in consumer:
            out[m.partition][m.offset] = m.value
            if all(len(out[p]) >= ends[p] for p in range(PARTITIONS)):
                break
    finally:
        consumer.close()
    return out


def _check_whole_topic_reads_back(cluster, topic: str, settings: dict) -> None:
    acked = _produce(cluster, topic, RECORDS)
    ends = {p: max(offsets) + 1 for p, offsets in acked.items()}
    assert sum(len(v) for v in acked.values()) == RECORDS and all(len(acked[p]) == ends[p] for p in acked)
    states = wait_tiered(cluster, topic, PARTITIONS, ends)
    assert all(s["start"] == 0 for s in states.values()), states      # retention.* unlimited: nothing expired
    listing = remote_listing(settings, topic)
    assert {p.topic_id_partition.partition for p in listing} == set(range(PARTITIONS))
    for p in listing:
        assert p.start_offset == 0 and p.end_offset >= states[p.topic_id_partition.partition]["tiered"]
    assert_no_overlap(listing)
    assert _read_confluent(cluster, topic, RECORDS) == acked
    assert _read_kafka_python(cluster, topic, ends) == acked


@pytest.fixture(scope="module")
def fs_cluster(tmp_path_factory):
    """(cluster, its broker settings): 1 controller + 3 brokers tiering to a directory."""
    root = tmp_path_factory.mktemp("tiered-fs")
    props = fs_props(root / "remote-storage")
    with running(Cluster(root, controllers=1, brokers=3, props=props)) as cluster:
        yield cluster, props


def test_whole_topic_reads_back_from_local_directory_storage(fs_cluster):
    cluster, props = fs_cluster
    _create(cluster, "tiered", PARTITIONS)
    _check_whole_topic_reads_back(cluster, "tiered", props)


def test_whole_topic_reads_back_from_s3(tmp_path, monkeypatch):
    with_moto_credentials(monkeypatch)
    with MotoServer(tmp_path / "moto") as moto:
        props = {**fs_props(tmp_path / "unused"), **moto.settings()}
        props.pop("rsm.config.storage.root")
        with running(Cluster(tmp_path, controllers=1, brokers=3, props=props)) as cluster:
            _create(cluster, "tiered-s3", PARTITIONS)
            _check_whole_topic_reads_back(cluster, "tiered-s3", props)


def test_leader_killed_while_uploading_loses_nothing(tmp_path):
    props = fs_props(tmp_path / "remote-storage")
    with running(Cluster(tmp_path, controllers=1, brokers=3, props=props)) as cluster:
        _create(cluster, "kill", 1)
        stream = AckedStream(cluster.bootstrap, "kill", partitions=1, pause_s=0.0005)
        stream.start()
        first = wait_for(lambda: (s := tiered_state(cluster, "kill", 0)) and s["tiered"] > 0 and s,
                         120, "a first upload")
        victim = next(b for b in cluster.brokers
                      if b.node_id == next(p["LeaderId"] for p in cluster.live_partitions("kill", 1)))
        victim.kill9()
        wait_for(lambda: (s := tiered_state(cluster, "kill", 0)) and s["tiered"] > first["tiered"], 120,
                 "uploads going on under the new leader")
        assert stream.finish() == 0 and not stream.errors, stream.errors[:3]
        acked = dict(stream.acked_on(0))
        victim.start()
        wait_for(lambda: (s := tiered_state(cluster, "kill", 0)) and s["local_start"] > 0, 120,
                 "local segments deleted after upload")
        read = {m.offset(): m.value() for m in consume_all(cluster.bootstrap, "kill", 1, max(acked) + 1, 180)}
        assert {o: v for o, v in read.items() if o in acked} == acked
        wait_for(lambda: _no_overlap(remote_listing(props, "kill")), 60, "no overlapping remote segments")


def _no_overlap(listing) -> bool:
    try:
        assert_no_overlap(listing)
    except AssertionError:
        return False
    return True


def test_deleting_a_topic_deletes_its_remote_data(tmp_path):
    props = fs_props(tmp_path / "remote-storage")
    with running(Cluster(tmp_path, controllers=1, brokers=3, props=props)) as cluster:
        _create(cluster, "doomed", 1, rf=2)
        acked = _produce_one_partition(cluster, "doomed", 12_000)
        wait_for(lambda: (s := tiered_state(cluster, "doomed", 0)) and s["tiered"] >= acked // 2, 120,
                 "uploads")
        assert remote_listing(props, "doomed")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.delete_topics(["doomed"], request_timeout=15)["doomed"].result(20)
        wait_for(lambda: not _remote_objects(tmp_path / "remote-storage"), 60, "remote objects of doomed deleted")


def _produce_one_partition(cluster, topic: str, count: int) -> int:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20})
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=_value(i), partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    return count


def _remote_objects(root) -> list:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


BAD_CONFIGS = [({"cleanup.policy": "compact"}, "cleanup.policy=delete"),
               ({"local.retention.bytes": "5000000", "retention.bytes": "1000000"}, "local.retention.bytes")]


def test_bad_tiered_topic_configs_are_refused(fs_cluster):
    cluster, _ = fs_cluster
    for configs, words in BAD_CONFIGS:
        with pytest.raises(KafkaException) as refused:
            _create(cluster, "bad", 1, configs=configs)
        assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG, refused.value
        assert words in refused.value.args[0].str()
    assert "bad" not in AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10).topics


def test_an_empty_follower_rebuilds_from_remote_storage_instead_of_copying(tmp_path):
    """KIP-405's follower path: a follower whose data is gone restarts empty; the leader answers its
    fetch from 0 with OFFSET_MOVED_TO_TIERED_STORAGE, and it starts at the leader's local log start
    with the epochs and producer state of the remote segment before it, copying nothing older."""
    props = fs_props(tmp_path / "remote-storage")
    with running(Cluster(tmp_path, controllers=1, brokers=3, props=props)) as cluster:
        _create(cluster, "rebuild", 1, rf=2)
        acked = _produce_one_partition(cluster, "rebuild", 25_000)
        state = wait_for(lambda: (s := tiered_state(cluster, "rebuild", 0)) and s["local_start"] > 0 and s,
                         120, "uploads and local deletion on the leader")
        [partition] = cluster.live_partitions("rebuild", 1)
        leader_id = partition["LeaderId"]
        follower = cluster.broker(next(r for r in partition["ReplicaNodes"] if r != leader_id))
        follower.stop()
        shutil.rmtree(follower.data_dir / "rebuild-0")
        follower.start()
        wait_for(lambda: _in_isr(cluster, "rebuild", follower.node_id), 120, "the wiped follower back in the ISR")
        kept = sorted(int(p.stem) for p in (follower.data_dir / "rebuild-0").glob("*.log"))
        assert kept and kept[0] >= state["local_start"], (kept, state)     # nothing below it was copied
        assert "rebuilt from remote segment" in follower.log_path.read_text()
        cluster.broker(leader_id).stop()            # the rebuilt follower leads; the whole topic still reads
        wait_for(lambda: (b := leader_broker(cluster, "rebuild", 0)) is not None and b is follower, 60,
                 "the rebuilt follower leading")
        read = consume_all(cluster.bootstrap, "rebuild", 1, acked, timeout_s=180)
        assert [m.offset() for m in read] == list(range(acked))
        assert all(m.value() == _value(m.offset()) for m in read)


def _in_isr(cluster, topic: str, broker_id: int) -> bool:
    parts = cluster.live_partitions(topic, 1)
    return bool(parts) and broker_id in parts[0]["IsrNodes"]


def test_unreachable_remote_storage_keeps_everything_local_and_says_why(tmp_path, monkeypatch):
    """Remote storage nobody listens on: uploads fail and are retried with backoff, a WARNING line
    says why, no local segment is deleted, and producing and consuming go on."""
    with_moto_credentials(monkeypatch)
    props = {**fs_props(tmp_path / "unused"), "rsm.config.storage.backend": "s3",
             "rsm.config.storage.s3.bucket.name": "nowhere", "rsm.config.storage.s3.region": "us-east-1",
             "rsm.config.storage.s3.endpoint.url": f"http://127.0.0.1:{free_port()}",
             "rsm.config.storage.s3.path.style.access.enabled": "true"}
    with running(Cluster(tmp_path, controllers=1, brokers=3, props=props)) as cluster:
        _create(cluster, "stuck", 1, rf=2)
        acked = _produce_one_partition(cluster, "stuck", 25_000)
        leader = leader_broker(cluster, "stuck", 0)
        wait_for(lambda: leader.log_path.read_text().count("stuck-0: tiered storage pass failed") >= 2, 120,
                 "two failed upload attempts logged")
        line = next(x for x in leader.log_path.read_text().splitlines() if "stuck-0: tiered storage pass failed" in x)
        assert "WARNING" in line and "retrying in" in line
        state = tiered_state(cluster, "stuck", 0)
        assert state is None or (state["local_start"], state["tiered"]) == (0, -1)
        assert offsets(leader, "stuck", 0, -4) == 0                        # every local segment still there
        more = _produce_one_partition(cluster, "stuck", 100)
        read = consume_all(cluster.bootstrap, "stuck", 1, acked + more, timeout_s=120)
        assert [m.offset() for m in read] == list(range(acked + more))
