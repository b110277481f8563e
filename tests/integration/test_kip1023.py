"""KIP-1023 (follower fetch from the earliest pending upload offset) over sockets: 1 controller + brokers 2-4.

A tiered topic with one partition on broker 2 alone; a reassignment adds an empty
replica (AlterPartitionReassignments from kafka-python), first with
``follower.fetch.last.tiered.offset.enable`` off (Kafka's default), then, turned
on cluster-wide with IncrementalAlterConfigs on the default broker resource
another one. What each added replica copied is measured as the
bytes of the .log files in its partition directory when it joins the ISR.

1. About 90% of the data uploaded and gone locally: with the config off the added
   replica copies everything from the leader's local log start (KIP-405); with it
   on, no more than the untiered tail plus one segment. After the original leader
   is killed with -9 the new replica leads and serves every record from offset 0
   (from remote storage below its local log start), read with confluent-kafka.
2. Kafka's gap: local retention keeps everything (log start == local log start ==
   0) but segments are uploaded. Off: the added replica copies from 0. On: it still
   copies only the tail, because it asks the leader where to start before its first
   fetch instead of waiting for an error that never comes.
"""
from __future__ import annotations

import re
from pathlib import Path

from clients import consume_all
from cluster import Cluster, request, running, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, TopicPartition
from tiered import fs_props

LIST_OFFSETS, DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 2, 32, 44
BROKER_RESOURCE, SET, DYNAMIC_DEFAULT_BROKER_CONFIG, DEFAULT_CONFIG = 4, 0, 3, 5
LOG_START, LOCAL_LOG_START, PENDING_UPLOAD = -2, -4, -6
SEGMENT_BYTES = 1024 * 1024                  # the smallest segment.bytes
CONFIG = "follower.fetch.last.tiered.offset.enable"
ORIGINAL, ADDED_OFF, ADDED_ON = 2, 3, 4
VALUE_PAD = b"x" * 1000         # ~1 KB records


def _value(i: int) -> bytes:
    return b"%08d:" % i + VALUE_PAD


def _create(cluster, topic: str, configs: dict) -> None:
    cluster.wait_leader()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[ORIGINAL]],
                                  config={"remote.storage.enable": "true", "segment.bytes": str(SEGMENT_BYTES),
                                          **configs})], request_timeout=15)[topic].result(timeout=20)


def _produce(cluster, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.size": 64 * 1024, "enable.idempotence": True})
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=_value(i), partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0


def _offset(broker, topic: str, target: int) -> int | None:
    body = {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [
        {"Name": topic, "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": target}]}]}
    p = request("127.0.0.1", broker.port, LIST_OFFSETS, body, version=11)["Topics"][0]["Partitions"][0]
    return None if p["ErrorCode"] else p["Offset"]


def _segments(broker, topic: str) -> dict[int, int]:
    """Base offset -> bytes of every .log file in ``broker``'s directory of partition 0."""
    d: Path = broker.data_dir / f"{topic}-0"
    return {int(f.stem): f.stat().st_size for f in d.glob("*.log")} if d.exists() else {}


def _settled(cluster, topic: str, *, deleted_locally: bool) -> dict:
    """Wait until every rolled segment of the leader is uploaded (the earliest pending upload offset is
    its active segment's base) and, if asked, old ones are gone locally; the same answers twice in a row."""
    leader = cluster.broker(ORIGINAL)
    seen: list[tuple] = []

    def stable():
        segs = _segments(leader, topic)
        state = (_offset(leader, topic, LOG_START), _offset(leader, topic, LOCAL_LOG_START),
                 _offset(leader, topic, PENDING_UPLOAD), tuple(sorted(segs.items())))
        start, local_start, pending, _ = state
        ok = (None not in state[:3] and len(segs) > 2 and pending == max(segs) and local_start == min(segs)
              and (local_start > 0) == deleted_locally)
        seen.append(state if ok else None)
        if len(seen) >= 3 and seen[-1] is not None and seen[-1] == seen[-2] == seen[-3]:
            return {"start": start, "local_start": local_start, "pending": pending, "segments": segs}
        return None
    return wait_for(stable, 180, f"{topic}: uploads and local deletions settled on the leader", interval_s=0.5)


def _set_config(cluster, value: str) -> None:
    """IncrementalAlterConfigs SET on the default broker resource ("": cluster-wide) over the wire
    (librdkafka refuses an empty resource name, kafka-python has no IncrementalAlterConfigs)."""
    body = {"Resources": [{"ResourceType": BROKER_RESOURCE, "ResourceName": "", "Configs": [
        {"Name": CONFIG, "ConfigOperation": SET, "Value": value}]}], "ValidateOnly": False}
    broker = next(b for b in cluster.brokers if b.alive())
    answer = request("127.0.0.1", broker.port, INCREMENTAL_ALTER_CONFIGS, body, version=1)
    assert [r["ErrorCode"] for r in answer["Responses"]] == [0], answer


def _described(broker) -> tuple[str, int]:
    """(value, ConfigSource) of the KIP-1023 config in ``broker``'s DescribeConfigs of itself."""
    body = {"Resources": [{"ResourceType": BROKER_RESOURCE, "ResourceName": str(broker.node_id),
                           "ConfigurationKeys": [CONFIG]}], "IncludeSynonyms": True}
    [entry] = request("127.0.0.1", broker.port, DESCRIBE_CONFIGS, body, version=1)["Results"][0]["Configs"]
    return entry["Value"], entry["ConfigSource"]


def _in_isr(cluster, topic: str, broker_id: int) -> bool:
    parts = cluster.live_partitions(topic, 1)
    return bool(parts) and broker_id in parts[0]["IsrNodes"]


def _add_replica(cluster, topic: str, target: list[int], added: int) -> dict[int, int]:
    """Reassign partition 0 to ``target``; wait until ``added`` is in the ISR; its segments then."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        assert admin.alter_partition_reassignments({TopicPartition(topic, 0): target}) == {
            TopicPartition(topic, 0): None}
        try:
            wait_for(lambda: _in_isr(cluster, topic, added) and not admin.list_partition_reassignments(), 180,
                     f"broker {added} in the ISR of {topic}-0")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{cluster.logs_tail()}") from None
    finally:
        admin.close()
    return _segments(cluster.broker(added), topic)


def _rebuilt_at(broker, topic: str) -> list[int]:
    """The offsets ``broker`` rebuilt ``topic``-0 at from remote storage (its log lines)."""
    pattern = re.compile(rf"{re.escape(topic)}-0: rebuilt from remote segment \[\d+, \d+\]: log start \d+, "
                         r"fetching from (\d+)")
    return [int(m.group(1)) for m in pattern.finditer(broker.log_path.read_text())]


def test_added_replica_copies_only_the_untiered_tail_and_leads_after_a_kill(tmp_path):
    topic, count = "kip1023", 20_000                  # ~20 MB: ~20 segments of 1 MiB, ~3 kept locally
    props = fs_props(tmp_path / "remote-storage")
    with running(Cluster(tmp_path, controllers=1, brokers=3, props=props)) as cluster:
        _create(cluster, topic, {"local.retention.bytes": str(2 * SEGMENT_BYTES)})
        _produce(cluster, topic, count)
        leader = _settled(cluster, topic, deleted_locally=True)
        local_bytes = sum(leader["segments"].values())
        assert leader["start"] == 0 and leader["local_start"] < leader["pending"], leader
        assert count - leader["pending"] < 0.15 * count, leader          # ~90% uploaded
        assert leader["local_start"] > 0.75 * count, leader              # and most of it gone locally
        tail = sum(size for base, size in leader["segments"].items() if base >= leader["pending"])

        # off (Kafka's default): KIP-405, everything from the leader's local log start
        off = _add_replica(cluster, topic, [ORIGINAL, ADDED_OFF], ADDED_OFF)
        assert _rebuilt_at(cluster.broker(ADDED_OFF), topic) == [leader["local_start"]]
        assert min(off) == leader["local_start"] and sum(off.values()) == local_bytes, (off, leader)

        # on, cluster-wide and dynamic: from the earliest pending upload offset
        _set_config(cluster, "true")
        on = _add_replica(cluster, topic, [ADDED_ON, ORIGINAL, ADDED_OFF], ADDED_ON)
        copied = sum(on.values())
        assert _rebuilt_at(cluster.broker(ADDED_ON), topic) == [leader["pending"]]
        assert min(on) == leader["pending"], (on, leader)
        assert copied <= tail + SEGMENT_BYTES < sum(off.values()), (copied, tail, off)

        # the original leader dies: the new replica (first in the assignment) leads and serves everything
        cluster.broker(ORIGINAL).kill9()
        wait_for(lambda: (ps := cluster.live_partitions(topic, 1)) and ps[0]["LeaderId"] == ADDED_ON, 60,
                 f"broker {ADDED_ON} leading {topic}-0")
        read = consume_all(cluster.bootstrap, topic, 1, count, timeout_s=240)
        assert [m.offset() for m in read] == list(range(count))
        assert all(m.value() == _value(m.offset()) for m in read)


def test_gap_local_retention_keeps_everything_yet_the_added_replica_copies_only_the_tail(tmp_path):
    topic, count = "kip1023-gap", 8_000                 # ~8 MB: ~8 segments, all kept locally
    props = fs_props(tmp_path / "remote-storage")
    with running(Cluster(tmp_path, controllers=1, brokers=3, props=props)) as cluster:
        _create(cluster, topic, {})                     # local.retention.* -2 -> retention.* (keep all)
        _produce(cluster, topic, count)
        leader = _settled(cluster, topic, deleted_locally=False)
        assert leader["start"] == leader["local_start"] == 0 < leader["pending"], leader
        everything = sum(leader["segments"].values())
        tail = sum(size for base, size in leader["segments"].items() if base >= leader["pending"])

        # off: no error ever fires (offset 0 is local on the leader), so it copies from 0 (Kafka's gap)
        assert _described(cluster.broker(ADDED_ON)) == ("false", DEFAULT_CONFIG)
        off = _add_replica(cluster, topic, [ORIGINAL, ADDED_OFF], ADDED_OFF)
        assert min(off) == 0 and sum(off.values()) == everything, (off, leader)
        assert _rebuilt_at(cluster.broker(ADDED_OFF), topic) == []

        # on: it asks before its first fetch and starts at the earliest pending upload offset
        _set_config(cluster, "true")
        assert _described(cluster.broker(ADDED_ON)) == ("true", DYNAMIC_DEFAULT_BROKER_CONFIG)
        on = _add_replica(cluster, topic, [ORIGINAL, ADDED_OFF, ADDED_ON], ADDED_ON)
        assert _rebuilt_at(cluster.broker(ADDED_ON), topic) == [leader["pending"]]
        assert min(on) == leader["pending"], (on, leader)
        assert sum(on.values()) <= tail + SEGMENT_BYTES < everything, (on, tail, everything)
