"""Client quotas enforced over sockets (KIP-13/219): a producer and a consumer over their
byte rates get answers carrying throttle_time_ms (confluent-kafka's throttle_cb) and move
about their quota, while an unlimited client on the same broker is never throttled; the
quota metrics show on /metrics.

The node measures over 4 windows of 1 s (quota.window.num=4), so a first burst is three
seconds' worth; the clients send and fetch small requests (batch.size, fetch.max.bytes) so
that no single request is worth more than the 4 s a throttle may last. Bounds are generous
(2x the quota over the time, plus the burst), never timing asserts.
"""
import socket
import struct
import time
import urllib.request

import pytest
from cluster import request
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from nodeproc import NodeProcess

from tierlog.protocol import decode_response, encode_request

pytestmark = pytest.mark.integration

QUOTA = 100_000            # bytes/s
RUN_S = 6.0
VALUE = b"x" * 1_000
BURST_S = 3
MUTATIONS = 1              # partitions/s; a burst of 2 (controller.quota.window.num=2)
CREATE_TOPICS, THROTTLING_QUOTA_EXCEEDED, METADATA, ALTER_CLIENT_QUOTAS = 19, 89, 3, 49
LIMITS = {"controller_mutation_rate": MUTATIONS, "request_percentage": 0.01}   # 0.1 ms of handler time per s


@pytest.fixture(scope="module")
def quota_node(tmp_path_factory):
    n = NodeProcess(tmp_path_factory.mktemp("quotas") / "node-1",
                    props={"quota.window.num": "4", "controller.quota.window.num": "2",
                           "group.initial.rebalance.delay.ms": "100",     # the consumer's group
                           "metrics.prometheus.listener": "127.0.0.1:0"}).start()
    admin = AdminClient({"bootstrap.servers": n.bootstrap})
    for f in admin.create_topics([NewTopic("quota-in", 1, 1), NewTopic("quota-out", 1, 1)]).values():
        f.result(30)
    # one AlterClientQuotas request (the CLI's way there is test_client_quotas.py's)
    entries = [{"Entity": [{"EntityType": "client-id", "EntityName": client}],
                "Ops": [{"Key": key, "Value": float(LIMITS.get(key, QUOTA)), "Remove": False}]}
               for client, key in (("slow-producer", "producer_byte_rate"), ("slow-consumer", "consumer_byte_rate"),
                                   ("tierlog-tests", "controller_mutation_rate"), ("busy", "request_percentage"))]
    answer = request("127.0.0.1", n.port, ALTER_CLIENT_QUOTAS, {"Entries": entries, "ValidateOnly": False}, version=1)
    assert [e["ErrorCode"] for e in answer["Entries"]] == [0] * len(entries), answer
    yield n
    if n.alive():
        n.stop()


def _produce_for(bootstrap: str, client_id: str, seconds: float) -> tuple[int, list[int]]:
    """(bytes acknowledged, throttle times seen) producing as fast as the client may for ``seconds``."""
    throttles: list[int] = []
    acked = [0]

    def delivered(err, msg):
        if err is None:
            acked[0] += len(msg.value())
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "batch.size": 16384,
                  # a small queue: what is left in it at the end drains at the quota (2 MB took 20 s)
                  "queue.buffering.max.kbytes": 256,
                  "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            p.produce("quota-in", VALUE, on_delivery=delivered)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.flush(30)
    return acked[0], throttles


def test_a_producer_over_its_quota_is_throttled_and_an_unlimited_one_is_not(quota_node):
    start = time.monotonic()
    acked, throttles = _produce_for(quota_node.bootstrap, "slow-producer", RUN_S)
    elapsed = time.monotonic() - start
    assert throttles and max(throttles) > 0
    assert acked <= QUOTA * 2 * (elapsed + BURST_S), (acked, elapsed)
    fast_acked, fast_throttles = _produce_for(quota_node.bootstrap, "fast-producer", 2.0)
    assert [t for t in fast_throttles if t > 0] == []
    assert fast_acked > 0
    metrics = urllib.request.urlopen(f"http://{quota_node.announced['metrics']}/metrics", timeout=10).read().decode()
    assert 'kafka_server_produce_byte_rate{client_id="slow-producer",user=""}' in metrics
    throttle_lines = [ln for ln in metrics.splitlines()
                      if ln.startswith('kafka_server_produce_throttle_time{client_id="slow-producer"')]
    assert throttle_lines, metrics


def test_a_consumer_over_its_quota_is_throttled(quota_node):
    p = Producer({"bootstrap.servers": quota_node.bootstrap})
    for _ in range(1500):                       # 1.5 MB: 15 s of the consumer's quota
        p.produce("quota-out", VALUE)
    p.flush(30)
    throttles: list[int] = []
    c = Consumer({"bootstrap.servers": quota_node.bootstrap, "group.id": "quota-consumers",
                  "client.id": "slow-consumer", "auto.offset.reset": "earliest",
                  "fetch.max.bytes": 50_000, "max.partition.fetch.bytes": 50_000, "message.max.bytes": 50_000,
                  "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    c.subscribe(["quota-out"])
    got, start = 0, None
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and (not throttles or got < 3 * QUOTA):
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                start = start or time.monotonic()
                got += len(msg.value())
        elapsed = time.monotonic() - (start or time.monotonic())
    finally:
        c.close()
    assert throttles and max(throttles) > 0
    assert got <= QUOTA * 2 * (elapsed + BURST_S) + 100_000, (got, elapsed)


def _create(port: int, names: list[str], version: int) -> dict:
    body = {"Topics": [{"Name": n, "NumPartitions": 2, "ReplicationFactor": 1, "Assignments": [], "Configs": []}
                       for n in names], "timeoutMs": 30000, "validateOnly": False}
    return request("127.0.0.1", port, CREATE_TOPICS, body, version=version, timeout_s=60)


def test_controller_mutations_over_the_quota_are_refused_strictly_from_v6(quota_node):
    """KIP-599: a bucket of 2 partitions refilling 1 per second; the client id of these raw
    requests (tierlog-tests) has the quota."""
    answer = _create(quota_node.port, ["mut-a", "mut-b", "mut-c"], 7)
    codes = {t["Name"]: t["ErrorCode"] for t in answer["Topics"]}
    # the first takes the bucket to 0, the second below it; the third is refused
    assert codes == {"mut-a": 0, "mut-b": 0, "mut-c": THROTTLING_QUOTA_EXCEEDED}, answer
    assert answer["ThrottleTimeMs"] > 0
    refused = [t for t in answer["Topics"] if t["Name"] == "mut-c"][0]
    assert refused["ErrorMessage"] == "The throttling quota has been exceeded."
    # v5 is permissive: counted and throttled, never refused
    older = _create(quota_node.port, ["mut-d"], 5)
    assert [t["ErrorCode"] for t in older["Topics"]] == [0] and older["ThrottleTimeMs"] > 0


def test_a_client_over_its_request_percentage_gets_throttled_answers(quota_node):
    """KIP-124: Metadata requests of client id ``busy`` (0.01 % of a handler's second) on one connection."""
    throttles = []
    with socket.create_connection(("127.0.0.1", quota_node.port), timeout=30) as s:
        for correlation in range(50):
            frame = encode_request(METADATA, 12, correlation, "busy", {"Topics": []})
            s.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", _read(s, 4))[0]
            _, answer = decode_response(METADATA, 12, _read(s, size))
            throttles.append(answer["ThrottleTimeMs"])
            if answer["ThrottleTimeMs"] > 0:
                break
    assert throttles[-1] > 0, throttles


def _read(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf
