"""SASL/SCRAM end to end on a cluster laid out as ``tierlog up --security sasl_ssl`` lays it out.

1 controller + 2 brokers from ``cmd_up.node_properties`` and ``up_security.prepare_security``
(a development CA, SASL_SSL everywhere, SCRAM-SHA-512 between brokers, PLAIN on the
controller listener, the super user ``admin`` bootstrapped with ``tierlog format
--add-scram``, client.properties). Users are created with confluent-kafka's AdminClient and
with ``tierlog users``; confluent-kafka, kafka-python and aiokafka produce and consume with
SCRAM-SHA-256 and SCRAM-SHA-512; a wrong password, an unknown user and a client without
credentials are refused with Kafka's message; credentials survive a restart of every node;
no node logs a traceback.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import uuid
from types import SimpleNamespace

import pytest
from clients import refused_metadata
from cluster import log_end_offset, wait_for
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from nodeproc import NodeProcess, free_port

from tierlog.cli.cmd_up import NodePlan, node_properties
from tierlog.cli.up_security import prepare_security
from tierlog.config import parse_properties
from tierlog.net.client_security import to_librdkafka

pytestmark = pytest.mark.timeout(240)

CLI = [sys.executable, "-m", "tierlog.cli.main"]
USERS = {"alice": ("SCRAM-SHA-256", "alice-secret"), "bob": ("SCRAM-SHA-512", "bob-secret")}


def _cli(*args, check=True):
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=90, check=False)
    assert not check or done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("scram")
    security = prepare_security("sasl_ssl", root, "127.0.0.1", existing_cluster=False)
    cport, ports = free_port(), [free_port(), free_port()]
    plans = [NodePlan(1, ("controller",), None, cport), NodePlan(2, ("broker",), ports[0], None),
             NodePlan(3, ("broker",), ports[1], None)]
    overrides = {**security.node_props, "offsets.topic.replication.factor": "2",
                 "offsets.topic.num.partitions": "2", "broker.heartbeat.interval.ms": "300"}
    nodes = []
    for plan in plans:
        node = NodeProcess(root / f"node-{plan.node_id}", plan.node_id, plan.broker_port or plan.controller_port)
        node.props = parse_properties(node_properties(plan, "127.0.0.1", f"1@127.0.0.1:{cport}", "scram-cluster",
                                                      node.data_dir, overrides, "", security.broker_listener))
        nodes.append(node)
    controller = nodes[0]
    controller.root.mkdir(parents=True)
    controller.config_path.write_text("".join(f"{k}={v}\n" for k, v in controller.props.items()))
    admin_password = security.scram[0].password
    formatted = _cli("format", "--config", str(controller.config_path),
                     "--add-scram", f"SCRAM-SHA-512=[name=admin,password={admin_password}]")
    assert "wrote 1 SCRAM credential" in formatted.stdout
    for node in nodes:
        node.start()
    bootstrap = ",".join(n.bootstrap for n in nodes[1:])
    yield SimpleNamespace(nodes=nodes, client_properties=security.client_properties, bootstrap=bootstrap,
                          ca=root / "tls" / "ca.crt", admin={"bootstrap.servers": bootstrap, **to_librdkafka(
                              parse_properties(security.client_properties.read_text()))})
    for node in reversed(nodes):
        node.stop()
    for node in nodes:
        log = node.log_path.read_text(errors="replace")
        assert "Traceback" not in log, node.log_tail(60)
        assert "alice-secret" not in log and admin_password not in log


def _user_conf(cluster, user, mechanism=None, password=None) -> dict:
    mech, pw = USERS.get(user, ("SCRAM-SHA-512", "x"))
    return {"bootstrap.servers": cluster.bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanisms": mechanism or mech, "sasl.username": user, "sasl.password": password or pw,
            "ssl.ca.location": str(cluster.ca)}


def _create_users(cluster) -> None:
    admin = AdminClient(cluster.admin)
    for user, (mechanism, password) in USERS.items():
        info = ScramCredentialInfo(ScramMechanism[mechanism.replace("-", "_")], 8192)
        futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(user, info, password.encode())])
        futures[user].result(timeout=30)
    described = admin.describe_user_scram_credentials(list(USERS))
    for user, (mechanism, _) in USERS.items():
        [info] = described[user].result(timeout=30).scram_credential_infos
        assert (info.mechanism.name, info.iterations) == (mechanism.replace("-", "_"), 8192)
    # `tierlog up --security` enforces ACLs: the users may write and read the scram-* topics and groups
    grants = [AclBinding(rtype, "scram-", ResourcePatternType.PREFIXED, f"User:{user}", "*", op,
                         AclPermissionType.ALLOW)
              for user in USERS for rtype, op in ((ResourceType.TOPIC, AclOperation.WRITE),
                                                  (ResourceType.TOPIC, AclOperation.READ),
                                                  (ResourceType.GROUP, AclOperation.READ))]
    for f in admin.create_acls(grants).values():
        f.result(timeout=30)


def test_clients_produce_and_consume_with_scram(secured):
    _create_users(secured)
    topic = f"scram-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(secured.admin)
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(timeout=30)
    for user in USERS:                                       # confluent-kafka: SCRAM-SHA-256 and -512
        conf = _user_conf(secured, user)
        producer = Producer({**conf, "acks": "all"})
        for i in range(20):
            producer.produce(topic, f"{user}-{i}".encode())
        assert producer.flush(30) == 0
    for broker in secured.nodes[1:]:                         # replicated between brokers over SCRAM-SHA-512
        wait_for(lambda b=broker: log_end_offset(b.data_dir / f"{topic}-0") == 40, 30,
                 f"node {broker.node_id}'s replica")
    consumer = Consumer({**_user_conf(secured, "bob"), "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, -2)])
    got = []
    try:
        while len(got) < 40:
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None, msg and msg.error()
            got.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"{u}-{i}".encode() for u in USERS for i in range(20))
    _kafka_python_round_trip(secured, topic)
    asyncio.run(_aiokafka_round_trip(secured, topic))


def _kafka_python_round_trip(cluster, topic) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    for user, (mechanism, password) in USERS.items():
        conf = {"bootstrap_servers": cluster.bootstrap, "security_protocol": "SASL_SSL", "sasl_mechanism": mechanism,
                "sasl_plain_username": user, "sasl_plain_password": password, "ssl_cafile": str(cluster.ca)}
        producer = KafkaProducer(acks="all", **conf)
        producer.send(topic, f"kp-{user}".encode()).get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(consumer_timeout_ms=10_000, **conf)
        consumer.assign([KTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        values = [m.value for m in consumer]
        consumer.close()
        assert f"kp-{user}".encode() in values and len(values) >= 41


async def _aiokafka_round_trip(cluster, topic) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context
    from aiokafka.structs import TopicPartition as ATopicPartition
    for user, (mechanism, password) in USERS.items():
        conf = {"bootstrap_servers": cluster.bootstrap, "security_protocol": "SASL_SSL", "sasl_mechanism": mechanism,
                "sasl_plain_username": user, "sasl_plain_password": password,
                "ssl_context": create_ssl_context(cafile=str(cluster.ca))}
        producer = AIOKafkaProducer(acks="all", **conf)
        await producer.start()
        try:
            await producer.send_and_wait(topic, f"aio-{user}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**conf)
        await consumer.start()
        try:
            tp = ATopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            end = (await consumer.end_offsets([tp]))[tp]
            values = []
            while len(values) < end:
                batch = await consumer.getmany(tp, timeout_ms=10_000)
                assert batch, f"aiokafka read {len(values)} of {end}"
                values += [m.value for m in batch[tp]]
        finally:
            await consumer.stop()
        assert f"aio-{user}".encode() in values


def test_failed_logins_and_clients_without_credentials_are_refused(secured):
    for user, mechanism, password in (("admin", "SCRAM-SHA-512", "wrong"), ("mallory", "SCRAM-SHA-512", "x"),
                                      ("admin", "SCRAM-SHA-256", "wrong")):
        failed = ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                  f"{mechanism}")
        text = refused_metadata(_user_conf(secured, user, mechanism, password), failed)
        assert failed in text, text
    refused_metadata({"bootstrap.servers": secured.bootstrap, "security.protocol": "SSL",   # no metadata without SASL
                      "ssl.ca.location": str(secured.ca)})
    mechanism = refused_metadata({**_user_conf(secured, "admin"), "sasl.mechanisms": "PLAIN"}, "PLAIN", "SCRAM-SHA-512")
    assert "PLAIN" in mechanism and "SCRAM-SHA-512" in mechanism, mechanism      # not enabled: the list is named
    _kafka_python_refusal(secured)


def _kafka_python_refusal(cluster) -> None:
    """kafka-python logs Kafka's message (it reads the answer before the delayed close) and fails."""
    import logging

    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logging.getLogger("kafka").addHandler(handler)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, security_protocol="SASL_SSL",
                             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin", sasl_plain_password="wrong",
                             ssl_cafile=str(cluster.ca), api_version=(3, 0), max_block_ms=3000)
    try:
        with pytest.raises(KafkaTimeoutError):
            producer.partitions_for("anything")
    finally:
        producer.close(timeout=1)
        logging.getLogger("kafka").removeHandler(handler)
    assert any("SaslAuthenticationFailedError" in m and "invalid credentials with SASL mechanism SCRAM-SHA-512" in m
               for m in seen), seen[-5:]


def test_cli_users_and_credentials_survive_a_restart(secured):
    common = ["--bootstrap-server", secured.bootstrap, "--command-config", str(secured.client_properties)]
    _cli("users", "--alter", "--add-config", "SCRAM-SHA-256=[password=carol-secret],"
         "SCRAM-SHA-512=[iterations=12000,password=carol-secret]", "--entity-name", "carol", *common)
    described = _cli("users", "--describe", "--entity-name", "carol", *common).stdout
    assert "SCRAM-SHA-256\t4096" in described and "SCRAM-SHA-512\t12000" in described, described
    _cli("users", "--alter", "--delete-config", "SCRAM-SHA-256", "--entity-name", "carol", *common)
    gone = _cli("users", "--alter", "--delete-config", "SCRAM-SHA-256", "--entity-name", "carol", *common, check=False)
    assert gone.returncode == 1 and "RESOURCE_NOT_FOUND" in gone.stderr and len(gone.stderr.splitlines()) == 1
    refused = _cli("topics", "list", "--bootstrap-server", secured.bootstrap, "--timeout", "4", check=False)
    assert refused.returncode != 0 and len(refused.stderr.splitlines()) == 1, refused.stderr
    own_wire = _cli("metadata", "quorum", *common)           # tierlog's own connection, SCRAM-SHA-512
    assert "LeaderId" in own_wire.stdout
    for node in reversed(secured.nodes):                     # every node, so the image is rebuilt from disk
        node.stop()
    for node in secured.nodes:
        node.start()
    carol = {**_user_conf(secured, "carol", "SCRAM-SHA-512", "carol-secret")}
    wait_for(lambda: _lists_topics(carol), 30, "carol's login after the restart")
    described = _cli("users", "--describe", "--json", *common).stdout
    assert '"user":"carol","mechanism":"SCRAM-SHA-512","iterations":12000' in described, described
    assert '"user":"carol","mechanism":"SCRAM-SHA-256"' not in described


def _lists_topics(conf) -> bool:
    try:
        AdminClient({**conf, "log_level": 0}).list_topics(timeout=3)
        return True
    except KafkaException:
        return False


def test_the_cli_names_a_tls_listener_and_a_refused_login(secured, tmp_path):
    """Issue 41: plaintext against the TLS listener and a wrong password each say so and name the fix, through
    librdkafka (topics list) and tierlog's own connection (metadata quorum) alike."""
    (tmp_path / "tierlog-data").mkdir()
    (tmp_path / "tierlog-data" / "client.properties").write_text(secured.client_properties.read_text())
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(re.sub(r'password="[^"]*"', 'password="wrong"', secured.client_properties.read_text()))
    first = secured.bootstrap.split(",")[0]
    for command in (["topics", "list"], ["metadata", "quorum"]):
        plain = subprocess.run([*CLI, *command, "--bootstrap-server", secured.bootstrap], cwd=tmp_path,
                               capture_output=True, text=True, timeout=90, check=False)
        tls = (f"tierlog: error: {first} closed the connection during the handshake: it is a TLS listener and "
               "this command spoke plaintext: pass --command-config tierlog-data/client.properties")
        assert plain.returncode == 1 and plain.stderr.splitlines() == [tls], plain.stderr
        login = _cli(*command, "--bootstrap-server", secured.bootstrap, "--command-config", str(wrong), check=False)
        assert login.returncode == 1 and len(login.stderr.splitlines()) == 1, login.stderr
        assert login.stderr.startswith("tierlog: error: 127.0.0.1:") and (
            " refused the login: Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-512: check the username and password of sasl.jaas.config in --command-config"
        ) in login.stderr, login.stderr
