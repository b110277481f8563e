"""Follower faults in real processes (issue 4): 1 controller + 3 brokers, one partition, RF 3.

1. Divergent tail: a follower killed with SIGKILL gets, offline, records the
   leader never had, stamped with the old leader epoch, while the leader takes
   more writes in a newer epoch; restarted, it truncates them (DivergingEpoch),
   catches up, rejoins the ISR and holds the leader's log byte for byte.
2. The leader's retention deletes past a killed follower's log end: restarted,
   its fetch is OFFSET_OUT_OF_RANGE, it asks the leader's log end (as a
   replica) and start, and restarts its log at the leader's log start.
3. min.insync.replicas=2 with both followers stopped: acks=all gets
   NOT_ENOUGH_REPLICAS over a raw socket and through librdkafka, acks=1 is
   appended; with both followers SIGSTOPped, an acks=all produce appended
   before the ISR shrinks gets NOT_ENOUGH_REPLICAS_AFTER_APPEND.
4. ISR shrink and expand by the leader's lag rule alone (a long
   broker.session.timeout.ms): a SIGSTOPped follower falls behind the leader's
   writes and leaves the ISR after replica.lag.time.max.ms, SIGCONT brings it
   back; no record is lost.
"""
import os
import re
import shutil
import signal
import time

from clients import consume_all, produce_all
from cluster import FAST_REPLICATION, Cluster, log_end_offset, request, wait_for
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.records import Record, build_batch, iter_batches
from tierlog.storage import Log, LogConfig

PRODUCE, LIST_OFFSETS = 0, 2
NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND = 19, 20
DEBUGGING_REPLICA_ID, LATEST, EARLIEST = -2, -1, -2


def _start(root, props=None) -> Cluster:
    return Cluster(root, 1, 3, {**FAST_REPLICATION, **(props or {})}).start()


def _pause(node) -> None:
    os.kill(node.proc.pid, signal.SIGSTOP)


def _resume(node) -> None:
    os.kill(node.proc.pid, signal.SIGCONT)


def _create_topic(cluster, topic, configs=None):
    cluster.wait_leader()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3, config=configs or {})], request_timeout=15)[topic].result(timeout=20)
    for b in cluster.brokers:
        wait_for(lambda b=b: _isr(cluster, b, topic) == {n.node_id for n in cluster.brokers}, 30,
                 f"{topic} with a full ISR in broker {b.node_id}'s metadata")
    return _partition(cluster, cluster.brokers[0], topic)


def _partition(cluster, broker, topic) -> dict | None:
    """Partition 0 of ``topic`` in ``broker``'s Metadata answer (LeaderId, LeaderEpoch, IsrNodes, ...)."""
    ps = cluster.partitions(broker, topic)
    return ps[0] if ps else None


def _isr(cluster, broker, topic) -> set[int] | None:
    p = _partition(cluster, broker, topic)
    return None if p is None or p["LeaderId"] < 0 else set(p["IsrNodes"])


def _log_end(broker, topic) -> int:
    """The replica's own log end offset over the socket (ListOffsets LATEST as the debugging replica)."""
    body = {"ReplicaId": DEBUGGING_REPLICA_ID, "IsolationLevel": 0, "Topics": [
        {"Name": topic, "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": LATEST}]}]}
    answer = request("127.0.0.1", broker.port, LIST_OFFSETS, body, version=7)["Topics"][0]["Partitions"][0]
    assert answer["ErrorCode"] == 0, answer
    return answer["Offset"]


def _produce_raw(broker, topic, value: bytes, acks: int, timeout_ms=30_000) -> dict:
    batch = build_batch([Record(0, int(time.time() * 1000), None, value)])
    body = {"TransactionalId": None, "Acks": acks, "TimeoutMs": timeout_ms,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}]}
    resp = request("127.0.0.1", broker.port, PRODUCE, body, version=9, timeout_s=timeout_ms / 1000 + 30)
    return resp["Responses"][0]["PartitionResponses"][0]


def _values(bootstrap, topic, expected) -> list[bytes]:
    return [m.value() for m in consume_all(bootstrap, topic, 1, expected)]


# --- 1. divergent tail ----------------------------------------------------------------------------


def _append_divergent_tail(partition_dir, count) -> tuple[int, int]:
    """Offline: append ``count`` records nobody produced, stamped with the log's latest (old) epoch.

    Returns (log end offset before, that epoch)."""
    log = Log.open(partition_dir, LogConfig.from_props({}), int(time.time() * 1000))
    try:
        end, epoch = log.log_end_offset, log.latest_epoch
        assert epoch is not None
        records = [Record(i, int(time.time() * 1000), None, b"divergent-%d" % i) for i in range(count)]
        log.append(bytearray(build_batch(records)), epoch, int(time.time() * 1000))
        assert log.log_end_offset == end + count and log.latest_epoch == epoch
        log.flush(int(time.time() * 1000))
    finally:
        log.close()
    return end, epoch


def _batches(broker, topic, scratch) -> list[tuple[int, int, bytes]]:
    """(base offset, leader epoch, batch bytes) of a replica's whole log, read from a copy of its dir."""
    copy = scratch / f"node-{broker.node_id}-{topic}-0"
    shutil.copytree(broker.data_dir / f"{topic}-0", copy)
    log = Log.open(copy, LogConfig.from_props({}), int(time.time() * 1000))
    try:
        data = log.read(log.log_start_offset, 1 << 30).to_bytes()
    finally:
        log.close()
    return [(h.base_offset, h.partition_leader_epoch, data[pos:pos + h.size]) for pos, h in iter_batches(data)]


def test_follower_with_a_divergent_tail_truncates_catches_up_and_rejoins_the_isr(cluster, tmp_path):
    topic = "diverge"
    first = _create_topic(cluster, topic)
    old_leader = cluster.broker(first["LeaderId"])
    follower, other = [b for b in cluster.brokers if b is not old_leader]
    before = [(0, None, b"before-%d" % i, None, None) for i in range(300)]
    assert len(produce_all(cluster.bootstrap, topic, before)) == 300
    wait_for(lambda: log_end_offset(follower.data_dir / f"{topic}-0") == 300, 30, "the follower holding 300 records")

    follower.kill9()
    wait_for(lambda: _isr(cluster, old_leader, topic) == {old_leader.node_id, other.node_id}, 30,
             f"the ISR without the killed follower {follower.node_id}")
    # a new leader epoch before any new write: kill the leader, the other ISR member takes over
    old_leader.kill9()
    wait_for(lambda: (p := _partition(cluster, other, topic)) and p["LeaderId"] == other.node_id
             and p["LeaderEpoch"] > first["LeaderEpoch"], 30, f"broker {other.node_id} leading a newer epoch")
    old_leader.start()
    after = [(0, None, b"after-%d" % i, None, None) for i in range(200)]
    assert len(produce_all(other.bootstrap, topic, after, **{"message.timeout.ms": 60000})) == 200
    wait_for(lambda: _isr(cluster, other, topic) == {other.node_id, old_leader.node_id}, 40,
             f"the restarted old leader {old_leader.node_id} back in the ISR")
    epoch_now = _partition(cluster, other, topic)["LeaderEpoch"]       # or newer, if leadership moved back

    # the follower's tail: 250 records the leader never had, at 300..549, in the first epoch
    end, tail_epoch = _append_divergent_tail(follower.data_dir / f"{topic}-0", 250)
    assert (end, tail_epoch) == (300, first["LeaderEpoch"]) and tail_epoch < epoch_now
    assert log_end_offset(follower.data_dir / f"{topic}-0") == 550        # beyond the leader's end, 500

    follower.start()
    everyone = {b.node_id for b in cluster.brokers}
    try:
        wait_for(lambda: _isr(cluster, other, topic) == everyone, 40,
                 f"the follower {follower.node_id} back in the ISR")
        wait_for(lambda: _log_end(follower, topic) == _log_end(other, topic) == 500, 30,
                 "the follower's log end at the leader's, 500")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{cluster.logs_tail()}") from None
    assert f"{topic}-0: truncating to 300" in follower.log_path.read_text(errors="replace"), follower.log_tail()

    leader_log = _batches(other, topic, tmp_path)
    assert _batches(follower, topic, tmp_path) == leader_log          # byte for byte, epochs included
    assert leader_log[0][:2] == (0, first["LeaderEpoch"])
    assert leader_log[-1][1] > first["LeaderEpoch"]
    values = _values(cluster.bootstrap, topic, 500)
    assert values == [v for _, _, v, _, _ in before + after], values[:3]


# --- 2. the leader deleted past the follower's end: OFFSET_OUT_OF_RANGE ---------------------------


def _log_start(broker, topic) -> int:
    body = {"ReplicaId": DEBUGGING_REPLICA_ID, "IsolationLevel": 0, "Topics": [
        {"Name": topic, "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": EARLIEST}]}]}
    answer = request("127.0.0.1", broker.port, LIST_OFFSETS, body, version=7)["Topics"][0]["Partitions"][0]
    assert answer["ErrorCode"] == 0, answer
    return answer["Offset"]


def test_follower_behind_the_leader_log_start_restarts_its_log_there(tmp_path):
    cluster = _start(tmp_path, {"log.retention.check.interval.ms": "500"})
    try:
        _follower_behind_log_start(cluster)
    finally:
        cluster.stop()


def _follower_behind_log_start(cluster):
    topic = "retained"
    first = _create_topic(cluster, topic, {"segment.bytes": "1048576", "retention.bytes": "1048576"})
    leader = cluster.broker(first["LeaderId"])
    follower = next(b for b in cluster.brokers if b is not leader)
    value = b"v" * 1000
    produce_all(cluster.bootstrap, topic, [(0, None, value, None, None)] * 100)
    wait_for(lambda: _log_end(follower, topic) == 100, 30, "the follower holding 100 records")
    follower.kill9()
    produce_all(cluster.bootstrap, topic, [(0, None, value, None, None)] * 4000, **{"message.timeout.ms": 60000})
    start = wait_for(lambda: (s := _log_start(leader, topic)) > 100 and s, 30,
                     "the leader's retention moving its log start past the follower's end")

    follower.start()
    try:
        wait_for(lambda: _isr(cluster, leader, topic) == {b.node_id for b in cluster.brokers}, 40,
                 f"the follower {follower.node_id} back in the ISR")
        wait_for(lambda: _log_end(follower, topic) == _log_end(leader, topic) == 4100, 30,
                 "the follower's log end at the leader's, 4100")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{cluster.logs_tail()}") from None
    assert _log_start(follower, topic) >= start > 100
    # retention may move the leader's log start further before the follower asks: at or past ``start``
    restarts = [int(m) for m in re.findall(rf"{topic}-0: restarting the log at (\d+)",
                                           follower.log_path.read_text(errors="replace"))]
    assert restarts and restarts[0] >= start, follower.log_tail()


# --- 3. min.insync.replicas -----------------------------------------------------------------------


def test_not_enough_replicas_when_the_isr_is_below_min_insync_replicas(cluster):
    topic = "min-isr"
    first = _create_topic(cluster, topic, {"min.insync.replicas": "2"})
    leader = cluster.broker(first["LeaderId"])
    followers = [b for b in cluster.brokers if b is not leader]
    assert len(produce_all(cluster.bootstrap, topic, [(0, None, b"ok-%d" % i, None, None) for i in range(10)])) == 10

    for f in followers:
        f.stop()
    wait_for(lambda: _isr(cluster, leader, topic) == {leader.node_id}, 30, "the ISR shrunk to the leader")
    end = _log_end(leader, topic)
    assert end == 10

    refused = _produce_raw(leader, topic, b"refused", acks=-1)
    assert refused["ErrorCode"] == NOT_ENOUGH_REPLICAS, refused
    assert _log_end(leader, topic) == 10                    # refused before the append
    single = _produce_raw(leader, topic, b"acks-1", acks=1)
    assert (single["ErrorCode"], single["BaseOffset"]) == (0, 10), single

    errors = []
    p = Producer({"bootstrap.servers": leader.bootstrap, "acks": "all", "retries": 0, "message.timeout.ms": 20000})
    p.produce(topic, value=b"librdkafka", partition=0, on_delivery=lambda err, m: errors.append(err))
    p.flush(30)
    assert len(errors) == 1 and errors[0] is not None, errors
    assert errors[0].code() == KafkaError.NOT_ENOUGH_REPLICAS, errors[0]

    for f in followers:
        f.start()
    wait_for(lambda: _isr(cluster, leader, topic) == {b.node_id for b in cluster.brokers}, 40, "a full ISR again")
    assert len(produce_all(cluster.bootstrap, topic, [(0, None, b"again", None, None)])) == 1
    assert _values(cluster.bootstrap, topic, 12) == [b"ok-%d" % i for i in range(10)] + [b"acks-1", b"again"]


def test_not_enough_replicas_after_append_when_the_isr_shrinks_under_a_waiting_produce(cluster):
    topic = "min-isr-after"
    first = _create_topic(cluster, topic, {"min.insync.replicas": "2"})
    leader = cluster.broker(first["LeaderId"])
    followers = [b for b in cluster.brokers if b is not leader]
    assert len(produce_all(cluster.bootstrap, topic, [(0, None, b"ok", None, None)])) == 1
    wait_for(lambda: all(log_end_offset(f.data_dir / f"{topic}-0") == 1 for f in followers), 30,
             "both followers holding the first record")

    for f in followers:
        _pause(f)
    answer = _produce_raw(leader, topic, b"appended", acks=-1, timeout_ms=60_000)   # held until the ISR shrinks
    assert answer["ErrorCode"] == NOT_ENOUGH_REPLICAS_AFTER_APPEND, answer     # not 7, the request timeout
    assert _isr(cluster, leader, topic) == {leader.node_id}
    assert _log_end(leader, topic) == 2                     # it was appended

    for f in followers:
        _resume(f)
    wait_for(lambda: _isr(cluster, leader, topic) == {b.node_id for b in cluster.brokers}, 60, "a full ISR again")
    assert _values(cluster.bootstrap, topic, 2) == [b"ok", b"appended"]


# --- 4. ISR shrink and expand by the lag rule -----------------------------------------------------


def test_isr_shrinks_and_expands_by_the_replica_lag_rule(tmp_path):
    cluster = _start(tmp_path, {"broker.session.timeout.ms": "60000", "replica.lag.time.max.ms": "2000"})
    try:
        _isr_shrink_and_expand(cluster)
    finally:
        cluster.stop()


def _isr_shrink_and_expand(cluster):
    topic = "lagging"
    first = _create_topic(cluster, topic)
    leader = cluster.broker(first["LeaderId"])
    lagging = next(b for b in cluster.brokers if b is not leader)
    everyone = {b.node_id for b in cluster.brokers}
    sent = [(0, None, b"r-%d" % i, None, None) for i in range(1000)]
    acked = produce_all(leader.bootstrap, topic, sent[:400])

    _pause(lagging)
    # Kafka's rule: a follower at the leader's log end is caught up however long it is silent,
    # so the leader needs writes; these acks=all ones complete once the ISR has shrunk
    acked += produce_all(leader.bootstrap, topic, sent[400:700])
    wait_for(lambda: _isr(cluster, leader, topic) == everyone - {lagging.node_id}, 30,
             f"the ISR without the stopped follower {lagging.node_id}")
    brokers = {b["NodeId"] for b in cluster.metadata(leader, [topic])["Brokers"]}
    assert brokers == everyone, f"broker {lagging.node_id} was fenced: the ISR shrank by fencing, not by lag"

    _resume(lagging)
    wait_for(lambda: _isr(cluster, leader, topic) == everyone, 30, f"follower {lagging.node_id} back in the ISR")
    acked += produce_all(leader.bootstrap, topic, sent[700:])
    assert [off for _, off, _ in acked] == list(range(1000))
    wait_for(lambda: {_log_end(b, topic) for b in cluster.brokers} == {1000}, 30, "every replica at 1000")
    assert _values(cluster.bootstrap, topic, 1000) == [v for _, _, v, _, _ in sent]
