"""SASL PLAIN listeners end to end, with real clients.

One combined node: a SASL_PLAINTEXT listener, a SASL_SSL one and a PLAINTEXT one
for its own (inter-broker) traffic. confluent-kafka and kafka-python authenticate
with PLAIN and produce and consume on both; a wrong password and an unknown user
get Kafka's SASL_AUTHENTICATION_FAILED message; a request before authentication
closes the connection; the CLI's librdkafka commands take sasl.* from
--command-config; no node log traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from clients import refused_metadata
from cluster import log_end_offset, wait_for
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from nodeproc import (
    NodeProcess,
    free_port,
    one_controller_and_brokers,
    start_all,
    stop_all,
)

from tierlog.net.blocking import BlockingConnection
from tierlog.net.dev_certs import DevCa
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.protocol import ApiKey

pytestmark = pytest.mark.timeout(180)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def sasl_node(tmp_path_factory):
    certs = tmp_path_factory.mktemp("tls")
    ca = DevCa.create(certs)
    node_cert = ca.issue("node", ["localhost", "127.0.0.1"])
    plain, tls, broker = free_port(), free_port(), free_port()
    node = NodeProcess(tmp_path_factory.mktemp("sasl-node"), 1, plain, {
        "listeners": f"SASL://127.0.0.1:{plain},SASLSSL://127.0.0.1:{tls},BROKER://127.0.0.1:{broker}",
        "listener.security.protocol.map": "SASL:SASL_PLAINTEXT,SASLSSL:SASL_SSL,BROKER:PLAINTEXT,"
                                          "CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "BROKER", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl.plain.sasl.jaas.config": JAAS, "listener.name.saslssl.plain.sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(node_cert.keystore),
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "2"})
    node.start()
    node.sasl_ssl = f"127.0.0.1:{tls}"
    node.ca = ca.cert_path
    yield node
    node.stop()
    log = node.log_path.read_text(errors="replace")
    assert "Traceback" not in log, node.log_tail(60)
    assert "frame of" not in log, node.log_tail(60)     # no client was sent to another listener's port


def _conf(node, *, tls: bool, user="alice", password="alice-secret") -> dict:
    conf = {"security.protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
            "sasl.username": user, "sasl.password": password}
    return conf | ({"ssl.ca.location": str(node.ca)} if tls else {})


@pytest.mark.parametrize("tls", [False, True])
def test_confluent_kafka_with_plain(sasl_node, tls):
    bootstrap = sasl_node.sasl_ssl if tls else sasl_node.bootstrap
    conf = {"bootstrap.servers": bootstrap, **_conf(sasl_node, tls=tls)}
    topic = f"s-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)
    producer = Producer({**conf, "acks": "all"})
    for i in range(30):
        producer.produce(topic, b"m%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, -2)])
    got = []
    try:
        while len(got) < 30:
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None, msg and msg.error()
            got.append(msg.value())
        consumer.commit(asynchronous=False)       # through the group coordinator, found on this listener
    finally:
        consumer.close()
    assert got == [b"m%d" % i for i in range(30)]


@pytest.mark.parametrize("tls", [False, True])
def test_kafka_python_with_plain(sasl_node, tls):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    conf = {"bootstrap_servers": sasl_node.sasl_ssl if tls else sasl_node.bootstrap,
            "security_protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "admin", "sasl_plain_password": "admin-secret",
            **({"ssl_cafile": str(sasl_node.ca)} if tls else {})}
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(acks="all", **conf)
    for i in range(10):
        producer.send(topic, b"k%d" % i).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(consumer_timeout_ms=10_000, **conf)
    consumer.assign([KTopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    got = [m.value for _, m in zip(range(10), consumer, strict=False)]
    consumer.close()
    assert got == [b"k%d" % i for i in range(10)]


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
def test_failed_authentication_is_kafkas_error(sasl_node, user, password):
    failed = "Authentication failed: Invalid username or password"
    text = refused_metadata({"bootstrap.servers": sasl_node.bootstrap,
                             **_conf(sasl_node, tls=False, user=user, password=password)}, failed)
    assert failed in text, text


def test_requests_before_authentication_close_the_connection(sasl_node):
    host, port = sasl_node.bootstrap.split(":")
    conn = BlockingConnection(host, int(port), client_id="t", timeout_s=5)
    try:
        assert conn.request(ApiKey.API_VERSIONS, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}) \
            ["ErrorCode"] == 0                                          # ApiVersions is allowed first
        with pytest.raises(PeerUnavailable, match="closed"):
            conn.request(ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})
    finally:
        conn.close()


def test_cli_takes_sasl_settings(sasl_node, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=alice\n"
                     "sasl.password=alice-secret\n")
    run = [sys.executable, "-m", "tierlog.cli.main"]
    common = ["--bootstrap-server", sasl_node.bootstrap, "--command-config", str(props)]
    created = subprocess.run([*run, "topics", "create", "cli-sasl", *common], capture_output=True, text=True,
                             timeout=60, check=False)
    assert created.returncode == 0, created.stderr
    listed = subprocess.run([*run, "topics", "list", *common], capture_output=True, text=True, timeout=60,
                            check=False)
    assert "cli-sasl" in listed.stdout, listed.stderr
    own_wire = subprocess.run([*run, "metadata", "quorum", "--json", *common], capture_output=True, text=True,
                              timeout=60, check=False)          # tierlog's own connection, SASL/PLAIN
    assert own_wire.returncode == 0 and json.loads(own_wire.stdout)["leader_id"] == 1, own_wire.stderr
    props.write_text(props.read_text().replace("alice-secret", "wrong"))
    refused = subprocess.run([*run, "metadata", "quorum", *common], capture_output=True, text=True, timeout=60,
                             check=False)
    assert refused.returncode != 0 and "Invalid username or password" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_cluster_traffic_over_sasl_ssl(tmp_path):
    """Raft, registration, heartbeats, forwarding and replica fetches between 1 controller and
    2 brokers over SASL_SSL with PLAIN (each node logs in with its JAAS username/password);
    an RF 2 topic written acks=all reaches both replicas."""
    certs = DevCa.create(tmp_path / "tls")
    node_cert = certs.issue("node", ["localhost", "127.0.0.1"])
    cport, ports = free_port(), [free_port(), free_port()]
    common = {"cluster.id": "tierlog-sasl-cluster", "controller.quorum.voters": f"1@localhost:{cport}",
              "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "BROKER",
              "listener.security.protocol.map": "CONTROLLER:SASL_SSL,BROKER:SASL_SSL",
              "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
              "sasl.mechanism.controller.protocol": "PLAIN",
              "listener.name.controller.plain.sasl.jaas.config": JAAS,
              "listener.name.broker.plain.sasl.jaas.config": JAAS,
              "ssl.keystore.type": "PEM", "ssl.keystore.location": str(node_cert.keystore),
              "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.cert_path),
              "offsets.topic.replication.factor": "2", "offsets.topic.num.partitions": "2",
              "broker.heartbeat.interval.ms": "300"}
    nodes = one_controller_and_brokers(tmp_path, cport, ports, common)
    try:
        start_all(nodes)
        conf = {"bootstrap.servers": ",".join(n.bootstrap for n in nodes[1:]), "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret",
                "ssl.ca.location": str(certs.cert_path)}
        admin = AdminClient(conf)
        admin.create_topics([NewTopic("replicated", 1, 2)])["replicated"].result(timeout=30)
        producer = Producer({**conf, "acks": "all"})
        for i in range(100):
            producer.produce("replicated", b"r%d" % i)
        assert producer.flush(30) == 0
        assert sorted(admin.list_topics("replicated", timeout=10).topics["replicated"].partitions[0].isrs) == [2, 3]
        for broker in nodes[1:]:
            wait_for(lambda b=broker: log_end_offset(b.data_dir / "replicated-0") == 100, 20,
                     f"node {broker.node_id}'s replica")
    finally:
        stop_all(nodes[1:])
        stop_all(nodes[:1])
    for n in nodes:
        log = n.log_path.read_text(errors="replace")
        assert "Traceback" not in log and "SASL authentication failed" not in log, n.log_tail(60)


def test_the_cli_names_a_sasl_listener_it_did_not_log_in_to(sasl_node, tmp_path):
    """Issue 41: a command without a login on a SASL listener says so, through librdkafka (topics list) and
    tierlog's own connection (metadata quorum: ApiVersions is answered before a login, then the close)."""
    for command in (["topics", "list"], ["metadata", "quorum"]):
        run = subprocess.run([sys.executable, "-m", "tierlog.cli.main", *command, "--bootstrap-server",
                              sasl_node.bootstrap], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                             check=False)
        assert run.returncode == 1 and run.stderr.splitlines() == [
            f"tierlog: error: {sasl_node.bootstrap} closed the connection: it is a SASL listener (PLAIN) and this "
            "command did not log in: pass --command-config DATA_DIR/client.properties (tierlog up --security "
            "writes it in its --data-dir)"], run.stderr
