"""SASL for every client generation: SaslHandshake v0 (raw tokens, KIP-43) and v1, PLAIN and SCRAM.

One combined node with a SASL_PLAINTEXT listener enabling PLAIN and SCRAM-SHA-512 (the
SCRAM user bootstrapped as ``tierlog format --add-scram`` does). Debian's kcat (librdkafka
2.0.2, which logs in only when ApiVersions lists SaslHandshake v0) and the current
confluent-kafka list, produce and consume with both mechanisms; kafka-python pinned to
Kafka 0.11's versions sends SaslHandshake v0 and raw tokens and then produces and consumes;
a raw-token login over a bare socket gets PLAIN's empty frame, and a wrong password gets no
answer, only the close. No node log traceback.
"""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from nodeproc import NodeProcess, free_port

from tierlog.cli.cmd_format import scram_records
from tierlog.cli.scram_config import ScramEntry
from tierlog.metadata.bootstrap import write_bootstrap
from tierlog.metadata.scram import ScramMechanism
from tierlog.protocol import ApiKey, decode_response, encode_request

pytestmark = pytest.mark.timeout(180)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
LOGINS = {"PLAIN": ("alice", "alice-secret"), "SCRAM-SHA-512": ("carol", "carol-secret")}
KCAT = shutil.which("kcat") or shutil.which("kafkacat")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    sasl, broker = free_port(), free_port()
    node = NodeProcess(tmp_path_factory.mktemp("sasl-v0"), 1, sasl, {
        "listeners": f"SASL://127.0.0.1:{sasl},BROKER://127.0.0.1:{broker}",
        "listener.security.protocol.map": "SASL:SASL_PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "BROKER", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl.plain.sasl.jaas.config": JAAS,
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "2"})
    write_bootstrap(node.data_dir, scram_records([ScramEntry(ScramMechanism.SCRAM_SHA_512, "carol", "carol-secret", 4096)]))
    node.start()
    yield node
    node.stop()
    log = node.log_path.read_text(errors="replace")
    assert "Traceback" not in log, node.log_tail(60)
    assert "carol-secret" not in log and "alice-secret" not in log


def _conf(mechanism: str) -> dict:
    user, password = LOGINS[mechanism]
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism,
            "sasl.username": user, "sasl.password": password}


def _topic(node, mechanism: str) -> str:
    topic = f"v0-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": node.bootstrap, **_conf(mechanism)})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    return topic


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_current_confluent_kafka(node, mechanism):
    topic = _topic(node, mechanism)
    producer = Producer({"bootstrap.servers": node.bootstrap, "acks": "all", **_conf(mechanism)})
    for i in range(10):
        producer.produce(topic, b"c%d" % i)
    assert producer.flush(30) == 0
    assert _consume(node, topic, mechanism, 10) == [b"c%d" % i for i in range(10)]


def _consume(node, topic: str, mechanism: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", **_conf(mechanism)})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(60):
            if len(got) >= count:
                break
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def _kcat(node, mechanism: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    options = [x for k, v in _conf(mechanism).items() for x in ("-X", f"{k}={v}")]
    return subprocess.run([KCAT, "-b", node.bootstrap, *options, *args], input=stdin, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed and could not be (./dev setup installs Debian's "
                                         "kcat with apt-get; without apt this test cannot run)")
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_debians_kcat(node, mechanism):
    """librdkafka 2.0.2 required SaslHandshake v0 in ApiVersions ('SASL Handshake not supported by broker')."""
    topic = _topic(node, mechanism)
    listed = _kcat(node, mechanism, "-L", "-t", topic)
    assert listed.returncode == 0, listed.stderr
    assert f'topic "{topic}" with 1 partitions' in listed.stdout
    produced = _kcat(node, mechanism, "-P", "-t", topic, stdin="k1\nk2\nk3\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _kcat(node, mechanism, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["k1", "k2", "k3"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_kafka_python_of_kafka_0_11_logs_in_with_raw_tokens(node, mechanism, caplog):
    from kafka import KafkaConsumer, KafkaProducer

    user, password = LOGINS[mechanism]
    conf = {"bootstrap_servers": node.bootstrap, "api_version": (0, 11), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}
    topic = _topic(node, mechanism)
    with caplog.at_level(logging.DEBUG, logger="kafka.net.connection"):
        producer = KafkaProducer(acks="all", **conf)
        for i in range(5):
            producer.send(topic, b"p%d" % i)
        producer.flush(30)
        producer.close()
    sent = [r.getMessage() for r in caplog.records if "Request" in r.getMessage()]
    assert any("SaslHandshakeRequest" in m and "version=0" in m for m in sent), sent[:5]
    assert not any("SaslAuthenticateRequest" in m for m in sent)
    consumer = KafkaConsumer(topic, group_id=f"g-{uuid.uuid4().hex[:6]}", auto_offset_reset="earliest",
                             consumer_timeout_ms=15000, **conf)
    got = [m.value for _, m in zip(range(5), consumer, strict=False)]
    consumer.close()
    assert got == [b"p%d" % i for i in range(5)]


def _frames(sock: socket.socket, *frames: bytes) -> None:
    sock.sendall(b"".join(len(f).to_bytes(4, "big") + f for f in frames))


def _read_frame(sock: socket.socket) -> bytes | None:
    """One size-prefixed frame; None when the node closed the connection."""
    head = _read(sock, 4)
    return None if head is None else _read(sock, int.from_bytes(head, "big"))


def _read(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


@pytest.mark.parametrize(("password", "accepted"), [("alice-secret", True), ("wrong", False)])
def test_a_raw_plain_token_over_a_socket(node, password, accepted):
    hello = encode_request(ApiKey.SASL_HANDSHAKE, 0, 1, "raw", {"Mechanism": "PLAIN"})
    with socket.create_connection(("127.0.0.1", node.port), timeout=20) as sock:
        _frames(sock, hello)
        answer = decode_response(ApiKey.SASL_HANDSHAKE, 0, _read_frame(sock))[1]
        assert answer["ErrorCode"] == 0 and "PLAIN" in answer["Mechanisms"]
        _frames(sock, b"\x00alice\x00" + password.encode())
        if not accepted:
            assert _read_frame(sock) is None          # no answer: v0 has no way to say why
            return
        assert _read_frame(sock) == b""                 # PLAIN's empty token, no header
        metadata = encode_request(ApiKey.METADATA, 12, 2, "raw", {"Topics": None, "AllowAutoTopicCreation": False,
                                                                   "IncludeTopicAuthorizedOperations": False})
        _frames(sock, metadata)
        correlation, body = decode_response(ApiKey.METADATA, 12, _read_frame(sock))
        assert correlation == 2 and body["Brokers"][0]["NodeId"] == 1
