"""Consumer groups under restarts and faults: static members, cooperative rebalancing,
kill -9 of the coordinator, a frozen (SIGSTOPped) member; kafka-python as a group member.
The tests that kill no broker share one cluster (``shared_cluster``), each with a topic of its own."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest
from clients import create_topic, produce_all
from cluster import FAST_REPLICATION, request, wait_for
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from test_consumer_groups import PARTITIONS, TOPIC, consumer, poll_until, split_evenly

from tierlog.protocol.api import ApiKey

pytestmark = [pytest.mark.integration,
              pytest.mark.cluster(props={**FAST_REPLICATION, "group.initial.rebalance.delay.ms": "100",
                                         "offsets.topic.num.partitions": "6"})]


def coordinator_of(cluster, group: str) -> int:
    def find():
        for b in cluster.brokers:
            if b.alive():
                resp = request("127.0.0.1", b.port, ApiKey.FIND_COORDINATOR, {"Key": group, "KeyType": 0}, 2)
                if resp["ErrorCode"] == 0:
                    return resp["NodeId"]
        return None
    return wait_for(find, 60, "a coordinator")


class Rebalances:
    """Counts the assignments a confluent consumer is given."""

    def __init__(self):
        self.assigned = 0

    def on_assign(self, consumer, partitions):
        self.assigned += 1


def test_static_member_restart_within_session_timeout_does_not_rebalance(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-static"
    create_topic(boot, topic, PARTITIONS)
    watch = Rebalances()
    a = consumer(boot, "static", topic, **{"group.instance.id": "a", "session.timeout.ms": 30000})
    a.subscribe([topic], on_assign=watch.on_assign)
    b = consumer(boot, "static", topic, **{"group.instance.id": "b", "session.timeout.ms": 30000})
    poll_until([a, b], lambda: split_evenly([a, b]) and len(a.assignment()) == 3, "a static pair")
    before, b_parts = watch.assigned, sorted(p.partition for p in b.assignment())
    b.close()           # a static member's close sends no LeaveGroup: the group waits for it
    b = consumer(boot, "static", topic, **{"group.instance.id": "b", "session.timeout.ms": 30000})
    poll_until([a, b], lambda: sorted(p.partition for p in b.assignment()) == b_parts, "b back with its partitions")
    for _ in range(20):
        a.poll(0.1)
    assert watch.assigned == before, "the restart of a static member rebalanced the group"
    a.close()
    b.close()


def test_cooperative_sticky_assignor(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-coop"
    create_topic(boot, topic, PARTITIONS)
    conf = {"partition.assignment.strategy": "cooperative-sticky"}
    a = consumer(boot, "coop", topic, **conf)
    poll_until([a], lambda: len(a.assignment()) == PARTITIONS, "one member with everything")
    kept = {p.partition for p in a.assignment()}
    b = consumer(boot, "coop", topic, **conf)
    poll_until([a, b], lambda: split_evenly([a, b]) and len(a.assignment()) == 3, "an incremental split")
    assert {p.partition for p in a.assignment()} <= kept
    a.close()
    b.close()


def test_kill9_of_the_coordinator_keeps_every_acknowledged_commit(cluster):
    boot = cluster.bootstrap
    create_topic(boot, TOPIC, PARTITIONS)
    a = consumer(boot, "failover")
    poll_until([a], lambda: len(a.assignment()) == PARTITIONS, "an assignment")
    acked = {}
    for i in range(1, 11):
        offsets = [TopicPartition(TOPIC, p, i * 10 + p) for p in range(PARTITIONS)]
        a.commit(offsets=offsets, asynchronous=False)           # returns once acknowledged
        acked = {tp.partition: tp.offset for tp in offsets}
    old = coordinator_of(cluster, "failover")
    cluster.broker(old).kill9()
    new = wait_for(lambda: (n := coordinator_of(cluster, "failover")) != old and n, 60, "a new coordinator")
    assert new != old
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def committed():
        try:
            res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("failover")])["failover"]
            return {tp.partition: tp.offset for tp in res.result(timeout=10).topic_partitions}
        except Exception:       # noqa: BLE001 - COORDINATOR_LOAD_IN_PROGRESS etc. while it moves
            return None
    assert wait_for(committed, 60, "the committed offsets") == acked
    poll_until([a], lambda: len(a.assignment()) == PARTITIONS, "the member still in the group")
    a.close()


def test_sigstopped_member_is_expelled_and_its_partitions_move(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-frozen"
    create_topic(boot, topic, PARTITIONS)
    child = subprocess.Popen([sys.executable, "-c", _MEMBER, boot, topic], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "subscribed"
        a = consumer(boot, "frozen", topic)
        poll_until([a], lambda: len(a.assignment()) == 3, "the split with the child member")
        os.kill(child.pid, signal.SIGSTOP)
        poll_until([a], lambda: len(a.assignment()) == PARTITIONS, "the frozen member's partitions", 90)
        a.close()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


_MEMBER = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "frozen", "session.timeout.ms": 6000,
              "heartbeat.interval.ms": 500})
c.subscribe([sys.argv[2]])
print("subscribed", flush=True)
while True:
    c.poll(0.2)
"""


class _KafkaPythonMember(threading.Thread):
    """A kafka-python group member polling in its own thread (its poll blocks through a rebalance).

    It commits once asked and once it has read a record of every partition it holds since its last
    assignment: kafka-python's ``commit()`` commits the positions it knows, and a partition whose
    reset to the earliest offset is still in flight has none yet."""

    def __init__(self, topic: str, conf: dict):
        super().__init__(daemon=True)
        from kafka import KafkaConsumer
        self.consumer = KafkaConsumer(topic, **conf)
        self.stopping = threading.Event()
        self.partitions: set[int] = set()
        self.consumed: set[int] = set()
        self.commit_wanted = threading.Event()
        self.committed = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            read = {tp.partition for tp in self.consumer.poll(100)}
            partitions = {tp.partition for tp in self.consumer.assignment()}
            if partitions != self.partitions:       # a new assignment: positions are looked up again
                self.partitions, self.consumed = partitions, set()
            self.consumed |= read & partitions
            ready = self.partitions and self.consumed >= self.partitions
            if self.commit_wanted.is_set() and ready and not self.committed.is_set():
                self.consumer.commit()
                self.committed.set()
        self.consumer.close()


def test_kafka_python_members_split_and_commit(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-kp"
    create_topic(boot, topic, PARTITIONS)
    produce_all(boot, topic, [(p, None, b"x", None, None) for p in range(PARTITIONS)])
    conf = {"bootstrap_servers": boot, "group_id": "kp", "auto_offset_reset": "earliest",
            "enable_auto_commit": False, "session_timeout_ms": 6000, "heartbeat_interval_ms": 500}
    members = [_KafkaPythonMember(topic, conf), _KafkaPythonMember(topic, conf)]
    for m in members:
        m.start()
    try:
        wait_for(lambda: [len(m.partitions) for m in members] == [3, 3], 90, "kafka-python members splitting")
        assert members[0].partitions | members[1].partitions == set(range(PARTITIONS))
        members[0].commit_wanted.set()
        assert members[0].committed.wait(60)
    finally:
        for m in members:
            m.stopping.set()
        for m in members:
            m.join(30)
    admin = AdminClient({"bootstrap.servers": boot})
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("kp")])["kp"].result(timeout=30)
    assert {tp.partition: tp.offset for tp in res.topic_partitions if tp.offset >= 0} == \
        {p: 1 for p in members[0].partitions}       # one record each, read and committed


@pytest.mark.cluster(props={**FAST_REPLICATION, "offsets.topic.num.partitions": "6", "min.insync.replicas": "2"})
def test_commits_work_again_once_the_offsets_partition_has_its_replicas_back(cluster):
    """Both followers of the group's __consumer_offsets partition die, so its writes fail (not
    committed in time, then refused: ISR below min.insync.replicas). Once they are back, commits
    must succeed again: before, each write inherited the failure of the one before it, for good."""
    create_topic(cluster.bootstrap, "writes", 1)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def commit(offset: int) -> bool:
        tps = [TopicPartition("writes", 0, offset)]
        try:
            done = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("w", tps)])["w"].result(30)
        except Exception:       # noqa: BLE001 - COORDINATOR_NOT_AVAILABLE and the like, as a whole
            return False
        return all(tp.error is None for tp in done.topic_partitions)

    assert commit(10)
    leader = coordinator_of(cluster, "w")
    followers = [b for b in cluster.brokers if b.node_id != leader]
    for b in followers:
        b.kill9()
    wait_for(lambda: not commit(11), 60, "commits to fail without the followers")
    for b in followers:
        b.start()
    wait_for(lambda: commit(12), 90, "commits to succeed again")
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("w")])["w"].result(30)
    assert [tp.offset for tp in res.topic_partitions] == [12]
