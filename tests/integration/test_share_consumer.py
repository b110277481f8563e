"""Share groups (KIP-932) end to end with confluent-kafka's ShareConsumer against a 3-broker cluster:
members splitting a topic, accept / release / reject, acquisition locks expiring when a member stops
polling or is killed -9, a poison record reaching the dead-letter topic (KIP-1191), and a partition
leader and the share coordinator killed -9 mid-stream. Only that last test has a cluster of its own: the others
share one (``shared_cluster``), each with a topic of its own."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest
from clients import create_topic, produce_all
from cluster import FAST_REPLICATION, request, wait_for
from confluent_kafka import AcknowledgeType, Consumer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from prometheus_client.parser import text_string_to_metric_families
from test_consumer_group_faults import coordinator_of

from tierlog.protocol.api import ApiKey

LOCK_MS = 2000
SHARE_PROPS = {**FAST_REPLICATION, "offsets.topic.num.partitions": "3",
               "share.coordinator.state.topic.num.partitions": "3",
               "group.share.heartbeat.interval.ms": "500", "group.share.min.heartbeat.interval.ms": "500",
               "group.share.record.lock.duration.ms": str(LOCK_MS), "group.share.min.record.lock.duration.ms": "1000",
               "metrics.prometheus.listener": "127.0.0.1:0"}
pytestmark = [pytest.mark.integration, pytest.mark.cluster(controllers=1, brokers=3, props=SHARE_PROPS)]
TOPIC, PARTITIONS = "work", 6


def topic_of(group: str) -> str:
    """The topic of ``group``'s test: the tests on ``shared_cluster`` each have their own."""
    return f"{TOPIC}-{group}"


def share_consumer(bootstrap: str, group: str, topic: str = TOPIC, **conf) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **conf})
    c.subscribe([topic])
    return c


def start_at_zero(cluster, group: str, topic: str, partitions: int) -> None:
    """Initialize ``group``'s share-partitions of the empty ``topic`` (a share group starts at the
    high watermark: records produced before a member's first fetch would not be delivered) by one
    ShareFetch per partition leader, whose session is closed again."""
    meta = cluster.metadata(cluster.brokers[0], [topic])["Topics"][0]
    by_leader: dict[int, list[int]] = {}
    for p in meta["Partitions"]:
        by_leader.setdefault(p["LeaderId"], []).append(p["PartitionIndex"])
    for leader, indexes in by_leader.items():
        port = cluster.broker(leader).port
        topics = [{"TopicId": meta["TopicId"], "Partitions": [{"PartitionIndex": i, "AcknowledgementBatches": []}
                                                             for i in indexes]}]

        def loaded(port=port, topics=topics):
            body = {"GroupId": group, "MemberId": "initializer", "ShareSessionEpoch": 0, "MaxWaitMs": 200,
                    "MinBytes": 1, "MaxBytes": 1 << 20, "MaxRecords": 1, "BatchSize": 1, "Topics": topics,
                    "ForgottenTopicsData": []}
            resp = request("127.0.0.1", port, ApiKey.SHARE_FETCH, body, version=1, timeout_s=10)
            return resp["ErrorCode"] == 0 and all(p["ErrorCode"] == 0 for t in resp["Responses"]
                                                  for p in t["Partitions"])
        wait_for(loaded, 60, f"share-partitions of {group} on node {leader}")
        close = {"GroupId": group, "MemberId": "initializer", "ShareSessionEpoch": -1, "MaxWaitMs": 0,
                 "MinBytes": 1, "MaxBytes": 1 << 20, "MaxRecords": 1, "BatchSize": 1, "Topics": [],
                 "ForgottenTopicsData": []}
        assert request("127.0.0.1", port, ApiKey.SHARE_FETCH, close, version=1, timeout_s=10)["ErrorCode"] == 0


def metric(cluster, name: str, group: str) -> float:
    """``name``{group} summed over the live brokers' /metrics."""
    total = 0.0
    for b in cluster.brokers:
        if b.alive():
            with urllib.request.urlopen(f"http://{b.announced['metrics']}/metrics", timeout=5) as resp:
                body = resp.read().decode()
            total += sum(s.value for f in text_string_to_metric_families(body) for s in f.samples
                         if s.name == name and s.labels.get("group") == group)
    return total


def records(n: int, partitions: int = PARTITIONS) -> list:
    return [(i % partitions, None, f"r{i}".encode(), None, None) for i in range(n)]


def wait_assigned(cluster, members, group: str) -> None:
    """Poll ``members`` until the group's coordinator describes each of them holding the current
    assignment (its member epoch is the assignment epoch) with some partitions, then two rounds
    more, so that a ShareFetch a member sent under an older, wider assignment has come back
    (librdkafka waits fetch.wait.max.ms, 500 ms, on an empty one) before records are produced."""
    def settled():
        port = cluster.broker(coordinator_of(cluster, group)).port
        desc = request("127.0.0.1", port, ApiKey.SHARE_GROUP_DESCRIBE,
                       {"GroupIds": [group], "IncludeAuthorizedOperations": False}, 1)["Groups"][0]
        held = [m for m in desc["Members"] if m["MemberEpoch"] == desc["AssignmentEpoch"]
                and any(t["Partitions"] for t in m["Assignment"]["TopicPartitions"])]
        return desc["ErrorCode"] == 0 and len(held) == len(members)
    poll_all(members, settled, f"every member of {group} assigned")
    for _ in range(2):
        for c in members:
            assert not c.poll(0.3), "records before any was produced"


def poll_all(consumers, want, what: str, timeout_s: float = 120, on_message=None) -> None:
    """Poll each consumer in turn (0.2 s each) until ``want()``; ``on_message(consumer_index, msg)``."""
    deadline = time.monotonic() + timeout_s
    while not want():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        for i, c in enumerate(consumers):
            for m in c.poll(0.2):
                assert m.error() is None, m.error()
                if on_message:
                    on_message(i, m)


def test_members_split_a_topic_each_record_once(shared_cluster):
    boot, topic = shared_cluster.bootstrap, topic_of("split")
    create_topic(boot, topic, PARTITIONS)
    start_at_zero(shared_cluster, "split", topic, PARTITIONS)
    members = [share_consumer(boot, "split", topic) for _ in range(3)]
    wait_assigned(shared_cluster, members, "split")
    seen: dict[bytes, list[int]] = {}
    produce_all(boot, topic, records(300))
    poll_all(members, lambda: len(seen) == 300, "300 records",
             on_message=lambda i, m: seen.setdefault(m.value(), []).append(i))
    for c in members:
        c.close()
    assert all(len(who) == 1 for who in seen.values()), "a record was delivered twice"
    assert len({who[0] for who in seen.values()}) >= 2, "one member took everything"


def test_accept_release_reject(shared_cluster):
    boot, topic = shared_cluster.bootstrap, topic_of("acks")
    create_topic(boot, topic, 1)
    start_at_zero(shared_cluster, "acks", topic, 1)
    c = share_consumer(boot, "acks", topic, **{"share.acknowledgement.mode": "explicit"})
    produce_all(boot, topic, records(30, 1))
    deliveries: dict[int, list[int]] = {}

    def handle(_i, m):
        deliveries.setdefault(m.offset(), []).append(m.delivery_count())
        first = m.delivery_count() == 1
        kind = m.offset() % 3
        ack = AcknowledgeType.ACCEPT if kind == 2 or not first else \
            AcknowledgeType.RELEASE if kind == 0 else AcknowledgeType.REJECT
        c.acknowledge(m, ack)

    def done():
        c.commit_sync()
        return all(len(deliveries.get(o, ())) == (2 if o % 3 == 0 else 1) for o in range(30))
    poll_all([c], done, "every record settled", on_message=handle)
    c.close()
    assert deliveries == {o: [1, 2] if o % 3 == 0 else [1] for o in range(30)}


def test_locks_expire_when_a_member_stops_polling(shared_cluster):
    cluster = shared_cluster
    boot, topic = cluster.bootstrap, topic_of("stall")
    create_topic(boot, topic, 1)
    start_at_zero(cluster, "stall", topic, 1)
    produce_all(boot, topic, records(20, 1))
    stalled = share_consumer(boot, "stall", topic, **{"share.acknowledgement.mode": "explicit"})
    held: list[int] = []
    poll_all([stalled], lambda: held, "the first member's records", on_message=lambda _i, m: held.append(m.offset()))
    assert metric(cluster, "kafka_server_sharepartitionmetrics_inflightmessagecount", "stall") >= len(held)
    other = share_consumer(boot, "stall", topic)
    again: dict[int, int] = {}
    poll_all([other], lambda: set(held) <= set(again), "the stalled member's records redelivered",
             on_message=lambda _i, m: again.__setitem__(m.offset(), m.delivery_count()))
    assert all(again[o] == 2 for o in held), again
    assert metric(cluster, "kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total", "stall") >= len(held)
    assert metric(cluster, "tierlog_share_redeliveries_total", "stall") >= len(held)
    other.close()
    stalled.close()


_MEMBER = textwrap.dedent("""
    import sys
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([sys.argv[3]])
    while True:
        for m in c.poll(0.5):
            if m.error() is None:
                print(m.offset(), flush=True)
""")


def test_records_of_a_member_killed_9_are_redelivered(shared_cluster, tmp_path):
    boot, topic = shared_cluster.bootstrap, topic_of("killed")
    create_topic(boot, topic, 1)
    start_at_zero(shared_cluster, "killed", topic, 1)
    produce_all(boot, topic, records(20, 1))
    script = tmp_path / "member.py"
    script.write_text(_MEMBER)
    proc = subprocess.Popen([sys.executable, str(script), boot, "killed", topic], stdout=subprocess.PIPE, text=True)
    try:
        first = int(proc.stdout.readline())
    finally:
        proc.kill()         # SIGKILL: it acknowledged nothing
        proc.wait()
    survivor = share_consumer(boot, "killed", topic)
    again: dict[int, int] = {}
    poll_all([survivor], lambda: len(again) == 20, "all 20 records",
             on_message=lambda _i, m: again.__setitem__(m.offset(), m.delivery_count()))
    survivor.close()
    assert again[first] == 2, again


def test_leader_and_share_coordinator_killed_9_mid_stream(cluster):
    boot = cluster.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(20)
    start_at_zero(cluster, "faults", TOPIC, 3)
    produce_all(boot, TOPIC, records(600, 3))
    c = share_consumer(boot, "faults", **{"share.acknowledgement.mode": "explicit"})
    events: list[tuple[str, int, int]] = []        # ("delivered" | "confirmed", partition, offset), in order

    def on_commit(offsets, exc):
        if exc is None:
            events.extend(("confirmed", tp.partition, o) for tp, offs in offsets.items() for o in sorted(offs))
    c.set_acknowledgement_commit_callback(on_commit)

    def accept(_i, m):
        events.append(("delivered", m.partition(), m.offset()))
        c.acknowledge(m, AcknowledgeType.ACCEPT)

    def confirmed() -> set[tuple[int, int]]:
        return {(p, o) for kind, p, o in events if kind == "confirmed"}

    def settled(count: int):
        def enough():
            c.commit_sync()
            return len(confirmed()) >= count
        return enough
    poll_all([c], settled(100), "the first 100 accepted", on_message=accept)
    leader = cluster.partitions(cluster.brokers[0], TOPIC)[0]["LeaderId"]
    coordinators = share_coordinator_nodes(cluster)
    victim = cluster.broker(leader if leader in coordinators or not coordinators else sorted(coordinators)[0])
    victim.kill9()      # partition 0's leader, and a share coordinator (the same broker when one is both)
    if leader != victim.node_id:
        cluster.broker(leader).kill9()
    poll_all([c], settled(600), "every record accepted after the kills", timeout_s=180, on_message=accept)
    c.close()
    assert confirmed() == {(p, o) for p in range(3) for o in range(200)}, "an unacknowledged record was lost"
    done: set[tuple[int, int]] = set()
    for kind, p, o in events:
        assert not (kind == "delivered" and (p, o) in done), f"{p}:{o} delivered again after its accept was confirmed"
        if kind == "confirmed":
            done.add((p, o))


def share_coordinator_nodes(cluster) -> set[int]:
    """The brokers leading a partition of __share_group_state."""
    meta = cluster.metadata(cluster.brokers[0], ["__share_group_state"])["Topics"][0]
    return {p["LeaderId"] for p in meta["Partitions"]} if meta["ErrorCode"] == 0 else set()


def test_a_poison_record_reaches_the_dead_letter_topic(shared_cluster):
    """KIP-1191's shape: after share.delivery.count.limit deliveries a record is archived and copied
    to the group's errors.deadletterqueue.topic.name with where it came from and why; a rejected
    record too.  The group starts at the earliest offset (share.auto.offset.reset)."""
    boot, topic = shared_cluster.bootstrap, topic_of("poison")
    create_topic(boot, topic, 2)
    create_topic(boot, "dead", 1)
    produce_all(boot, topic, [(1, b"k", b"poison", [("origin", b"test")], None),
                              (0, None, b"bad", None, None), (0, None, b"good", None, None)])
    alter_group(AdminClient({"bootstrap.servers": boot}), "poison",
                {"share.delivery.count.limit": "2", "errors.deadletterqueue.topic.name": "dead",
                 "share.auto.offset.reset": "earliest"})
    c = share_consumer(boot, "poison", topic, **{"share.acknowledgement.mode": "explicit"})
    handled: list[tuple[bytes, int]] = []

    def handle(_i, m):
        handled.append((m.value(), m.delivery_count()))
        ack = {b"poison": AcknowledgeType.RELEASE, b"bad": AcknowledgeType.REJECT}.get(m.value(), AcknowledgeType.ACCEPT)
        c.acknowledge(m, ack)
    letters: list = []
    reader = Consumer({"bootstrap.servers": boot, "group.id": "dlq-reader", "auto.offset.reset": "earliest"})
    reader.subscribe(["dead"])

    def two_letters():
        c.commit_sync()
        letters.extend(m for m in reader.consume(10, 0.2) if m.error() is None)
        return len(letters) >= 2
    poll_all([c], two_letters, "two dead letters", on_message=handle)
    c.close()
    reader.close()
    assert sorted(handled) == [(b"bad", 1), (b"good", 1), (b"poison", 1), (b"poison", 2)]
    by_value = {m.value(): (m.key(), dict(m.headers())) for m in letters}
    key, headers = by_value[b"poison"]
    assert key == b"k" and headers["origin"] == b"test"
    assert {k: v for k, v in headers.items() if k.startswith("__dlq.")} == {
        "__dlq.errors.group": b"poison", "__dlq.errors.topic": topic.encode(), "__dlq.errors.partition": b"1",
        "__dlq.errors.offset": b"0", "__dlq.errors.delivery.count": b"2",
        "__dlq.errors.reason": b"delivery count limit"}
    assert by_value[b"bad"][1]["__dlq.errors.reason"] == b"rejected"
    assert set(by_value) == {b"poison", b"bad"}
    assert metric(shared_cluster, "tierlog_share_dead_letters_total", "poison") == 2


def alter_group(admin: AdminClient, group: str, values: dict[str, str]) -> None:
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in values.items()])
    admin.incremental_alter_configs([res])[res].result(timeout=30)


def tierlog_cli(boot: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args, "--bootstrap-server", boot],
                          capture_output=True, timeout=120)


def test_cli_consume_in_a_share_group_acknowledges_what_it_prints(shared_cluster):
    boot, topic = shared_cluster.bootstrap, topic_of("cli")
    create_topic(boot, topic, 2)
    alter_group(AdminClient({"bootstrap.servers": boot}), "cli", {"share.auto.offset.reset": "earliest"})
    produce_all(boot, topic, [(i % 2, None, f"job-{i}".encode(), None, None) for i in range(10)])
    first = tierlog_cli(boot, "consume", topic, "--share-group", "cli", "--max-messages", "4")
    assert first.returncode == 0, first.stderr
    rest = tierlog_cli(boot, "consume", topic, "--share-group", "cli", "--timeout-ms", "3000")
    assert rest.returncode == 0, rest.stderr
    printed = first.stdout.decode().split() + rest.stdout.decode().split()
    assert len(first.stdout.decode().split()) == 4
    assert sorted(printed) == sorted(f"job-{i}" for i in range(10))      # each once: what was printed was accepted
    refused = tierlog_cli(boot, "consume", topic, "--share-group", "cli", "--partition", "1")
    assert refused.returncode != 0 and b"--share-group" in refused.stderr
