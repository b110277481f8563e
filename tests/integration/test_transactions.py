"""Transactions over sockets (KIP-98) with confluent-kafka (and kafka-python's and aiokafka's
transactional producers and read_committed consumers): commit and abort across partitions
led by two brokers (the markers go to each leader), read_committed vs read_uncommitted, the last
stable offset holding back an open transaction, zombie fencing, a transaction aborted by its
timeout.  One cluster for the module (1 controller, 2 brokers), each test with its own topic and
transactional ids."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from clients import read_isolated as read
from cluster import FAST_REPLICATION, Cluster, request, running, wait_for
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records import Record, build_batch

pytestmark = pytest.mark.integration

PROPS = {**FAST_REPLICATION, "transaction.state.log.num.partitions": "4",
         "transaction.abort.timed.out.transaction.cleanup.interval.ms": "300",
         "offsets.topic.num.partitions": "4", "group.initial.rebalance.delay.ms": "100"}


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory):
    with running(Cluster(tmp_path_factory.mktemp("txn"), controllers=1, brokers=2, props=PROPS)) as c:
        yield c


@pytest.fixture(scope="module")
def boot(txn_cluster):
    return txn_cluster.bootstrap


def new_topic(boot: str, partitions: int = 2) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(name, partitions, 2)], request_timeout=15)[name].result(timeout=20)
    return name


# librdkafka's 60 s transaction.timeout.ms is shorter than a test that keeps a transaction open
# across several CLI runs takes on a loaded machine (68-87 s at load 25): the coordinator then
# aborts it under the test. Tests of the timeout itself set their own.
TXN_TIMEOUT_MS = 300_000


def txn_producer(boot: str, tid: str, **conf) -> Producer:
    p = Producer({"bootstrap.servers": boot, "transactional.id": tid, "linger.ms": 5,
                  "transaction.timeout.ms": TXN_TIMEOUT_MS, **conf})
    p.init_transactions(30)
    return p


def produce_txn(p: Producer, topic: str, values: dict[int, list[bytes]], commit: bool) -> None:
    p.begin_transaction()
    for part, vs in values.items():
        for v in vs:
            p.produce(topic, v, partition=part)
    if commit:
        p.commit_transaction(30)
    else:
        assert p.flush(30) == 0         # abort_transaction purges what is not sent yet
        p.abort_transaction(30)


def test_read_committed_sees_committed_transactions_only(boot):
    topic = new_topic(boot)
    p = txn_producer(boot, f"tid-{topic}")
    produce_txn(p, topic, {0: [b"c1-0", b"c1-1"], 1: [b"c1-2"]}, commit=True)
    produce_txn(p, topic, {0: [b"a-0"], 1: [b"a-1", b"a-2"]}, commit=False)
    produce_txn(p, topic, {0: [b"c2-0"], 1: [b"c2-1"]}, commit=True)
    committed = sorted([b"c1-0", b"c1-1", b"c1-2", b"c2-0", b"c2-1"])
    assert read(boot, topic, 2, "read_committed") == committed
    assert read(boot, topic, 2, "read_uncommitted") == sorted(committed + [b"a-0", b"a-1", b"a-2"])
    # an open transaction holds read_committed readers at its first offset (the last stable offset)
    p.begin_transaction()
    p.produce(topic, b"open-0", partition=0)
    p.flush(10)
    assert b"open-0" in read(boot, topic, 2, "read_uncommitted")
    assert read(boot, topic, 2, "read_committed") == committed
    c = Consumer({"bootstrap.servers": boot, "group.id": "lso", "isolation.level": "read_committed"})
    _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.close()
    p.commit_transaction(30)
    assert read(boot, topic, 2, "read_committed", until=6) == sorted(committed + [b"open-0"])
    # ListOffsets latest for read_committed is the last stable offset: the open transaction's first
    # offset, 7 (partition 0 holds 2 + 1 + 1 records of three transactions and their 3 markers)
    assert high == 7


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(boot):
    topic = new_topic(boot)
    tid = f"tid-{topic}"
    zombie = txn_producer(boot, tid)
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie", partition=0)
    zombie.flush(10)
    fresh = txn_producer(boot, tid)           # fences the zombie and aborts its transaction
    with pytest.raises(KafkaException) as e:
        zombie.produce(topic, b"zombie-2", partition=1)
        zombie.commit_transaction(30)
    assert e.value.args[0].fatal(), e.value.args[0]
    produce_txn(fresh, topic, {0: [b"fresh-0"], 1: [b"fresh-1"]}, commit=True)
    assert read(boot, topic, 2, "read_committed") == [b"fresh-0", b"fresh-1"]


def test_a_transaction_past_its_timeout_is_aborted(boot):
    topic = new_topic(boot, 1)
    slow = txn_producer(boot, f"slow-{topic}", **{"transaction.timeout.ms": 1000})
    slow.begin_transaction()
    slow.produce(topic, b"doomed", partition=0)
    slow.flush(10)
    other = txn_producer(boot, f"other-{topic}")
    produce_txn(other, topic, {0: [b"after"]}, commit=True)
    # "after" is behind the open transaction: read_committed sees it once the coordinator aborted it
    assert read(boot, topic, 1, "read_committed", until=1) == [b"after"]
    assert read(boot, topic, 1, "read_uncommitted") == [b"after", b"doomed"]
    with pytest.raises(KafkaException):
        slow.commit_transaction(30)


def test_consume_transform_produce_commits_offsets_with_the_transaction(boot):
    source, sink = new_topic(boot, 1), new_topic(boot, 1)
    plain = Producer({"bootstrap.servers": boot})
    for i in range(6):
        plain.produce(source, b"in-%d" % i, partition=0)
    assert plain.flush(30) == 0
    group = f"ctp-{source}"

    def consumer() -> Consumer:
        c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
        c.subscribe([source])
        return c

    def run_once(c: Consumer, p: Producer, count: int, commit: bool) -> None:
        """Read ``count`` records, write them transformed and their offsets in one transaction."""
        got = []
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m)
        assert len(got) == count, got
        p.begin_transaction()
        for m in got:
            p.produce(sink, m.value().replace(b"in", b"out"), partition=0)
        p.send_offsets_to_transaction([TopicPartition(source, 0, got[-1].offset() + 1)],
                                      c.consumer_group_metadata(), 30)
        produce_txn_end(p, commit)

    c, p = consumer(), txn_producer(boot, f"ctp-{source}")
    run_once(c, p, 2, commit=True)         # in-0, in-1 done
    run_once(c, p, 2, commit=False)        # in-2, in-3 aborted: their offsets are not committed
    c.close()
    c = consumer()                         # resumes at the committed offset 2
    run_once(c, p, 4, commit=True)
    committed = c.committed([TopicPartition(source, 0)], timeout=10)[0].offset
    c.close()
    assert committed == 6
    assert read(boot, sink, 1, "read_committed") == sorted(b"out-%d" % i for i in range(6))


def produce_txn_end(p: Producer, commit: bool) -> None:
    if commit:
        p.commit_transaction(30)
    else:
        assert p.flush(30) == 0
        p.abort_transaction(30)


def test_kafka_python_transactional_producer_and_read_committed_consumer(boot):
    from kafka import KafkaConsumer, KafkaProducer
    topic = new_topic(boot, 2)
    p = KafkaProducer(bootstrap_servers=boot, transactional_id=f"kp-{topic}")
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, b"kp-aborted", partition=0)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.send(topic, b"kp-0", partition=0)
    p.send(topic, b"kp-1", partition=1)
    p.commit_transaction()
    p.close()
    c = KafkaConsumer(topic, bootstrap_servers=boot, isolation_level="read_committed",
                      auto_offset_reset="earliest", group_id=None)
    values, deadline = [], time.monotonic() + 30
    while len(values) < 2 and time.monotonic() < deadline:     # the aborted record comes first if at all
        values += [m.value for batch in c.poll(timeout_ms=500).values() for m in batch]
    c.close()
    assert sorted(values) == [b"kp-0", b"kp-1"]
    assert read(boot, topic, 2, "read_uncommitted") == [b"kp-0", b"kp-1", b"kp-aborted"]


def test_aiokafka_transactional_producer_offsets_and_read_committed_consumer(boot):
    asyncio.run(_aiokafka_transactions(boot, new_topic(boot, 2)))


async def _aiokafka_transactions(boot: str, topic: str) -> None:
    """aiokafka's transactional producer: an aborted transaction (a record and offsets), then a
    committed one across both partitions with offsets sent to the transaction (its
    TxnOffsetCommit); its read_committed consumer sees the committed records only, and the group
    has the committed transaction's offset, not the aborted one's."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as ATopicPartition
    group = f"g-{topic}"
    p = AIOKafkaProducer(bootstrap_servers=boot, transactional_id=f"aio-{topic}")
    await p.start()
    try:
        await p.begin_transaction()
        await p.send_and_wait(topic, b"aio-aborted", partition=0)
        await p.send_offsets_to_transaction({ATopicPartition(topic, 0): 99}, group)
        await p.abort_transaction()
        async with p.transaction():             # committed when the block ends
            await p.send_and_wait(topic, b"aio-0", partition=0)
            await p.send_and_wait(topic, b"aio-1", partition=1)
            await p.send_offsets_to_transaction({ATopicPartition(topic, 0): 7}, group)
    finally:
        await p.stop()
    c = AIOKafkaConsumer(topic, bootstrap_servers=boot, isolation_level="read_committed",
                         auto_offset_reset="earliest", group_id=None)
    await c.start()
    try:
        values, deadline = [], time.monotonic() + 30
        while len(values) < 2 and time.monotonic() < deadline:
            values += [m.value for batch in (await c.getmany(timeout_ms=500)).values() for m in batch]
    finally:
        await c.stop()
    assert sorted(values) == [b"aio-0", b"aio-1"]
    assert read(boot, topic, 2, "read_uncommitted") == [b"aio-0", b"aio-1", b"aio-aborted"]
    probe = Consumer({"bootstrap.servers": boot, "group.id": group})
    try:
        assert probe.committed([TopicPartition(topic, 0)], 20)[0].offset == 7
    finally:
        probe.close()


def leader_port(txn_cluster, topic: str, index: int) -> int:
    meta = request("127.0.0.1", txn_cluster.brokers[0].port, ApiKey.METADATA, {"Topics": [{"Name": topic}]}, version=9)
    leader = meta["Topics"][0]["Partitions"][index]["LeaderId"]
    return txn_cluster.broker(leader).port


def find_coordinator(txn_cluster, tid: str) -> dict:
    """FindCoordinator key type 1, asked until answered (the first ask creates __transaction_state)."""
    def ask():
        found = request("127.0.0.1", txn_cluster.brokers[0].port, ApiKey.FIND_COORDINATOR,
                        {"KeyType": 1, "CoordinatorKeys": [tid]}, version=4)["Coordinators"][0]
        return found if found["ErrorCode"] == 0 else None
    return wait_for(ask, 30, f"the coordinator of {tid}")


def test_a_first_transactional_write_to_a_partition_outside_the_transaction_is_refused(txn_cluster, boot):
    """KIP-890 part 1: the leader asks the coordinator before a producer's first transactional
    batch on a partition; one the producer did not add to its transaction is refused."""
    topic = new_topic(boot, 1)
    tid = f"raw-{topic}"
    coordinator = find_coordinator(txn_cluster, tid)
    init = request("127.0.0.1", coordinator["Port"], ApiKey.INIT_PRODUCER_ID,
                   {"TransactionalId": tid, "TransactionTimeoutMs": 60000}, version=4)
    pid, epoch = init["ProducerId"], init["ProducerEpoch"]

    def produce() -> int:
        batch = build_batch([Record(0, int(time.time() * 1000), None, b"v")], producer_id=pid, producer_epoch=epoch,
                            base_sequence=0, transactional=True)
        body = {"TransactionalId": tid, "Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}]}
        resp = request("127.0.0.1", leader_port(txn_cluster, topic, 0), ApiKey.PRODUCE, body, version=9)
        return resp["Responses"][0]["PartitionResponses"][0]["ErrorCode"]

    assert produce() == ErrorCode.INVALID_TXN_STATE
    added = request("127.0.0.1", coordinator["Port"], ApiKey.ADD_PARTITIONS_TO_TXN,
                    {"V3AndBelowTransactionalId": tid, "V3AndBelowProducerId": pid, "V3AndBelowProducerEpoch": epoch,
                     "V3AndBelowTopics": [{"Name": topic, "Partitions": [0]}]}, version=3)
    assert added["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0]["PartitionErrorCode"] == ErrorCode.NONE
    assert produce() == ErrorCode.NONE
    ended = request("127.0.0.1", coordinator["Port"], ApiKey.END_TXN,
                    {"TransactionalId": tid, "ProducerId": pid, "ProducerEpoch": epoch, "Committed": True}, version=3)
    assert ended["ErrorCode"] == ErrorCode.NONE
    assert read(boot, topic, 1, "read_committed", until=1) == [b"v"]


def test_tv2_end_txn_v5_bumps_the_epoch_on_every_end_and_answers_it(txn_cluster, boot):
    """KIP-890 part 2 on the wire (no client in the venv sends EndTxn v5: librdkafka stops at v1,
    kafka-python at v3): each end answers the bumped epoch, the next transaction runs at it (its
    partition added by the leader at the first Produce v12, no AddPartitionsToTxn), a write at
    the epoch before is fenced, and so is a late copy of an ended transaction's marker (KIP-1228)."""
    versions = request("127.0.0.1", txn_cluster.brokers[0].port, ApiKey.API_VERSIONS,
                       {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}, version=3)
    assert {"Name": "transaction.version", "MaxVersionLevel": 2, "MinVersionLevel": 2} in versions["FinalizedFeatures"]
    assert versions["FinalizedFeaturesEpoch"] >= 0      # what a TV2-capable client looks at first (KIP-584)
    topic = new_topic(boot, 1)
    tid = f"tv2-{topic}"
    coordinator = find_coordinator(txn_cluster, tid)["Port"]
    init = wait_for(lambda: (r := request("127.0.0.1", coordinator, ApiKey.INIT_PRODUCER_ID,
                                          {"TransactionalId": tid, "TransactionTimeoutMs": 60000}, version=4))
                    ["ErrorCode"] == 0 and r, 30, "InitProducerId")
    pid, epoch = init["ProducerId"], init["ProducerEpoch"]

    def transaction(value: bytes, at_epoch: int, commit: bool, implicit: bool) -> dict:
        """One transaction: with ``implicit`` (a TV2 client) no AddPartitionsToTxn, Produce v12."""
        if not implicit:
            added = request("127.0.0.1", coordinator, ApiKey.ADD_PARTITIONS_TO_TXN,
                            {"V3AndBelowTransactionalId": tid, "V3AndBelowProducerId": pid,
                             "V3AndBelowProducerEpoch": at_epoch,
                             "V3AndBelowTopics": [{"Name": topic, "Partitions": [0]}]}, version=3)
            assert added["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0]["PartitionErrorCode"] == 0
        # NOT_ENOUGH_REPLICAS (retriable) while the previous end's markers are still being written
        wait_for(lambda: produce_raw(value, at_epoch, 12 if implicit else 9) != ErrorCode.NOT_ENOUGH_REPLICAS, 30,
                 "the produce")
        return request("127.0.0.1", coordinator, ApiKey.END_TXN, {"TransactionalId": tid, "ProducerId": pid,
                                                                  "ProducerEpoch": at_epoch, "Committed": commit},
                       version=5)

    def produce_raw(value: bytes, at_epoch: int, version: int = 9) -> int:
        batch = build_batch([Record(0, int(time.time() * 1000), None, value)], producer_id=pid,
                            producer_epoch=at_epoch, base_sequence=0, transactional=True)
        body = {"TransactionalId": tid, "Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}]}
        resp = request("127.0.0.1", leader_port(txn_cluster, topic, 0), ApiKey.PRODUCE, body, version=version)
        error = resp["Responses"][0]["PartitionResponses"][0]["ErrorCode"]
        assert error in (ErrorCode.NONE, ErrorCode.NOT_ENOUGH_REPLICAS) or value == b"zombie", error
        return error

    first = transaction(b"one", epoch, commit=True, implicit=False)
    assert (first["ErrorCode"], first["ProducerId"], first["ProducerEpoch"]) == (ErrorCode.NONE, pid, epoch + 1)
    second = transaction(b"aborted", epoch + 1, commit=False, implicit=True)
    assert (second["ErrorCode"], second["ProducerEpoch"]) == (ErrorCode.NONE, epoch + 2)
    third = transaction(b"three", epoch + 2, commit=True, implicit=True)
    assert (third["ErrorCode"], third["ProducerEpoch"]) == (ErrorCode.NONE, epoch + 3)
    assert read(boot, topic, 1, "read_committed", until=2) == [b"one", b"three"]
    # the markers carried the bumped epochs: a late write at an ended transaction's epoch is fenced
    assert produce_raw(b"zombie", epoch + 2, 12) in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED)
    assert read(boot, topic, 1, "read_committed") == [b"one", b"three"]
    # KIP-1228: a late copy of the third transaction's COMMIT marker (WriteTxnMarkers v2, TransactionVersion
    # 2, at the epoch that end bumped to) reaches the leader while the fourth transaction, at that same
    # epoch, is open there: it is fenced and does not commit the fourth, which then aborts
    wait_for(lambda: produce_raw(b"four", epoch + 3, 12) != ErrorCode.NOT_ENOUGH_REPLICAS, 30, "the produce")
    late = {"ProducerId": pid, "ProducerEpoch": epoch + 3, "TransactionResult": True, "CoordinatorEpoch": 0,
            "TransactionVersion": 2, "Topics": [{"Name": topic, "PartitionIndexes": [0]}]}
    written = request("127.0.0.1", leader_port(txn_cluster, topic, 0), ApiKey.WRITE_TXN_MARKERS,
                      {"Markers": [late]}, version=2)
    assert written["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"] == ErrorCode.INVALID_PRODUCER_EPOCH
    fourth = request("127.0.0.1", coordinator, ApiKey.END_TXN, {"TransactionalId": tid, "ProducerId": pid,
                                                                "ProducerEpoch": epoch + 3, "Committed": False},
                     version=5)
    assert (fourth["ErrorCode"], fourth["ProducerEpoch"]) == (ErrorCode.NONE, epoch + 4)
    assert read(boot, topic, 1, "read_committed", until=2) == [b"one", b"three"]
    # Kafka's checkCoordinatorEpoch: a marker from an older coordinator epoch than the producer's last
    # marker here (a coordinator that lost its __transaction_state partition) is fenced
    zombie = {**late, "ProducerEpoch": epoch + 4, "CoordinatorEpoch": -1, "TransactionVersion": 1}
    written = request("127.0.0.1", leader_port(txn_cluster, topic, 0), ApiKey.WRITE_TXN_MARKERS,
                      {"Markers": [zombie]}, version=1)
    assert written["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"] == ErrorCode.TRANSACTION_COORDINATOR_FENCED


def tierlog(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_an_open_transaction_is_listed_described_and_its_producer_shown(txn_cluster, boot):
    topic = new_topic(boot, 1)
    tid = f"tid-{topic}"
    p = txn_producer(boot, tid)
    p.begin_transaction()
    p.produce(topic, b"open", partition=0)
    assert p.flush(30) == 0
    listed = tierlog("transactions", "list", "--json", "--bootstrap-server", boot)
    assert listed.returncode == 0, listed.stderr
    assert [t["state"] for t in json.loads(listed.stdout) if t["transactional_id"] == tid] == ["Ongoing"]
    described = tierlog("transactions", "describe", "--transactional-id", tid, "--json", "--bootstrap-server", boot)
    assert described.returncode == 0, described.stderr
    desc = json.loads(described.stdout)
    assert (desc["state"], desc["partitions"], desc["producer_epoch"]) == ("Ongoing", [f"{topic}-0"], 0)
    table = tierlog("transactions", "describe", "--transactional-id", tid, "--bootstrap-server", boot)
    row = dict(zip(*(line.split("\t") for line in table.stdout.splitlines()), strict=True))
    started = datetime.fromisoformat(row["START TIME"])     # a UTC time people read, not epoch ms
    assert started.tzinfo == UTC and round(started.timestamp() * 1000) == desc["start_time_ms"], row
    missing = tierlog("transactions", "describe", "--transactional-id", "nobody", "--bootstrap-server", boot)
    assert missing.returncode != 0 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    producers = []
    for b in txn_cluster.brokers:       # DescribeProducers at the partition's leader
        resp = request("127.0.0.1", b.port, ApiKey.DESCRIBE_PRODUCERS,
                       {"Topics": [{"Name": topic, "PartitionIndexes": [0]}]}, version=0)
        producers += resp["Topics"][0]["Partitions"][0]["ActiveProducers"]
    assert [(x["ProducerId"], x["CurrentTxnStartOffset"]) for x in producers] == [(desc["producer_id"], 0)]
    p.abort_transaction(30)


def consume_cli(boot: str, topic: str, isolation: str) -> list[str]:
    out = tierlog("consume", topic, "--isolation-level", isolation, "--timeout-ms", "1500", "--bootstrap-server", boot)
    assert out.returncode == 0, out.stderr
    return sorted(out.stdout.split())


def test_a_hanging_transaction_is_found_and_aborted_with_the_cli(boot):
    """kafka-transactions.sh's describe-producers and abort --start-offset, and
    kafka-console-consumer's --isolation-level: an open transaction holds the last stable offset
    back until the CLI's ABORT marker ends it."""
    topic = new_topic(boot, 1)
    hanging, other = txn_producer(boot, f"tid-{topic}"), txn_producer(boot, f"tid2-{topic}")
    produce_txn(hanging, topic, {0: [b"c0"]}, commit=True)           # offset 0, its marker 1
    hanging.begin_transaction()
    hanging.produce(topic, b"open", partition=0)                     # offset 2: stays open
    assert hanging.flush(30) == 0
    produce_txn(other, topic, {0: [b"c1"]}, commit=True)             # offset 3, held back by the LSO
    assert consume_cli(boot, topic, "read_committed") == ["c0"]
    assert consume_cli(boot, topic, "read_uncommitted") == ["c0", "c1", "open"]
    shown = tierlog("transactions", "describe-producers", "--topic", topic, "--partition", "0", "--json",
                    "--bootstrap-server", boot)
    assert shown.returncode == 0, shown.stderr
    starts = sorted(p["current_transaction_start_offset"] for p in json.loads(shown.stdout))
    assert starts == [-1, 2]
    wrong = tierlog("transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "3",
                    "--bootstrap-server", boot)
    assert wrong.returncode != 0 and "could not find any open transaction starting at offset 3" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
    aborted = tierlog("transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "2",
                      "--json", "--bootstrap-server", boot)
    assert aborted.returncode == 0, aborted.stderr
    assert json.loads(aborted.stdout)["producer_id"] in {p["producer_id"] for p in json.loads(shown.stdout)}
    assert consume_cli(boot, topic, "read_committed") == ["c0", "c1"]
    assert consume_cli(boot, topic, "read_uncommitted") == ["c0", "c1", "open"]
    hanging.abort_transaction(30)       # its coordinator's own ABORT changes nothing more
    assert consume_cli(boot, topic, "read_committed") == ["c0", "c1"]


def test_a_transaction_completes_after_its_coordinator_is_killed(txn_cluster, boot):
    """Last in the module: it kills a broker (and restarts it).  The new leader of the
    transactional id's __transaction_state partition loads it and serves the commit."""
    topic = new_topic(boot)
    tid = f"tid-{topic}"
    p = txn_producer(boot, tid)
    p.begin_transaction()
    p.produce(topic, b"k-0", partition=0)
    p.produce(topic, b"k-1", partition=1)
    assert p.flush(30) == 0
    any_broker = txn_cluster.brokers[0]
    found = request("127.0.0.1", any_broker.port, ApiKey.FIND_COORDINATOR,
                    {"KeyType": 1, "CoordinatorKeys": [tid]}, version=4)["Coordinators"][0]
    coordinator = txn_cluster.broker(found["NodeId"])
    coordinator.kill9()
    coordinator.restart()
    p.commit_transaction(60)
    assert read(boot, topic, 2, "read_committed", until=2, timeout_s=60) == [b"k-0", b"k-1"]


def test_concurrent_producers_markers_grouped_commit_and_abort_exactly_once(boot):
    """Six producers ending transactions side by side: their markers to a leader share
    WriteTxnMarkers requests and appends (docs/transactions.md, "Markers"); read_committed sees
    every committed record once and none of the aborted ones."""
    topic = new_topic(boot)
    producers = [txn_producer(boot, f"group-{topic}-{n}") for n in range(6)]

    def run(n: int) -> None:
        for i in range(4):
            produce_txn(producers[n], topic, {0: [b"%d-%d-0" % (n, i)], 1: [b"%d-%d-1" % (n, i)]},
                        commit=(n + i) % 2 == 0)
    with ThreadPoolExecutor(len(producers)) as pool:
        list(pool.map(run, range(len(producers))))
    committed = sorted(b"%d-%d-%d" % (n, i, p) for n in range(6) for i in range(4) for p in (0, 1) if (n + i) % 2 == 0)
    assert read(boot, topic, 2, "read_committed", until=len(committed)) == committed
    assert len(read(boot, topic, 2, "read_uncommitted", until=2 * len(committed))) == 2 * len(committed)


def test_one_write_txn_markers_request_ends_several_producers_transactions(txn_cluster, boot):
    """The leader's side of a grouped WriteTxnMarkers: the markers of two producers for one
    partition, and a stale one, in one request; each is answered on its own (the stale one
    INVALID_PRODUCER_EPOCH) and the two transactions end as their markers say."""
    topic = new_topic(boot, 1)
    ids = {}
    for name in ("a", "b"):
        tid = f"{name}-{topic}"
        port = find_coordinator(txn_cluster, tid)["Port"]
        for _ in range(2 if name == "a" else 1):        # a's second InitProducerId bumps its epoch to 1
            init = wait_for(lambda tid=tid, port=port: (r := request(
                "127.0.0.1", port, ApiKey.INIT_PRODUCER_ID, {"TransactionalId": tid, "TransactionTimeoutMs": 60000},
                version=4))["ErrorCode"] == 0 and r, 30, "InitProducerId")
        ids[name] = (tid, port, init["ProducerId"], init["ProducerEpoch"])
        added = request("127.0.0.1", port, ApiKey.ADD_PARTITIONS_TO_TXN,
                        {"V3AndBelowTransactionalId": tid, "V3AndBelowProducerId": init["ProducerId"],
                         "V3AndBelowProducerEpoch": init["ProducerEpoch"],
                         "V3AndBelowTopics": [{"Name": topic, "Partitions": [0]}]}, version=3)
        assert added["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0]["PartitionErrorCode"] == 0
        batch = build_batch([Record(0, int(time.time() * 1000), None, name.encode())], producer_id=init["ProducerId"],
                            producer_epoch=init["ProducerEpoch"], base_sequence=0, transactional=True)
        produced = request("127.0.0.1", leader_port(txn_cluster, topic, 0), ApiKey.PRODUCE,
                           {"TransactionalId": tid, "Acks": -1, "TimeoutMs": 10000, "TopicData": [
                               {"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}]}, version=9)
        assert produced["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0

    def marker(name: str, epoch_delta: int, commit: bool) -> dict:
        _tid, _port, pid, epoch = ids[name]
        return {"ProducerId": pid, "ProducerEpoch": epoch + epoch_delta, "TransactionResult": commit,
                "CoordinatorEpoch": 0, "TransactionVersion": 1, "Topics": [{"Name": topic, "PartitionIndexes": [0]}]}
    written = request("127.0.0.1", leader_port(txn_cluster, topic, 0), ApiKey.WRITE_TXN_MARKERS,
                      {"Markers": [marker("a", -1, False), marker("a", 0, True), marker("b", 0, False)]}, version=2)
    assert [(m["ProducerId"], m["Topics"][0]["Partitions"][0]["ErrorCode"]) for m in written["Markers"]] == [
        (ids["a"][2], ErrorCode.INVALID_PRODUCER_EPOCH), (ids["a"][2], ErrorCode.NONE), (ids["b"][2], ErrorCode.NONE)]
    assert read(boot, topic, 1, "read_committed", until=1) == [b"a"]
    for name, commit in (("a", True), ("b", False)):    # the coordinators end them too: nothing changes
        tid, port, pid, epoch = ids[name]
        ended = request("127.0.0.1", port, ApiKey.END_TXN, {"TransactionalId": tid, "ProducerId": pid,
                                                            "ProducerEpoch": epoch, "Committed": commit}, version=3)
        assert ended["ErrorCode"] == 0
    assert read(boot, topic, 1, "read_committed") == [b"a"]
