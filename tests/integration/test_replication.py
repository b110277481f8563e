"""Replication between brokers in real processes (issue 4): 1 controller + 3 brokers.

A topic with replication factor 3 gets 20k acks=all records; every broker ends
up with the same three logs; kill -9 of a partition leader elects another and
every acked record stays readable, and producing goes on.
"""
import time

from clients import consume_all, produce_all
from cluster import log_end_offset, wait_for
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC, PARTITIONS, RECORDS = "replicated", 3, 20_000


def _ends(cluster) -> dict[int, list[int]]:
    out = {}
    for b in cluster.brokers:
        dirs = [b.data_dir / f"{TOPIC}-{p}" for p in range(PARTITIONS)]
        out[b.node_id] = [log_end_offset(d) if d.is_dir() else -1 for d in dirs]
    return out


def _partitions(cluster, broker) -> list[dict]:
    return cluster.partitions(broker, TOPIC)


def test_replication_factor_3_survives_kill9_of_a_leader(cluster):
    cluster.wait_leader()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], request_timeout=15)[TOPIC].result(timeout=20)
    wait_for(lambda: all(len(_partitions(cluster, b)) == PARTITIONS for b in cluster.brokers), 15,
             "topic on every broker")
    parts = _partitions(cluster, cluster.brokers[0])
    assert all(len(p["ReplicaNodes"]) == 3 for p in parts), parts

    delivered = produce_all(cluster.bootstrap, TOPIC, [(i % PARTITIONS, str(i).encode(), b"v" * 100, None, None)
                                                       for i in range(RECORDS)])
    assert len(delivered) == RECORDS
    assert len(consume_all(cluster.bootstrap, TOPIC, PARTITIONS, RECORDS)) == RECORDS

    def replicated():
        ends = _ends(cluster)
        per_partition = {tuple(e[p] for e in ends.values()) for p in range(PARTITIONS)}
        return ends if all(len(set(t)) == 1 for t in per_partition) and sum(next(iter(ends.values()))) == RECORDS \
            else None
    wait_for(replicated, 30, "every broker holding the same three logs")

    victim_id = parts[0]["LeaderId"]
    victim = next(b for b in cluster.brokers if b.node_id == victim_id)
    victim.kill9()
    survivor = next(b for b in cluster.brokers if b.node_id != victim_id)

    def new_leaders():
        ps = _partitions(cluster, survivor)
        return ps if ps and all(p["LeaderId"] not in (victim_id, -1) for p in ps) else None
    wait_for(new_leaders, 30, f"new leaders without broker {victim_id}")

    bootstrap = ",".join(b.bootstrap for b in cluster.brokers if b.alive())
    got = consume_all(bootstrap, TOPIC, PARTITIONS, RECORDS)
    assert len(got) == RECORDS
    assert {int(m.key()) for m in got} == set(range(RECORDS))

    more = produce_all(bootstrap, TOPIC, [(i % PARTITIONS, str(RECORDS + i).encode(), b"w", None, None)
                                          for i in range(300)], **{"message.timeout.ms": 60000})
    assert len(more) == 300
    assert len(consume_all(bootstrap, TOPIC, PARTITIONS, RECORDS + 300)) == RECORDS + 300
    time.sleep(0)
