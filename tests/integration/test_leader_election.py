"""Leader elections in real processes (issue 4): 1 controller + 3 brokers.

1. Controlled shutdown: SIGTERM of a broker while an acks=all producer streams
   moves every leader it had to another ISR member before the process exits
   (``broker.session.timeout.ms`` is 60 s, so fencing cannot be what moves
   them); once it is back in every ISR, ``tierlog elect-leaders --election-type
   preferred --all-topic-partitions`` gives every partition back to its first
   replica; no acknowledged record is lost on the way.
2. ``auto.leader.rebalance.enable`` with a 1 s check interval: leaders go back to
   the preferred replica by themselves, under an acks=all producer that loses
   nothing; with it false they stay where they are until an ElectLeaders
   (confluent-kafka's AdminClient here) asks.
3. Unclean election: the ISR of a partition is all down, its other replica is
   back but out of the ISR, so the partition stays leaderless under
   unclean.leader.election.enable=false until ``tierlog elect-leaders
   --election-type unclean`` makes that replica the leader.
"""
import subprocess
import sys
import time

import pytest
from clients import AckedStream, read_back
from cluster import FAST_REPLICATION, Cluster, wait_for
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

pytestmark = pytest.mark.integration

TOPIC, PARTITIONS = "elections", 6
LONG_SESSION = {**FAST_REPLICATION, "broker.session.timeout.ms": "60000"}
ELECTION_NOT_NEEDED = 84


# -- helpers ----------------------------------------------------------------------------------------

def _partitions(cluster, broker, topic=TOPIC) -> list[dict]:
    return cluster.partitions(broker, topic)


def _live(cluster, topic=TOPIC, partitions=PARTITIONS) -> list[dict]:
    return cluster.live_partitions(topic, partitions)


def _create(cluster, topic=TOPIC, partitions=PARTITIONS, assignment=None, configs=None):
    cluster.wait_leader()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = (NewTopic(topic, len(assignment), replica_assignment=assignment, config=configs or {}) if assignment
           else NewTopic(topic, partitions, 3, config=configs or {}))
    admin.create_topics([new], request_timeout=15)[topic].result(timeout=20)

    def settled():
        everywhere = [_partitions(cluster, b, topic) for b in cluster.brokers]
        return all(len(ps) == partitions and all(p["LeaderId"] >= 0 and p["IsrNodes"] == p["ReplicaNodes"]
                                                 for p in ps) for ps in everywhere)
    wait_for(settled, 30, f"{topic} led, with a full ISR, on every broker")


def _preferred_leaders(ps) -> bool:
    return bool(ps) and all(p["LeaderId"] == p["ReplicaNodes"][0] for p in ps)


def _elect_cli(cluster, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", "elect-leaders", *args,
                           "--bootstrap-server", cluster.bootstrap, "--timeout", "30"],
                          check=False, capture_output=True, text=True, timeout=90)


def _stream(cluster) -> AckedStream:
    return AckedStream(cluster.bootstrap, TOPIC, partitions=PARTITIONS, message_timeout_ms=120000, pause_s=0.005)


def _assert_nothing_lost(streamer, bootstrap):
    left = streamer.finish()
    assert left == 0, f"{left} records undelivered"
    assert not streamer.errors, streamer.errors[:5]
    got = read_back(bootstrap, TOPIC, PARTITIONS)
    missing = [(p, off) for p, off, v in streamer.acked if got[p].get(off) != v]
    assert not missing, f"{len(missing)} of {len(streamer.acked)} acknowledged records lost, first: {missing[:5]}"


def _sigterm_and_check_leaders_moved(cluster, victim):
    """SIGTERM ``victim``; right after it exits every partition is led by another live broker."""
    assert victim.stop(60) == 0, victim.log_tail()
    others = [b for b in cluster.brokers if b is not victim]

    def moved():
        views = [_partitions(cluster, b) for b in others]
        return all(len(ps) == PARTITIONS and all(p["LeaderId"] not in (victim.node_id, -1) for p in ps)
                   for ps in views)
    # broker.session.timeout.ms is 60 s, counted from the last heartbeat (at most at the exit): leaders seen
    # moved within 15 s of the exit were moved by the controlled shutdown, not by fencing
    wait_for(moved, 15, f"every leader away from broker {victim.node_id} on the other brokers")
    assert "controlled shutdown did not finish" not in victim.log_path.read_text(errors="replace")


def _restart_and_rejoin(cluster, victim):
    victim.start()

    def back_in_every_isr():
        ps = _live(cluster)
        return ps and all(victim.node_id in p["IsrNodes"] for p in ps)
    wait_for(back_in_every_isr, 60, f"broker {victim.node_id} back in every ISR")


# -- 1. controlled shutdown, then a preferred election from the CLI ---------------------------------

@pytest.mark.cluster(props={**LONG_SESSION, "auto.leader.rebalance.enable": "false"})
def test_controlled_shutdown_moves_leaders_and_preferred_election_restores_them(cluster):
    _create(cluster)
    original = _live(cluster)
    assert _preferred_leaders(original)
    assert {p["LeaderId"] for p in original} == {b.node_id for b in cluster.brokers}

    streamer = _stream(cluster)
    streamer.start()
    try:
        wait_for(lambda: len(streamer.acked) >= 300, 30, "the first acknowledged records")
        victim = cluster.broker(original[0]["LeaderId"])
        _sigterm_and_check_leaders_moved(cluster, victim)
        before = len(streamer.acked)
        wait_for(lambda: len(streamer.acked) > before + 200, 40, "acknowledgements after the shutdown")

        _restart_and_rejoin(cluster, victim)
        assert not _preferred_leaders(_live(cluster))          # nothing moved them back by itself
        result = _elect_cli(cluster, "--election-type", "preferred", "--all-topic-partitions")
        assert result.returncode == 0, result.stderr
        theirs = sorted(f"{TOPIC}-{p['PartitionIndex']}" for p in original if p["LeaderId"] == victim.node_id)
        assert result.stdout.splitlines() == [
            f"Successfully completed leader election (PREFERRED) for partitions {', '.join(theirs)}"], result.stdout
        wait_for(lambda: _preferred_leaders(_live(cluster)), 10, "the original leaders back")
        assert [p["LeaderId"] for p in _live(cluster)] == [p["LeaderId"] for p in original]

        # asked again, through kafka-python this time: nothing left to do
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            resp = admin.elect_leaders(0, {TOPIC: list(range(PARTITIONS))}, raise_errors=False)
        finally:
            admin.close()
        codes = [r.error_code for t in resp.replica_election_results for r in t.partition_result]
        assert codes == [ELECTION_NOT_NEEDED] * PARTITIONS
        again = _elect_cli(cluster, "--preferred", "--topic", TOPIC, "--partition", "0")
        assert again.returncode == 0 and again.stdout == f"Valid replica already elected for partitions {TOPIC}-0\n"

        before = len(streamer.acked)
        wait_for(lambda: len(streamer.acked) > before + 200, 40, "acknowledgements after the election")
        _assert_nothing_lost(streamer, cluster.bootstrap)
    finally:
        streamer.stopping.set()


# -- 2. automatic leader rebalance ------------------------------------------------------------------

@pytest.mark.parametrize("enabled", [True, False], ids=["auto-rebalance-on", "auto-rebalance-off"])
def test_auto_leader_rebalance(tmp_path, enabled):
    props = {**LONG_SESSION, "auto.leader.rebalance.enable": str(enabled).lower(),
             "leader.imbalance.check.interval.seconds": "1"}
    cluster = Cluster(tmp_path, 1, 3, props).start()
    streamer = None
    try:
        _create(cluster)
        original = _live(cluster)
        victim = cluster.broker(original[1]["LeaderId"])
        streamer = _stream(cluster)           # leadership moves under a producer
        streamer.start()
        wait_for(lambda: len(streamer.acked) >= 100, 30, "the first acknowledged records")
        _sigterm_and_check_leaders_moved(cluster, victim)
        _restart_and_rejoin(cluster, victim)
        if enabled:
            wait_for(lambda: _preferred_leaders(_live(cluster)), 30, "leaders back on their preferred replicas")
        else:
            _stay_off_preferred(cluster, 8)                      # 8 check intervals go by: no one moves them
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            done = admin.elect_leaders(ElectionType.PREFERRED, None).result(30)
            elected = sorted(tp.partition for tp, err in done.items() if err is None)
            assert elected == [p["PartitionIndex"] for p in original if p["LeaderId"] == victim.node_id], done
            wait_for(lambda: _preferred_leaders(_live(cluster)), 10, "leaders back after ElectLeaders")
        before = len(streamer.acked)
        wait_for(lambda: len(streamer.acked) > before + 200, 40, "acknowledgements after the leaders came back")
        _assert_nothing_lost(streamer, cluster.bootstrap)
    finally:
        if streamer is not None:
            streamer.stopping.set()
        cluster.stop()


def _stay_off_preferred(cluster, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert not _preferred_leaders(_live(cluster)), "leaders moved back with auto.leader.rebalance.enable=false"
        time.sleep(0.5)


# -- 3. unclean election --------------------------------------------------------------------------

def test_unclean_election_elects_the_surviving_out_of_sync_replica(tmp_path):
    cluster = Cluster(tmp_path, 1, 3, FAST_REPLICATION).start()
    try:
        observer, first, second = cluster.brokers          # the topic lives on first and second only
        _create(cluster, "u", 1, [[first.node_id, second.node_id]])
        assert _live(cluster, "u", 1)[0]["LeaderId"] == first.node_id
        _produce(cluster, "u", 0, 100)

        second.kill9()                                      # fenced after its session: the ISR is just first

        def isr_is_first():
            ps = _partitions(cluster, observer, "u")
            return ps and ps[0]["IsrNodes"] == [first.node_id] and ps[0]["LeaderId"] == first.node_id
        wait_for(isr_is_first, 30, "the ISR down to the leader")
        _produce(cluster, "u", 100, 50)                     # only the leader has these
        first.kill9()
        wait_for(lambda: _partitions(cluster, observer, "u")[0]["LeaderId"] == -1, 30, "no leader left")

        second.start()                                      # back, but it was never in the newer ISR

        def second_unfenced():
            return second.node_id in {b["NodeId"] for b in cluster.metadata(observer)["Brokers"]}
        wait_for(second_unfenced, 30, "the out-of-sync replica registered and unfenced")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            part = _partitions(cluster, observer, "u")[0]
            assert part["LeaderId"] == -1, f"elected with unclean.leader.election.enable=false: {part}"
            time.sleep(0.5)

        result = _elect_cli(cluster, "--election-type", "unclean", "--topic", "u", "--partition", "0")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Successfully completed leader election (UNCLEAN) for partitions u-0\n"
        # the CLI's broker answered once its own image had the election; the observer's may lag a moment
        part = wait_for(lambda: next((p for p in _partitions(cluster, observer, "u") if p["LeaderId"] != -1), None),
                        10, "the observer to see the elected leader")
        assert part["LeaderId"] == second.node_id and part["IsrNodes"] == [second.node_id], part
        # the records only the dead leader had are gone (what "unclean" means); the others are readable
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unclean", "enable.auto.commit": False})

        def high_watermark_at_100():
            try:
                return c.get_watermark_offsets(TopicPartition("u", 0), timeout=5)[1] == 100
            except KafkaException as e:     # NOT_LEADER while the client's metadata catches up
                assert e.args[0].retriable(), e
                return False
        try:
            wait_for(high_watermark_at_100, 30, "the new leader's high watermark at 100")
        finally:
            c.close()
        _produce(cluster, "u", 150, 10)                     # and it takes writes
        again = _elect_cli(cluster, "--unclean", "--topic", "u")
        assert again.returncode == 0 and again.stdout == "Valid replica already elected for partitions u-0\n"
    finally:
        cluster.stop()


def _produce(cluster, topic, start, n):
    done = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": 30000})
    for i in range(start, start + n):
        p.produce(topic, value=f"v{i}".encode(), partition=0, on_delivery=lambda err, m: done.append(err))
    assert p.flush(40) == 0, cluster.logs_tail(30)
    assert done == [None] * n, [e for e in done if e][:3]
