"""Replication under faults in real processes (issue 4): 1 controller + 3 brokers.

1. An idempotent acks=all producer streams keyed records while the leader of
   each partition in turn is killed with SIGKILL, a new leader is elected, and
   the old one restarts and rejoins the ISR: every acknowledged record is read
   back at its acknowledged offset (same set, same order per partition).
2. A follower killed while the leader takes more writes restarts, catches up,
   rejoins the ISR and ends with the leader's log end offset.
"""

from clients import AckedStream, read_back
from cluster import log_end_offset, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3


def _live_partitions(cluster, topic) -> list[dict]:
    return cluster.live_partitions(topic, PARTITIONS)


def _create_topic(cluster, topic, configs=None):
    cluster.wait_leader()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config=configs or {})],
                        request_timeout=15)[topic].result(timeout=20)

    def everywhere():
        return all(len(ps) == PARTITIONS and all(p["LeaderId"] >= 0 and len(p["IsrNodes"]) == 3 for p in ps)
                   for ps in (cluster.partitions(b, topic) for b in cluster.brokers))
    wait_for(everywhere, 20, f"{topic} with a leader and a full ISR on every broker")


def test_acked_records_survive_kill9_of_each_partition_leader_in_turn(cluster):
    topic = "faults-leaders"
    _create_topic(cluster, topic, {"min.insync.replicas": "2"})
    streamer = AckedStream(",".join(b.bootstrap for b in cluster.brokers), topic)
    streamer.start()
    try:
        wait_for(lambda: len(streamer.acked) >= 200, 30, "the first acknowledged records")
        for p in range(PARTITIONS):
            victim_id = _live_partitions(cluster, topic)[p]["LeaderId"]
            assert victim_id >= 0
            before = len(streamer.acked)
            victim = cluster.broker(victim_id)
            victim.kill9()

            def new_leader(p=p, victim_id=victim_id):
                ps = _live_partitions(cluster, topic)
                return ps and ps[p]["LeaderId"] not in (victim_id, -1)
            wait_for(new_leader, 30, f"a new leader of partition {p} without broker {victim_id}")
            victim.start()

            def back_in_isr(victim_id=victim_id):
                ps = _live_partitions(cluster, topic)
                return ps and all(victim_id in q["IsrNodes"] and q["LeaderId"] >= 0 for q in ps)
            wait_for(back_in_isr, 40, f"broker {victim_id} back in every ISR")
            wait_for(lambda before=before: len(streamer.acked) > before + 50, 40,
                     f"acknowledgements going on after the kill of broker {victim_id}")
    finally:
        left = streamer.finish()
    assert left == 0, f"{left} records still undelivered after flush\n{cluster.logs_tail()}"

    assert len(streamer.acked) > 500, len(streamer.acked)
    got = read_back(cluster.bootstrap, topic, PARTITIONS)
    for p in range(PARTITIONS):
        mine = streamer.acked_on(p)
        assert mine, f"nothing acknowledged on partition {p}"
        offsets = [off for off, _ in mine]
        assert len(set(offsets)) == len(offsets), f"partition {p}: one offset acknowledged twice"
        read = got[p]
        missing = [(off, v) for off, v in mine if read.get(off) != v]
        assert not missing, (f"partition {p}: {len(missing)} of {len(mine)} acknowledged records not read back "
                             f"at their offsets (read {len(read)}), "
                             f"first: {missing[:5]} read there: {[read.get(o) for o, _ in missing[:5]]}")
        acked_values = [v for _, v in mine]
        wanted = set(acked_values)
        read_values = [v for _, v in sorted(read.items()) if v in wanted]
        assert read_values == acked_values, f"partition {p}: acknowledged records read back out of order"
        all_values = list(read.values())
        assert len(all_values) == len(set(all_values)), f"partition {p}: duplicates despite idempotence"
    assert not streamer.errors, streamer.errors[:5]


def test_follower_down_while_leader_takes_writes_catches_up_and_rejoins_isr(cluster):
    topic = "faults-follower"
    _create_topic(cluster, topic)
    boot = ",".join(b.bootstrap for b in cluster.brokers)

    def produce(n, start):
        done = []
        p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000})
        for i in range(start, start + n):
            p.produce(topic, value=f"v{i}".encode(), partition=i % PARTITIONS,
                      on_delivery=lambda err, m: done.append(err))
            if i % 500 == 0:
                p.poll(0)
        assert p.flush(60) == 0
        assert done.count(None) == n, [e for e in done if e][:3]

    produce(1500, 0)
    parts = _live_partitions(cluster, topic)
    leader_id = parts[0]["LeaderId"]
    follower = next(b for b in cluster.brokers if b.node_id != leader_id)
    follower.kill9()

    def shrunk():
        ps = _live_partitions(cluster, topic)
        return ps and all(follower.node_id not in q["IsrNodes"] and q["LeaderId"] >= 0 for q in ps)
    wait_for(shrunk, 30, f"ISRs without the killed follower {follower.node_id}")
    produce(3000, 1500)                         # the follower is now 1000 records a partition behind

    def ends():
        return {b.node_id: [log_end_offset(b.data_dir / f"{topic}-{p}") for p in range(PARTITIONS)]
                for b in cluster.brokers}
    assert all(e < 1500 for e in ends()[follower.node_id]), ends()

    follower.start()

    def rejoined():
        ps = _live_partitions(cluster, topic)
        return ps and all(follower.node_id in q["IsrNodes"] for q in ps)
    wait_for(rejoined, 40, f"follower {follower.node_id} back in every ISR")

    def same_ends():
        e = ends()
        return e if all(v == [1500] * PARTITIONS for v in e.values()) else None
    try:
        wait_for(same_ends, 30, "every broker's log end offset at 1500 on each partition")
    except AssertionError as err:
        raise AssertionError(f"{err}: {ends()}\n{cluster.logs_tail()}") from None
