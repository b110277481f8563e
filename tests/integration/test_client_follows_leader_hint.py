"""KIP-951 in tierlog's own Fetch client, over sockets: 1 controller + 3 brokers (nodes 2-4).

An RF 3 partition led by broker 2 is read with ``client.read_range`` one batch per
fetch. Halfway, leadership moves to broker 3 (replicas reordered with
AlterPartitionReassignments, then a preferred ElectLeaders). The client's next
fetch to broker 2 is answered with an error naming broker 3 and the new epoch; the
client follows it at once: no Metadata request is sent between that error and the
first batch from broker 3 (counted by the client's connections, ``Cluster.sent``),
and every record is read exactly once.
"""
import pytest
from cluster import request, wait_for
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.client import Cluster, read_range
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration
TOPIC, ROUNDS, PER_ROUND = "hinted", 8, 25
PREFERRED = 0


def _leaders(cluster) -> dict[int, tuple[int, int]]:
    """(leader, leader epoch) of partition 0 as each broker's Metadata answers it."""
    out = {}
    for b in cluster.brokers:
        ps = cluster.partitions(b, TOPIC)
        out[b.node_id] = (ps[0]["LeaderId"], ps[0]["LeaderEpoch"]) if ps else (-1, -1)
    return out


def _produce_in_rounds(cluster) -> list[bytes]:
    """ROUNDS flushes of PER_ROUND records: at least ROUNDS batches, so the read takes many fetches."""
    from clients import produce_all
    values = []
    for r in range(ROUNDS):
        batch = [f"r{r}-v{i}".encode() for i in range(PER_ROUND)]
        produce_all(cluster.bootstrap, TOPIC, [(0, None, v, None, None) for v in batch])
        values += batch
    return values


def _move_leader(cluster, broker, to: list[int]) -> None:
    body = {"TimeoutMs": 30000, "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0, "Replicas": to}]}]}
    resp = request("127.0.0.1", broker.port, ApiKey.ALTER_PARTITION_REASSIGNMENTS, body, version=0, timeout_s=30)
    assert resp["ErrorCode"] == 0 and resp["Responses"][0]["Partitions"][0]["ErrorCode"] == 0, resp
    body = {"ElectionType": PREFERRED, "TopicPartitions": [{"Topic": TOPIC, "Partitions": [0]}], "TimeoutMs": 30000}
    resp = request("127.0.0.1", broker.port, ApiKey.ELECT_LEADERS, body, version=2, timeout_s=30)
    assert resp["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"] == ErrorCode.NONE, resp


def test_the_client_follows_the_leader_hint_without_a_metadata_round_trip(cluster):
    cluster.wait_leader()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[2, 3, 4]])],
                        request_timeout=15)[TOPIC].result(timeout=20)
    wait_for(lambda: all(lead == (2, 0) for lead in _leaders(cluster).values()), 30, "broker 2 leading everywhere")
    values = _produce_in_rounds(cluster)
    wait_for(lambda: all(sorted(p["IsrNodes"]) == [2, 3, 4] for b in cluster.brokers
                         for p in cluster.partitions(b, TOPIC)), 30, "a full ISR")

    client = Cluster(cluster.bootstrap, client_id="hint-test", retry_timeout_s=30)
    old, new = (f"127.0.0.1:{cluster.broker(n).port}" for n in (2, 3))

    def metadata_requests():
        return sum(n for (_, key), n in client.sent.items() if key == ApiKey.METADATA)

    try:
        batches = read_range(client, TOPIC, 0, 0, len(values), max_bytes=1)   # one batch per fetch
        seen = [next(batches), next(batches)]
        assert client.sent[(new, ApiKey.FETCH)] == 0 and client.sent[(old, ApiKey.FETCH)] >= 2
        _move_leader(cluster, cluster.broker(2), [3, 2, 4])
        wait_for(lambda: all(lead[0] == 3 for lead in _leaders(cluster).values()), 30, "broker 3 leading everywhere")
        before = metadata_requests()
        for batch in batches:
            seen.append(batch)
            if client.sent[(new, ApiKey.FETCH)]:
                break               # the first batch broker 3 served
        assert client.leader_hints_taken == 1
        assert metadata_requests() == before, "a Metadata request went out between the error and the retry"
        assert client.sent[(new, ApiKey.API_VERSIONS)] == 1     # a new connection: ApiVersions, no Metadata
        seen += list(batches)
    finally:
        client.close()
    offsets = [o for b in seen for o in b.column("offset").to_pylist()]
    got = [v for b in seen for v in b.column("value").to_pylist()]
    assert offsets == list(range(len(values))), "records missing or read twice"
    assert got == values
    assert client.leader_epoch((TOPIC, 0)) >= 1 and client.partitions[TOPIC][0].leader == 3
