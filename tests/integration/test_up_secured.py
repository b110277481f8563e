"""`tierlog up --security sasl_ssl` is authorized: a real `tierlog up` (1 controller + 2 brokers).

The StandardAuthorizer is on and ``admin`` (client-librdkafka.properties) may do everything:
create a replicated topic, produce, consume in a group. A second SCRAM user made with
``tierlog users`` has no ACLs: its produce is TOPIC_AUTHORIZATION_FAILED and its consumer
group is refused; after ``tierlog acls --add --producer`` / ``--consumer`` it writes and reads.
The CLI works with both written files (Kafka's Java form and librdkafka's); the nodes replicate
and register as ``admin`` under the authorizer; no node logs a traceback or the password.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from cluster import wait_for
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.config import parse_properties

pytestmark = pytest.mark.timeout(300)

CLI = [sys.executable, "-m", "tierlog.cli.main"]


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    data = tmp_path_factory.mktemp("up-secured") / "d"
    proc = subprocess.Popen([*CLI, "up", "--data-dir", str(data), "--listen", "127.0.0.1:0", "--controllers", "1",
                             "--brokers", "2", "--security", "sasl_ssl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    printed = {}
    while "client-librdkafka.properties" not in printed:
        line = proc.stdout.readline().strip()
        assert line, proc.stderr.read()
        key, _, value = line.partition("=")
        printed[key] = value
    librdkafka = parse_properties(Path(printed["client-librdkafka.properties"]).read_text())
    yield {"bootstrap": printed["bootstrap.servers"], "java": printed["client.properties"],
           "librdkafka": printed["client-librdkafka.properties"], "data": data,
           "admin": {"bootstrap.servers": printed["bootstrap.servers"], **librdkafka}}
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(90) == 0
    for log in data.glob("node-*/node.log"):
        text = log.read_text(errors="replace")
        assert "Traceback" not in text, text[-3000:]
        assert librdkafka["sasl.password"] not in text


def _cli(up, properties: str, *args: str, check=True) -> subprocess.CompletedProcess:
    done = subprocess.run([*CLI, *args, "--bootstrap-server", up["bootstrap"], "--command-config", up[properties]],
                          capture_output=True, text=True, timeout=90, check=False)
    assert not check or done.returncode == 0, done.stderr
    return done


def _user(up, name: str) -> dict:
    return {**up["admin"], "sasl.username": name, "sasl.password": f"{name}-secret"}


def _produce(conf: dict, topic: str, values: list[bytes]) -> list:
    """The delivery error of each value (None: delivered)."""
    producer = Producer({**conf, "acks": "all", "message.timeout.ms": 15000, "log_level": 0})
    results: list = []
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, msg: results.append(err))
    producer.flush(30)
    return results


def _consume(conf: dict, topic: str, group: str, count: int) -> tuple[list[bytes], list]:
    """(values, errors) of a group consumer reading ``topic`` from the start."""
    consumer = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", "log_level": 0})
    consumer.subscribe([topic])
    got, errors = [], []
    try:
        for _ in range(40):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error())
                if msg.error().fatal() or msg.error().code() in (KafkaError.GROUP_AUTHORIZATION_FAILED,
                                                                   KafkaError.TOPIC_AUTHORIZATION_FAILED):
                    break
                continue
            got.append(msg.value())
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got, errors


def test_admin_may_do_everything_and_the_cli_takes_both_files(up):
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(up["admin"])
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(timeout=30)
    assert _produce(up["admin"], topic, [b"a%d" % i for i in range(10)]) == [None] * 10   # replicated to 2 brokers
    got, errors = _consume(up["admin"], topic, f"g-{topic}", 10)
    assert got == [b"a%d" % i for i in range(10)], errors
    for properties in ("java", "librdkafka"):
        assert topic in _cli(up, properties, "topics", "list").stdout.split()
    quorum = _cli(up, "java", "metadata", "quorum").stdout                 # tierlog's own connection
    assert "LeaderId" in quorum


def test_a_user_without_acls_is_denied_until_acls_add(up):
    topic = f"payments-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(up["admin"])
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(timeout=30)
    _cli(up, "java", "users", "--alter", "--add-config", "SCRAM-SHA-512=[password=dana-secret]",
         "--entity-name", "dana")
    dana = _user(up, "dana")
    wait_for(lambda: _produce(dana, topic, [b"x"])[0] is not None and
             _produce(dana, topic, [b"x"])[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED,
             30, "dana's login, refused at the topic")
    _cli(up, "librdkafka", "acls", "--add", "--allow-principal", "User:dana", "--producer", "--topic", topic)
    _cli(up, "librdkafka", "acls", "--add", "--allow-principal", "User:dana", "--consumer", "--topic", topic,
         "--group", f"dana-{topic}")
    listed = _cli(up, "java", "acls", "--list", "--topic", topic).stdout
    assert "User:dana" in listed and "WRITE" in listed.upper() and "READ" in listed.upper(), listed
    wait_for(lambda: _produce(dana, topic, [b"d0"]) == [None], 30, "dana's produce once the ACLs reach the brokers")
    got, errors = _consume(dana, topic, f"dana-{topic}", 1)
    assert got[:1] == [b"d0"], errors
    _, refused = _consume(dana, topic, f"other-{topic}", 1)                 # no READ on this group
    assert any(e.code() == KafkaError.GROUP_AUTHORIZATION_FAILED for e in refused), refused
