"""ACLs end to end (KIP-801 StandardAuthorizer) on one secured 1+2 cluster, with real clients.

Every node runs ``authorizer.class.name=...StandardAuthorizer`` on SASL_PLAINTEXT listeners
with PLAIN users from JAAS (and a mutual-TLS listener whose principal is the client
certificate's CN through ``ssl.principal.mapping.rules``); the nodes log in as ``admin``,
the one super user. alice may
write and read ``t1`` only and read the group ``g1``: her produce to ``t2`` is
TOPIC_AUTHORIZATION_FAILED (on the wire and in confluent-kafka), her Metadata does not
list ``t2``, her consumer group needs READ on the group; confluent-kafka's AdminClient
creates, describes and deletes ACLs; the CLI adds, lists and removes them; the ACLs
survive a restart of every node, and a broker that joins later enforces them.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from cluster import wait_for
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import errors as kafka_errors
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType
from nodeproc import (
    NodeProcess,
    free_port,
    one_controller_and_brokers,
    start_all,
    stop_all,
)

from tierlog.net.blocking import BlockingConnection
from tierlog.net.dev_certs import DevCa
from tierlog.net.security import SaslCredentials, Security, SecurityProtocol
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records.builder import build_batch
from tierlog.records.record import Record

pytestmark = pytest.mark.timeout(300)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
ANY = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                       AclPermissionType.ANY)


def _common(cport: int) -> dict:
    return {"cluster.id": "tierlog-acl-cluster", "controller.quorum.voters": f"1@localhost:{cport}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "BROKER",
            "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,BROKER:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": JAAS,
            "listener.name.broker.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin",
            "offsets.topic.replication.factor": "2", "offsets.topic.num.partitions": "2",
            "broker.heartbeat.interval.ms": "300"}


def _with_tls_listener(node: NodeProcess, certs: dict) -> NodeProcess:
    """A broker that also serves a mutual-TLS CLIENT listener whose principal is the
    certificate's CN (``ssl.principal.mapping.rules``)."""
    node.tls_port = free_port()
    node.props.update({
        "listeners": f"{node.props['listeners']},CLIENT://127.0.0.1:{node.tls_port}",
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,BROKER:SASL_PLAINTEXT,CLIENT:SSL",
        "listener.name.client.ssl.client.auth": "required",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["node"].keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs["ca"]),
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+).*$/$1/L,DEFAULT"})
    return node


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("acls")
    ca = DevCa.create(root / "tls")
    certs = {"ca": ca.cert_path, "node": ca.issue("node", ["localhost", "127.0.0.1"]),
             "alice": ca.issue("Alice", ["alice"])}
    cport = free_port()
    nodes = one_controller_and_brokers(root, cport, [free_port(), free_port()], _common(cport))
    nodes[1:] = [_with_tls_listener(n, certs) for n in nodes[1:]]
    start_all(nodes)
    cluster = type("Cluster", (), {})()
    cluster.nodes, cluster.root, cluster.cport, cluster.certs = nodes, root, cport, certs
    cluster.bootstrap = ",".join(n.bootstrap for n in nodes[1:])
    cluster.tls_bootstrap = ",".join(f"127.0.0.1:{n.tls_port}" for n in nodes[1:])
    admin = AdminClient(_conf(cluster, "admin"))
    for f in admin.create_topics([NewTopic("t1", 2, 2), NewTopic("t2", 1, 2)]).values():
        f.result(timeout=60)
    yield cluster
    stop_all(cluster.nodes[1:])
    stop_all(cluster.nodes[:1])
    for n in cluster.nodes:
        log = n.log_path.read_text(errors="replace")
        assert "Traceback" not in log, n.log_tail(60)


def _conf(cluster, user: str, bootstrap: str | None = None) -> dict:
    return {"bootstrap.servers": bootstrap or cluster.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret", "log_level": 0}


def _wire(node: NodeProcess, user: str) -> BlockingConnection:
    host, port = node.bootstrap.split(":")
    security = Security(SecurityProtocol.SASL_PLAINTEXT, sasl=SaslCredentials("PLAIN", user, f"{user}-secret"))
    return BlockingConnection(host, int(port), client_id="acl-test", timeout_s=10, security=security)


def _grant(admin: AdminClient, *bindings: AclBinding) -> None:
    for f in admin.create_acls(list(bindings)).values():
        f.result(timeout=30)


def _allow(name: str, op: AclOperation, user="User:alice", rtype=ResourceType.TOPIC,
           pattern=ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, user, "*", op, AclPermissionType.ALLOW)


ALICE_ACLS = (_allow("t1", AclOperation.WRITE), _allow("t1", AclOperation.READ),
              _allow("g1", AclOperation.READ, rtype=ResourceType.GROUP))


@pytest.fixture(scope="module")
def granted(cluster):
    admin = AdminClient(_conf(cluster, "admin"))
    _grant(admin, *ALICE_ACLS)
    return admin


def _visible_topics(conf: dict) -> set[str]:
    return set(AdminClient(conf).list_topics(timeout=20).topics)


def _topics_or_none(conf: dict) -> set[str]:
    try:
        return _visible_topics(conf)
    except KafkaException:
        return set()


def test_admin_client_creates_and_describes_acls(granted):
    found = granted.describe_acls(ANY).result(timeout=30)
    assert set(ALICE_ACLS) <= set(found)
    only_t1 = AclBindingFilter(ResourceType.TOPIC, "t1", ResourcePatternType.MATCH, None, None, AclOperation.ANY,
                               AclPermissionType.ANY)
    assert {b.operation for b in granted.describe_acls(only_t1).result(timeout=30)} == {AclOperation.WRITE,
                                                                                        AclOperation.READ}


def test_alice_writes_t1_and_not_t2(cluster, granted):
    producer = Producer({**_conf(cluster, "alice"), "message.timeout.ms": 20000})
    results = {}
    for topic in ("t1", "t2"):
        producer.produce(topic, b"v", on_delivery=lambda err, msg, t=topic: results.setdefault(t, err))
    producer.flush(30)
    assert results["t1"] is None
    assert results["t2"] is not None and results["t2"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    batch = build_batch([Record(0, int(time.time() * 1000), None, b"raw")])
    conn = _wire(cluster.nodes[1], "alice")
    try:
        answer = conn.request(ApiKey.PRODUCE, 9, {"TransactionalId": None, "Acks": 1, "TimeoutMs": 5000, "TopicData": [
            {"Name": "t2", "PartitionData": [{"Index": 0, "Records": batch}]}]})
    finally:
        conn.close()
    assert answer["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_alices_certificate_is_user_alice(cluster, granted):
    """On the mutual-TLS listener the certificate CN=Alice maps to User:alice (RULE ... /L): the
    same ACLs apply."""
    conf = {"bootstrap.servers": cluster.tls_bootstrap, "security.protocol": "SSL",
            "ssl.ca.location": str(cluster.certs["ca"]), "log_level": 0,
            "ssl.certificate.location": str(cluster.certs["alice"].cert),
            "ssl.key.location": str(cluster.certs["alice"].key)}
    seen = _visible_topics(conf)
    assert "t1" in seen and "t2" not in seen
    producer = Producer({**conf, "message.timeout.ms": 20000})
    results = {}
    for topic in ("t1", "t2"):
        producer.produce(topic, b"tls", on_delivery=lambda err, msg, t=topic: results.setdefault(t, err))
    producer.flush(30)
    assert results["t1"] is None
    assert results["t2"] is not None and results["t2"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_alice_metadata_hides_t2(cluster, granted):
    assert {"t1", "t2"} <= _visible_topics(_conf(cluster, "admin"))
    seen = _visible_topics(_conf(cluster, "alice"))
    assert "t1" in seen and "t2" not in seen
    conn = _wire(cluster.nodes[1], "alice")
    try:
        answer = conn.request(ApiKey.METADATA, 10, {"Topics": [{"Name": "t2", "TopicId": bytes(16)}],
                                                    "AllowAutoTopicCreation": False,
                                                    "IncludeClusterAuthorizedOperations": True,
                                                    "IncludeTopicAuthorizedOperations": True})
        mine = conn.request(ApiKey.METADATA, 10, {"Topics": [{"Name": "t1", "TopicId": bytes(16)}],
                                                  "AllowAutoTopicCreation": False,
                                                  "IncludeClusterAuthorizedOperations": True,
                                                  "IncludeTopicAuthorizedOperations": True})
        partitions = conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"Topics": [], "ResponsePartitionLimit": 2000,
                                                                       "Cursor": None})
    finally:
        conn.close()
    assert answer["Topics"][0]["ErrorCode"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert answer["ClusterAuthorizedOperations"] == 0                  # alice has no cluster ACL
    ops = mine["Topics"][0]["TopicAuthorizedOperations"]
    assert ops == (1 << AclOperation.READ.value) | (1 << AclOperation.WRITE.value) | (1 << AclOperation.DESCRIBE.value)
    described = {t["Name"]: t["TopicAuthorizedOperations"] for t in partitions["Topics"]}
    assert "t2" not in described and described["t1"] == ops


def _consume_error_or_message(conf: dict, group: str):
    consumer = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000})
    consumer.subscribe(["t1"])
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                return msg.error()
            return msg
        return None
    finally:
        consumer.close()


def test_consumer_group_needs_read_on_the_group(cluster, granted):
    denied = _consume_error_or_message(_conf(cluster, "alice"), "g-other")
    assert isinstance(denied, KafkaError) and denied.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, denied
    got = _consume_error_or_message(_conf(cluster, "alice"), "g1")
    assert got is not None and not isinstance(got, KafkaError) and got.topic() == "t1", got


def test_alice_may_not_manage_acls(cluster, granted):
    conn = _wire(cluster.nodes[1], "alice")
    try:
        answer = conn.request(ApiKey.DESCRIBE_ACLS, 3, {
            "ResourceTypeFilter": 1, "ResourceNameFilter": None, "PatternTypeFilter": 1, "PrincipalFilter": None,
            "HostFilter": None, "Operation": 1, "PermissionType": 1})
    finally:
        conn.close()
    assert answer["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and answer["Resources"] == []
    # kafka-python surfaces DescribeAcls' error (librdkafka drops it and answers an empty list)
    alice_kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, security_protocol="SASL_PLAINTEXT",
                                sasl_mechanism="PLAIN", sasl_plain_username="alice",
                                sasl_plain_password="alice-secret")
    try:
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            alice_kp.describe_acls(ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY,
                                             ResourcePatternFilter(KpResourceType.ANY, None,
                                                                   ACLResourcePatternType.ANY)))
    finally:
        alice_kp.close()
    # nor straight at the controller: its listener serves the nodes (CLUSTER_ACTION) only
    conn = _wire(cluster.nodes[0], "alice")
    try:
        direct = conn.request(ApiKey.CREATE_ACLS, 3, {"Creations": [
            {"ResourceType": 2, "ResourceName": "t2", "ResourcePatternType": 3, "Principal": "User:alice",
             "Host": "*", "Operation": 4, "PermissionType": 3}]})
    finally:
        conn.close()
    assert direct["Results"][0]["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    alice = AdminClient(_conf(cluster, "alice"))
    future = alice.create_acls([_allow("t2", AclOperation.WRITE)])
    with pytest.raises(KafkaException) as refused:
        next(iter(future.values())).result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_transactions_and_credentials_need_their_acls(cluster, granted):
    """Transactional ids need WRITE (confluent-kafka's init_transactions fails), the brokers'
    own transaction APIs CLUSTER_ACTION, SCRAM credentials ALTER / DESCRIBE on the cluster."""
    producer = Producer({**_conf(cluster, "alice"), "transactional.id": "alices-txn"})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(20)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    conn = _wire(cluster.nodes[1], "alice")
    try:
        end = conn.request(ApiKey.END_TXN, 4, {"TransactionalId": "alices-txn", "ProducerId": 1,
                                                "ProducerEpoch": 0, "Committed": True})
        verify = conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, 5, {"Transactions": [
            {"TransactionalId": "x", "ProducerId": 1, "ProducerEpoch": 0, "VerifyOnly": True,
             "Topics": [{"Name": "t1", "Partitions": [0]}]}]})
        markers = conn.request(ApiKey.WRITE_TXN_MARKERS, 1, {"Markers": [
            {"ProducerId": 1, "ProducerEpoch": 0, "TransactionResult": True, "CoordinatorEpoch": 0,
             "Topics": [{"Name": "t1", "PartitionIndexes": [0]}]}]})
        alter = conn.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"Deletions": [], "Upsertions": [
            {"Name": "admin", "Mechanism": 2, "Iterations": 8192, "Salt": b"s" * 16, "SaltedPassword": b"p" * 64}]})
        describe = conn.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"Users": None})
    finally:
        conn.close()
    assert end["ErrorCode"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert verify["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert markers["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert [(r["User"], r["ErrorCode"]) for r in alter["Results"]] == [("admin", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
    assert describe["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _cli(cluster, user: str, *args: str) -> subprocess.CompletedProcess:
    props = cluster.root / f"{user}.properties"
    props.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username={user}\n"
                     f"sasl.password={user}-secret\n")
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", "acls", *args, "--bootstrap-server",
                           cluster.bootstrap, "--command-config", str(props)],
                          capture_output=True, text=True, timeout=90, check=False)


def test_cli_adds_lists_and_removes(cluster, granted):
    added = _cli(cluster, "admin", "--add", "--allow-principal", "User:bob", "--consumer", "--topic", "bob-",
                 "--group", "bob-", "--resource-pattern-type", "prefixed")
    assert added.returncode == 0, added.stderr
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=bob-, patternType=PREFIXED)`" \
        in added.stdout
    listed = _cli(cluster, "admin", "--list", "--topic", "bob-", "--resource-pattern-type", "prefixed")
    assert listed.returncode == 0, listed.stderr
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout
    assert "operation=DESCRIBE" in listed.stdout
    refused = _cli(cluster, "alice", "--list")
    assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr, refused.stderr
    removed = _cli(cluster, "admin", "--remove", "--force", "--topic", "bob-", "--group", "bob-",
                   "--resource-pattern-type", "prefixed")
    assert removed.returncode == 0, removed.stderr
    assert "principal=User:bob" in removed.stdout
    left = granted.describe_acls(ANY).result(timeout=30)
    assert not [b for b in left if b.principal == "User:bob"]


def test_admin_client_deletes_acls(cluster, granted):
    _grant(granted, _allow("tmp", AclOperation.ALTER, user="User:bob"))
    doomed = AclBindingFilter(ResourceType.TOPIC, "tmp", ResourcePatternType.LITERAL, "User:bob", None,
                              AclOperation.ANY, AclPermissionType.ANY)
    deleted = granted.delete_acls([doomed])[doomed].result(timeout=30)
    assert [b.name for b in deleted] == ["tmp"]
    assert granted.describe_acls(doomed).result(timeout=30) == []


def test_acls_survive_restarts_and_reach_a_new_broker(cluster, granted):
    for n in reversed(cluster.nodes):
        n.stop()
    for n in cluster.nodes:
        n.start()
    wait_for(lambda: "t1" in _topics_or_none(_conf(cluster, "alice")), 60, "alice's view after the restart")
    assert "t2" not in _visible_topics(_conf(cluster, "alice"))
    late = NodeProcess(cluster.root / "b4", 4, free_port(),
                       {**_common(cluster.cport), "process.roles": "broker"})
    late.props["listeners"] = f"BROKER://127.0.0.1:{late.port}"
    cluster.nodes.append(late.start())
    conn = _wire(late, "alice")
    try:
        answer = wait_for(lambda: _metadata_with_t1(conn), 60, "the late broker's image")
        produce = conn.request(ApiKey.PRODUCE, 9, {"TransactionalId": None, "Acks": 1, "TimeoutMs": 5000,
                                                   "TopicData": [{"Name": "t2", "PartitionData": [
                                                       {"Index": 0, "Records": build_batch(
                                                           [Record(0, 0, None, b"x")])}]}]})
    finally:
        conn.close()
    assert "t2" not in {t["Name"] for t in answer["Topics"]}
    assert produce["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _metadata_with_t1(conn: BlockingConnection):
    answer = conn.request(ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False,
                                                "IncludeTopicAuthorizedOperations": False})
    return answer if "t1" in {t["Name"] for t in answer["Topics"]} else None
