"""SSL listeners end to end, over sockets, with real clients.

One combined node serves two SSL listeners (server-verified ``SSL`` and mutual TLS
``MTLS``, ssl.client.auth=required); confluent-kafka, kafka-python, tierlog's own
client and the CLI (``--command-config`` in Kafka's client properties form) produce
and consume through them. A 1-controller + 2-broker cluster runs every node-to-node
path (Raft, controller channels, replica fetchers) over mutual TLS. Refused peers
(plaintext to a TLS port, an untrusted server, no client certificate) get a clear
client error and leave no traceback in the node's log; a node asked for SSL it cannot
honour does not start and says why in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from cluster import log_end_offset, wait_for
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from nodeproc import (
    NodeProcess,
    free_port,
    one_controller_and_brokers,
    start_all,
    stop_all,
)

from tierlog.client.cluster import LATEST, Cluster
from tierlog.net.client_security import client_security
from tierlog.net.dev_certs import DevCa

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    ca = DevCa.create(directory)
    stranger = DevCa.create(directory / "stranger")
    return {"dir": directory, "ca": ca.cert_path, "node": ca.issue("node", ["localhost", "127.0.0.1"]),
            "alice": ca.issue("alice", ["alice"]), "stranger_ca": stranger.cert_path}


def _ssl_props(certs, client_auth: str = "none") -> dict:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["node"].keystore),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs["ca"]),
            "ssl.client.auth": client_auth}


@pytest.fixture(scope="module")
def tls_node(tmp_path_factory, certs):
    port, mtls = free_port(), free_port()
    node = NodeProcess(tmp_path_factory.mktemp("tls-node"), 1, port, {
        "listeners": f"SSL://127.0.0.1:{port},MTLS://127.0.0.1:{mtls}",
        "listener.security.protocol.map": "SSL:SSL,MTLS:SSL,CONTROLLER:PLAINTEXT",
        **_ssl_props(certs), "listener.name.mtls.ssl.client.auth": "required",
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "2"})
    node.start()
    node.mtls = f"127.0.0.1:{mtls}"
    yield node
    node.stop()
    assert "Traceback" not in node.log_path.read_text(errors="replace"), node.log_tail(60)


def _rdkafka(certs, *, mutual=False, ca=None) -> dict:
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(ca or certs["ca"])}
    if mutual:
        conf |= {"ssl.certificate.location": str(certs["alice"].cert), "ssl.key.location": str(certs["alice"].key)}
    return conf


def _roundtrip_confluent(bootstrap: str, conf: dict, n: int = 50) -> list[bytes]:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **conf})
    for i in range(n):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False, **conf})
    consumer.assign([TopicPartition(topic, 0, -2)])
    got = []
    try:
        while len(got) < n:
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None, msg and msg.error()
            got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_confluent_kafka_over_ssl_and_mutual_tls(tls_node, certs):
    expected = [b"v%d" % i for i in range(50)]
    assert _roundtrip_confluent(tls_node.bootstrap, _rdkafka(certs)) == expected
    assert _roundtrip_confluent(tls_node.mtls, _rdkafka(certs, mutual=True)) == expected


def test_kafka_python_over_ssl_and_mutual_tls(tls_node, certs):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    for bootstrap, extra in ((tls_node.bootstrap, {}),
                             (tls_node.mtls, {"ssl_certfile": str(certs["alice"].cert),
                                              "ssl_keyfile": str(certs["alice"].key)})):
        conf = {"bootstrap_servers": bootstrap, "security_protocol": "SSL", "ssl_cafile": str(certs["ca"]), **extra}
        topic = f"kp-{uuid.uuid4().hex[:8]}"
        producer = KafkaProducer(acks="all", **conf)
        for i in range(20):
            producer.send(topic, b"k%d" % i).get(timeout=30)      # auto-created
        producer.close()
        consumer = KafkaConsumer(consumer_timeout_ms=10_000, **conf)
        consumer.assign([KTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got = [m.value for _, m in zip(range(20), consumer, strict=False)]
        consumer.close()
        assert got == [b"k%d" % i for i in range(20)]


def _fails(bootstrap: str, conf: dict) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 2000, "log_level": 0, **conf})
    with pytest.raises(KafkaException) as e:
        admin.list_topics(timeout=2.5)
    admin.poll(0.5)         # serves error_cb
    return str(e.value)


def test_refused_clients_get_clear_errors_and_the_node_no_traceback(tls_node, certs):
    errors = []
    cb = {"error_cb": errors.append}
    _fails(tls_node.bootstrap, cb)                                                     # plaintext to a TLS port
    _fails(tls_node.bootstrap, {**_rdkafka(certs, ca=certs["stranger_ca"]), **cb})     # untrusted server
    _fails(tls_node.mtls, {**_rdkafka(certs), **cb})                                    # no client certificate
    text = " ".join(str(e) for e in errors)
    assert "certificate verify failed" in text, text
    assert "Traceback" not in tls_node.log_path.read_text(errors="replace")
    assert _roundtrip_confluent(tls_node.bootstrap, _rdkafka(certs), 1) == [b"v0"]      # still serving


def test_tierlog_client_over_mutual_tls(tls_node, certs):
    """tierlog's own client (the Spark source's) through net.connect, with Kafka's client names."""
    topic = f"own-{uuid.uuid4().hex[:8]}"
    security = client_security({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                                "ssl.truststore.location": str(certs["ca"]), "ssl.keystore.type": "PEM",
                                "ssl.keystore.location": str(certs["alice"].keystore)})
    admin = AdminClient({"bootstrap.servers": tls_node.mtls, **_rdkafka(certs, mutual=True)})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)
    p = Producer({"bootstrap.servers": tls_node.mtls, **_rdkafka(certs, mutual=True)})
    for _i in range(7):
        p.produce(topic, b"x")
    assert p.flush(30) == 0
    cluster = Cluster(tls_node.mtls, client_id="tls-test", timeout_s=10, security=security)
    try:
        assert cluster.list_offsets([(topic, 0)], LATEST)[(topic, 0)] == 7
    finally:
        cluster.close()


def _cli(*args: str, check=True) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args], capture_output=True, text=True, check=False,
                         timeout=60)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def test_cli_takes_kafka_client_properties(tls_node, certs, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={certs['ca']}\n"
                     f"ssl.keystore.type=PEM\nssl.keystore.location={certs['alice'].keystore}\n")
    common = ("--bootstrap-server", tls_node.mtls, "--command-config", str(props))
    _cli("topics", "create", "cli-tls", "--partitions", "2", *common)                       # librdkafka
    described = json.loads(_cli("topics", "describe", "cli-tls", "--json", *common).stdout)  # tierlog's own wire
    assert [len(t["partitions"]) for t in described] == [2], described
    assert "cli-tls" in _cli("topics", "list", *common).stdout
    assert json.loads(_cli("metadata", "quorum", "--json", *common).stdout)["leader_id"] == 1
    plain = _cli("topics", "list", "--bootstrap-server", tls_node.mtls, "--timeout", "3", check=False)
    assert plain.returncode != 0 and len(plain.stderr.strip().splitlines()) == 1, plain.stderr
    bad = tmp_path / "bad.properties"
    bad.write_text("security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/x.jks\n")
    refused = _cli("topics", "list", "--bootstrap-server", tls_node.mtls, "--command-config", str(bad),
                   check=False)
    assert refused.returncode != 0 and "JKS is not supported" in refused.stderr, refused.stderr


@pytest.mark.parametrize(("props", "message"), [
    ({"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"}, "has no keystore"),
    ({"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "/nonexistent.pem"}, "cannot load the key and certificate chain"),
    ({"ssl.keystore.location": "/x.pem", "ssl.keymanager.algorithm": "SunX509"},
     "ssl.keymanager.algorithm: not supported"),
])
def test_a_node_refuses_ssl_it_cannot_honour(tmp_path, props, message):
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in {
        "node.id": "1", "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}", "log.dirs": str(tmp_path / "data"),
        **props}.items()))
    out = _cli("node", "--config", str(config), check=False)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert message in last and "Traceback" not in out.stderr, out.stderr


def test_cluster_traffic_over_mutual_tls(tmp_path, certs):
    """Raft, registration, heartbeats, forwarding and replica fetches between 1 controller and
    2 brokers, every listener SSL with ssl.client.auth=required; a client produces acks=all to
    an RF 2 topic and both replicas are in sync."""
    cport, ports = free_port(), [free_port(), free_port()]
    common = {"cluster.id": "tierlog-tls-cluster", "controller.quorum.voters": f"1@localhost:{cport}",
              "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "BROKER",
              "listener.security.protocol.map": "CONTROLLER:SSL,BROKER:SSL",
              **_ssl_props(certs, "required"), "offsets.topic.replication.factor": "2",
              "offsets.topic.num.partitions": "2", "broker.heartbeat.interval.ms": "300"}
    nodes = one_controller_and_brokers(tmp_path, cport, ports, common)
    try:
        start_all(nodes)
        bootstrap = ",".join(n.bootstrap for n in nodes[1:])
        conf = _rdkafka(certs, mutual=True)
        admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
        admin.create_topics([NewTopic("replicated", 1, 2)])["replicated"].result(timeout=30)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **conf})
        for i in range(100):
            producer.produce("replicated", b"r%d" % i)
        assert producer.flush(30) == 0
        isr = admin.list_topics("replicated", timeout=10).topics["replicated"].partitions[0].isrs
        assert sorted(isr) == [2, 3]
        for broker in nodes[1:]:     # each replica has all 100 (the follower fetched them over TLS)
            wait_for(lambda b=broker: log_end_offset(b.data_dir / "replicated-0") == 100, 20,
                     f"node {broker.node_id}'s replica")
    finally:
        stop_all(nodes[1:])
        stop_all(nodes[:1])
    for n in nodes:
        assert "Traceback" not in n.log_path.read_text(errors="replace"), n.log_tail(60)

