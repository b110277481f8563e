"""Many requests in one socket write to a real node: every answer comes back, in request order,
none for acks=0 Produce (net/server.py answers what one read brought in one pass and one write)."""
import socket

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.protocol import ApiKey, decode_response, encode_request
from tierlog.records.builder import build_batch
from tierlog.records.record import Record

pytestmark = pytest.mark.integration
PARTITIONS = 8


def _produce(topic: str, partition: int, acks: int, value: bytes) -> dict:
    batch = build_batch([Record(0, 1_700_000_000_000, None, value)])
    return {"TransactionalId": None, "Acks": acks, "TimeoutMs": 10_000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": partition, "Records": batch}]}]}


def _requests(topic: str) -> list[tuple[int, int, int, dict]]:
    """(correlation id, api key, version, body): Produce acks=1 / acks=0 / acks=all, Metadata, ApiVersions."""
    out = []
    for i in range(120):
        kind = i % 6
        if kind == 4:
            out.append((i, ApiKey.METADATA, 12, {"Topics": [{"Name": topic, "TopicId": bytes(16)}]}))
        elif kind == 5:
            out.append((i, ApiKey.API_VERSIONS, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}))
        else:
            acks = {0: 1, 1: 0, 2: -1, 3: 1}[kind]
            out.append((i, ApiKey.PRODUCE, 9, _produce(topic, i % PARTITIONS, acks, f"v{i}".encode())))
    return out


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "the node closed the connection"
            data += chunk
        return data
    return exactly(int.from_bytes(exactly(4), "big"))


def test_pipelined_requests_are_answered_in_order(node):
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    admin.create_topics([NewTopic("piped", PARTITIONS, 1)])["piped"].result(30)
    requests = _requests("piped")
    wire = b"".join(len(f).to_bytes(4, "big") + f
                    for f in (encode_request(k, v, cid, "pipelined", body) for cid, k, v, body in requests))
    with socket.create_connection(("127.0.0.1", node.port), timeout=30) as sock:
        sock.sendall(wire)                              # every request in one write
        expected = [(cid, k, v, body) for cid, k, v, body in requests
                    if not (k == ApiKey.PRODUCE and body["Acks"] == 0)]
        for cid, key, version, _ in expected:
            got, body = decode_response(key, version, _read_frame(sock))
            assert got == cid
            if key == ApiKey.PRODUCE:
                part = body["Responses"][0]["PartitionResponses"][0]
                assert part["ErrorCode"] == 0, part
    offsets = {p: 0 for p in range(PARTITIONS)}
    for _, key, _, body in requests:                  # every record landed, acks=0 ones too
        if key == ApiKey.PRODUCE:
            offsets[body["TopicData"][0]["PartitionData"][0]["Index"]] += 1
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "piped"})
    try:
        for p, n in offsets.items():
            low, high = consumer.get_watermark_offsets(TopicPartition("piped", p), timeout=10)
            assert (low, high) == (0, n)
    finally:
        consumer.close()
