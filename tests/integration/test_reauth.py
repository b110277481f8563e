"""KIP-368 re-authentication end to end on a SASL_SSL cluster (1 controller + 2 brokers).

Sessions last 2.5 s on the broker listener for SCRAM-SHA-512 (the listener-and-mechanism
form) and 2 s on the controller listener (the listener form), so within seconds every
connection must re-authenticate: the brokers' own (replica fetchers, controller channels,
tierlog's ``PeerConnection``) and confluent-kafka's (librdkafka re-authenticates when
SessionLifetimeMs is set): a producer and a consumer running over several lifetimes lose
nothing and no node ever closes an expired session. Over a raw connection: the lifetime is
announced, a session re-authenticated in-band lives on, a change of principal is refused, and
an expired session's next request closes the connection. tierlog's ``BlockingConnection``
re-authenticates by itself.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace

import pytest
from cluster import log_end_offset, wait_for
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from secured import check_logs, start_secured

from tierlog.net import sasl_client
from tierlog.net.blocking import BlockingConnection
from tierlog.net.client_security import client_security
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.net.security import SaslCredentials
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(180)

LIFETIME_MS = 2500
METADATA = (ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_secured(tmp_path_factory.mktemp("reauth"), overrides={
        "listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms": str(LIFETIME_MS),
        "listener.name.controller.connections.max.reauth.ms": "2000",
        "offsets.topic.replication.factor": "2", "offsets.topic.num.partitions": "1"})
    yield cluster
    check_logs(cluster, "alice-secret")


def _stream(cluster, topic: str, seconds: float) -> tuple[list, list]:
    """A producer (acks=all) and a consumer side by side for ``seconds``: (delivered, consumed)."""
    errors, delivered, consumed = [], [], []
    conf = {**cluster.admin, "error_cb": errors.append}
    producer = Producer({**conf, "acks": "all", "linger.ms": 5})
    consumer = Consumer({**conf, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, -2)])
    stop = threading.Event()

    def consume():
        while not stop.is_set() or len(consumed) < len(delivered):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                consumed.append(msg.value())
            if stop.is_set() and len(consumed) >= len(delivered):
                break
    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    deadline, i = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        producer.produce(topic, f"r{i}".encode(), on_delivery=lambda err, msg: err or delivered.append(msg.value()))
        producer.poll(0.02)
        i += 1
    assert producer.flush(30) == 0
    stop.set()
    reader.join(30)
    consumer.close()
    assert not errors, errors[:3]
    return delivered, consumed


def test_clients_and_brokers_re_authenticate_and_lose_nothing(cluster):
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(cluster.admin)
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(timeout=30)
    delivered, consumed = _stream(cluster, topic, 3 * LIFETIME_MS / 1000)
    assert len(delivered) > 50 and consumed == delivered
    for broker in cluster.brokers:       # replicated over connections that re-authenticated too
        wait_for(lambda b=broker: log_end_offset(b.data_dir / f"{topic}-0") == len(delivered), 30,
                 f"node {broker.node_id}'s replica")
    expired = [n.node_id for n in cluster.nodes if "session expired" in n.log_path.read_text(errors="replace")]
    assert not expired, f"nodes {expired} closed an expired session: a client did not re-authenticate"


def _ssl_only(cluster):
    return client_security({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                            "ssl.truststore.location": str(cluster.ca)})


def _login(conn: BlockingConnection, creds: SaslCredentials, version: int = 1) -> dict:
    """SaslHandshake + SaslAuthenticate by hand: the last SaslAuthenticate answer."""
    assert conn.request(*sasl_client.handshake_request(creds))["ErrorCode"] == ErrorCode.NONE
    login = sasl_client.ClientExchange(creds)
    token = login.first()
    while True:
        api_key, _, body = sasl_client.authenticate_request(token)
        answer = conn.request(api_key, version, body)
        if answer["ErrorCode"] != ErrorCode.NONE:
            return answer
        token = login.next(answer)
        if token is None:
            return answer


def test_sessions_expire_unless_re_authenticated_with_the_same_principal(cluster):
    admin = AdminClient(cluster.admin)
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion("alice", info, b"alice-secret")])[
        "alice"].result(timeout=30)
    me = SaslCredentials("SCRAM-SHA-512", "admin", cluster.admin_password)
    host, port = cluster.brokers[0].bootstrap.split(":")
    open_ = [BlockingConnection(host, int(port), client_id="raw", timeout_s=10, security=_ssl_only(cluster))
             for _ in range(3)]
    expiring, renewed, switching = open_
    for conn in open_:
        assert _login(conn, me)["SessionLifetimeMs"] == LIFETIME_MS
        assert conn.request(*METADATA)["Brokers"]
    started = time.monotonic()
    time.sleep(1.2)                            # the renewed session ends 1.2 s after the others
    again = _login(renewed, me, version=2)
    assert (again["ErrorCode"], again["SessionLifetimeMs"]) == (ErrorCode.NONE, LIFETIME_MS)
    changed = _login(switching, SaslCredentials("SCRAM-SHA-512", "alice", "alice-secret"))
    assert changed["ErrorCode"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert changed["ErrorMessage"] == "Cannot change principals during re-authentication from User.admin: User.alice"
    time.sleep(max(0.0, started + LIFETIME_MS / 1000 + 0.1 - time.monotonic()))   # past the first expiry
    assert renewed.request(*METADATA)["Brokers"]
    with pytest.raises(PeerUnavailable, match="closed the connection"):
        expiring.request(*METADATA)
    for conn in open_:
        conn.close()


def test_tierlog_connections_re_authenticate_by_themselves(cluster):
    host, port = cluster.brokers[1].bootstrap.split(":")
    security = replace(_ssl_only(cluster), sasl=SaslCredentials("SCRAM-SHA-512", "admin", cluster.admin_password))
    conn = BlockingConnection(host, int(port), client_id="own", timeout_s=10, security=security)
    try:
        deadline = time.monotonic() + 2.2 * LIFETIME_MS / 1000
        while time.monotonic() < deadline:
            assert conn.request(*METADATA)["Brokers"]
            time.sleep(0.4)
    finally:
        conn.close()
