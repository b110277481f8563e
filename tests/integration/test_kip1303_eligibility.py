"""KIP-1303 over sockets with real processes: elections prefer replicas whose local log is long enough.

One controller and four brokers. Broker 2 keeps only 1 MiB of a tiered topic
locally (its server.properties ``log.local.retention.bytes``); brokers 3, 4 and 5
keep everything they hold (the topic has no local retention override, so
each broker's own default applies). A topic [2, 3, 4] led by 2 gets ~6 MiB;
once 2 has uploaded and deleted most of it locally, a reassignment to
[5, 3, 4] adds broker 5 FIRST (the preferred leader): it is empty, so it
starts at 2's local log start (KIP-405's follower path) and holds a short
local log, while 3 and 4 hold the whole topic locally.

``leader.election.eligible.local.log.bytes`` is 4 MiB in every node's
server.properties (only there: the derived fence election must see it too).

1. The reassignment's completion elects 3 (eligible), not the preferred 5.
2. A preferred election keeps 3; ``tierlog topics describe`` shows 5's short
   coverage and that it is not eligible.
3. The cluster-wide dynamic value -1 (IncrementalAlterConfigs on the default
   broker resource) turns the preference off: the same preferred election
   moves leadership to 5. Deleting it brings back the server.properties value:
   a preferred election moves leadership back to 3.
4. kill -9 of the leader 3 (ISR 5, 3, 4): the fence election picks 4, which
   has a full local log, not 5; every acknowledged record still reads from 0.

Nothing here needs KIP-1023 (``follower.fetch.last.tiered.offset.enable``):
with it, 5's log would only be shorter.
"""
from __future__ import annotations

import json
import subprocess
import sys

from clients import consume_all
from cluster import Cluster, request, running, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, TopicPartition
from tiered import fs_props, tiered_state

TOPIC, RECORDS = "elig", 30_000                  # ~200-byte records: ~6 MiB, six 1 MiB segments
THRESHOLD = 4 * 1024 * 1024
SHORT_LOCAL_MAX = 5 * 1024 * 1024 // 2     # broker 2 keeps 1 MiB + the active segment: well below THRESHOLD
SHORT, FULL_A, FULL_B, NEW = 2, 3, 4, 5
ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS, DESCRIBE_TOPIC_PARTITIONS = 43, 44, 75
ELIGIBLE_BYTES = "leader.election.eligible.local.log.bytes"


def _value(i: int) -> bytes:
    return b"%08d:" % i + b"y" * 180


def _cluster(tmp_path) -> Cluster:
    props = {**fs_props(tmp_path / "remote-storage"), ELIGIBLE_BYTES: str(THRESHOLD),
             "auto.leader.rebalance.enable": "false"}
    cluster = Cluster(tmp_path, controllers=1, brokers=4, props=props)
    cluster.broker(SHORT).props["log.local.retention.bytes"] = str(1024 * 1024)
    return cluster


def _local_bytes(cluster, broker_id: int) -> int:
    """Bytes of the partition's local segment files on ``broker_id``."""
    return sum(p.stat().st_size for p in (cluster.broker(broker_id).data_dir / f"{TOPIC}-0").glob("*.log"))


def _partition(cluster) -> dict | None:
    """Partition 0 as a live broker's DescribeTopicPartitions answers it (with tierlog's coverage)."""
    for b in cluster.brokers:
        if not b.alive():
            continue
        try:
            answer = request("127.0.0.1", b.port, DESCRIBE_TOPIC_PARTITIONS,
                             {"Topics": [{"Name": TOPIC}], "ResponsePartitionLimit": 10, "Cursor": None})
        except OSError:
            continue
        [topic] = answer["Topics"]
        if topic["ErrorCode"] == 0 and topic["Partitions"]:
            return topic["Partitions"][0]
    return None


def _leader(cluster) -> int:
    p = _partition(cluster)
    return -1 if p is None else p["LeaderId"]


def _elect_preferred(cluster) -> int:
    """ElectLeaders PREFERRED over the wire; the partition's error code (0 or ELECTION_NOT_NEEDED)."""
    b = next(b for b in cluster.brokers if b.alive())
    answer = request("127.0.0.1", b.port, ELECT_LEADERS, {
        "ElectionType": 0, "TimeoutMs": 10_000, "TopicPartitions": [{"Topic": TOPIC, "Partitions": [0]}]},
        version=2, timeout_s=15)
    return answer["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"]


def _set_cluster_threshold(cluster, value: str | None) -> None:
    """``leader.election.eligible.local.log.bytes`` cluster-wide (None deletes it), then wait until
    every live broker's image has it (a preferred election right after must see it)."""
    op = 0 if value is not None else 1
    b = next(b for b in cluster.brokers if b.alive())
    answer = request("127.0.0.1", b.port, INCREMENTAL_ALTER_CONFIGS, {
        "Resources": [{"ResourceType": 4, "ResourceName": "", "Configs": [
            {"Name": ELIGIBLE_BYTES, "ConfigOperation": op, "Value": value}]}], "ValidateOnly": False}, version=1)
    assert answer["Responses"][0]["ErrorCode"] == 0, answer


def _coverage(cluster) -> dict[int, dict]:
    p = _partition(cluster)
    return {} if p is None else {c["BrokerId"]: c for c in p["LocalLogCoverage"]}


def _describe_json(cluster) -> dict:
    result = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "topics", "describe", TOPIC, "--json",
                             "--bootstrap-server", cluster.bootstrap], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    [described] = json.loads(result.stdout)
    return described["partitions"][0]


def _produce(cluster) -> int:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20,
                         "enable.idempotence": True})
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(TOPIC, value=_value(i), partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    return RECORDS


def test_elections_prefer_replicas_with_enough_local_log(tmp_path):
    with running(_cluster(tmp_path)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        # no local.retention override: each broker's log.local.retention.bytes applies
        topic = NewTopic(TOPIC, 1, replica_assignment=[[SHORT, FULL_A, FULL_B]],
                         config={"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024)})
        cluster.wait_leader()
        admin.create_topics([topic], request_timeout=15)[TOPIC].result(timeout=20)
        wait_for(lambda: _leader(cluster) == SHORT, 30, "broker 2 leading the new topic")
        acked = _produce(cluster)
        # broker 2's local log down to its 1 MiB retention (plus the active segment): what 5 will copy
        wait_for(lambda: _local_bytes(cluster, SHORT) <= SHORT_LOCAL_MAX, 120,
                 "uploads and local deletion on broker 2")
        state = wait_for(lambda: (s := tiered_state(cluster, TOPIC, 0)) and s["local_start"] > 0 and s, 30,
                         "broker 2's local log start")

        # 1. broker 5 joins first in the assignment, from 2's local log start: a short local log
        kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
        try:
            result = kadmin.alter_partition_reassignments({TopicPartition(TOPIC, 0): [NEW, FULL_A, FULL_B]})
            assert result == {TopicPartition(TOPIC, 0): None}, result

            def completed():
                p = _partition(cluster)
                return (p is not None and p["ReplicaNodes"] == [NEW, FULL_A, FULL_B]
                        and sorted(p["IsrNodes"]) == [FULL_A, FULL_B, NEW] and not kadmin.list_partition_reassignments()
                        and p)
            try:
                done = wait_for(completed, 120, "the reassignment to [5, 3, 4] to complete")
            except AssertionError as e:
                raise AssertionError(f"{e}: {_partition(cluster)}\n{cluster.logs_tail()}") from None
        finally:
            kadmin.close()
        kept = sorted(int(p.stem) for p in (cluster.broker(NEW).data_dir / f"{TOPIC}-0").glob("*.log"))
        assert kept and kept[0] >= state["local_start"], (kept, state)      # KIP-405 path: nothing older
        assert done["LeaderId"] == FULL_A, done["LocalLogCoverage"]     # eligible first, not the preferred 5

        coverage = wait_for(lambda: (c := _coverage(cluster)) and c[NEW]["LocalLogSizeBytes"] > 0
                            and c[FULL_A]["LocalLogSizeBytes"] > 0 and c, 30, "reported coverage")
        assert coverage[NEW]["LocalLogSizeBytes"] < THRESHOLD <= coverage[FULL_A]["LocalLogSizeBytes"], coverage
        assert not coverage[NEW]["Eligible"] and coverage[FULL_A]["Eligible"] and coverage[FULL_B]["Eligible"]

        # 2. a preferred election keeps the replica with the full local log; describe says why
        assert _elect_preferred(cluster) == 84                 # ELECTION_NOT_NEEDED: 3 is the preferred now
        assert _leader(cluster) == FULL_A
        described = _describe_json(cluster)
        local = {c["replica"]: c for c in described["local_log"]}
        assert not local[NEW]["eligible"] and local[FULL_A]["eligible"] and local[FULL_B]["eligible"], local
        assert 0 < local[NEW]["size_bytes"] < THRESHOLD <= local[FULL_B]["size_bytes"], local
        assert local[NEW]["start_timestamp"] > 0

        # 3. thresholds at -1 (cluster-wide dynamic): the same election moves leadership to 5
        _set_cluster_threshold(cluster, "-1")
        wait_for(lambda: all(c["Eligible"] for c in _coverage(cluster).values()), 30, "the -1 threshold applied")
        wait_for(lambda: _elect_preferred(cluster) in (0, 84) and _leader(cluster) == NEW, 30,
                 "a preferred election moving leadership to 5")
        # the dynamic value deleted: server.properties' 4 MiB again, leadership goes back to 3
        _set_cluster_threshold(cluster, None)
        wait_for(lambda: not _coverage(cluster)[NEW]["Eligible"], 30, "the static threshold back")
        wait_for(lambda: _elect_preferred(cluster) in (0, 84) and _leader(cluster) == FULL_A, 30,
                 "a preferred election moving leadership back to 3")

        # 4. kill -9 of the leader with 5 and 4 in the ISR: the fence election elects 4, not 5
        wait_for(lambda: sorted((_partition(cluster) or {}).get("IsrNodes", [])) == [FULL_A, FULL_B, NEW], 30,
                 "the whole ISR")
        cluster.broker(FULL_A).kill9()
        after = wait_for(lambda: (p := _partition(cluster)) and p["LeaderId"] not in (FULL_A, -1) and p, 60,
                         "a new leader after kill -9 of 3")
        assert after["LeaderId"] == FULL_B, after
        read = consume_all(cluster.bootstrap, TOPIC, 1, acked, timeout_s=180)
        assert [m.offset() for m in read] == list(range(acked))
        assert all(m.value() == _value(m.offset()) for m in read)
