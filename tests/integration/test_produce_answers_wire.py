"""Produce v10 over tierlog's blocking connection to broker 2 of 1 controller + 3 brokers (nodes 2-4).

One request names partitions that succeed, repeat, fail validation, do not exist, and
are led elsewhere: every partition of the request is answered, in order; those led
elsewhere carry KIP-951's CurrentLeader (from the partition state where broker 2 is a
follower, from the metadata image where it hosts no replica) and NodeEndpoints lists
exactly those leaders at their listener's endpoints. v9 carries no hint.
"""
import pytest
from cluster import wait_for
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.net.blocking import BlockingConnection
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records.builder import build_batch
from tierlog.records.record import Record

pytestmark = pytest.mark.integration
NO_HINT = {"LeaderId": -1, "LeaderEpoch": -1}


def _batch(value: bytes) -> bytes:
    return build_batch([Record(0, 1_700_000_000_000, None, value)])


def _corrupt(batch: bytes) -> bytes:
    return batch[:-1] + bytes([batch[-1] ^ 0xFF])       # the CRC no longer matches


def _create(cluster, assignments: dict[str, list[list[int]]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic(t, len(a), replica_assignment=a) for t, a in assignments.items()],
                                  request_timeout=15)
    for f in futures.values():
        f.result(timeout=20)

    def placed():
        for b in cluster.brokers:
            for t, a in assignments.items():
                ps = cluster.partitions(b, t)
                if len(ps) != len(a) or any(p["LeaderId"] != want[0] or sorted(p["IsrNodes"]) != sorted(want)
                                            for p, want in zip(ps, a)):
                    return False
        return True
    wait_for(placed, 30, "topics placed, with their first replicas leading, on every broker")


def _answers(resp) -> list[tuple]:
    return [(t["Name"], p["Index"], p["ErrorCode"], p.get("CurrentLeader", NO_HINT))
            for t in resp["Responses"] for p in t["PartitionResponses"]]


def _produce(conn, version, topics):
    body = {"TransactionalId": None, "Acks": 1, "TimeoutMs": 10000, "TopicData": [
        {"Name": name, "PartitionData": [{"Index": i, "Records": r} for i, r in parts]} for name, parts in topics]}
    return conn.request(ApiKey.PRODUCE, version, body)


def test_every_partition_of_a_produce_is_answered_with_hints_for_moved_leaders(cluster):
    cluster.wait_leader()
    _create(cluster, {"led": [[2, 3], [2, 3], [2, 3]], "follower": [[3, 2]], "elsewhere": [[4, 3]]})
    ports = {b.node_id: b.port for b in cluster.brokers}
    conn = BlockingConnection("127.0.0.1", ports[2], client_id="wire-test", timeout_s=15)
    try:
        resp = _produce(conn, 10, [
            ("led", [(0, _batch(b"a")), (0, _batch(b"b")), (1, _corrupt(_batch(b"c"))), (2, None), (7, _batch(b"d"))]),
            ("no-such-topic", [(0, _batch(b"e"))]),
            ("follower", [(0, _batch(b"f"))]),
            ("elsewhere", [(0, _batch(b"g")), (-1, _batch(b"h"))]),
            ("led", [(2, b"\x00" * 7)]),                         # the same topic again, records too short
        ])
        old = _produce(conn, 9, [("follower", [(0, _batch(b"i"))])])
    finally:
        conn.close()
    assert _answers(resp) == [
        ("led", 0, ErrorCode.NONE, NO_HINT),
        ("led", 0, ErrorCode.NONE, NO_HINT),
        ("led", 1, ErrorCode.CORRUPT_MESSAGE, NO_HINT),
        ("led", 2, ErrorCode.INVALID_RECORD, NO_HINT),
        ("led", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_HINT),
        ("no-such-topic", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_HINT),
        ("follower", 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, {"LeaderId": 3, "LeaderEpoch": 0}),   # partition state
        ("elsewhere", 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, {"LeaderId": 4, "LeaderEpoch": 0}),  # metadata image
        ("elsewhere", -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_HINT),
        ("led", 2, ErrorCode.CORRUPT_MESSAGE, NO_HINT),
    ], resp
    offsets = [p["BaseOffset"] for p in resp["Responses"][0]["PartitionResponses"][:2]]
    assert offsets == [0, 1]                                   # the repeated partition: both appended, in order
    assert sorted((e["NodeId"], e["Host"], e["Port"]) for e in resp["NodeEndpoints"]) == \
        [(3, "127.0.0.1", ports[3]), (4, "127.0.0.1", ports[4])]
    assert _answers(old) == [("follower", 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, NO_HINT)] and "NodeEndpoints" not in old
