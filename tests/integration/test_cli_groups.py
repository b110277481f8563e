"""`tierlog groups` as subprocesses against one tierlog node, with a real confluent-kafka group.

Each test builds its own group: a topic of 3 partitions with 10 records each
(partition p's record i has timestamp BASE_MS + p * 100_000 + i * 1000), a
consumer that subscribe()s, reads until it holds all 3 partitions and commits
offsets 4 and 10 on partitions 0 and 1 (none on 2). Committed offsets are
checked through AdminClient, never through the command under test.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime

import pytest
from clients import produce_all
from cluster import FAST_REPLICATION
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from nodeproc import NodeProcess
from test_consumer_group_faults import coordinator_of

pytestmark = pytest.mark.integration
PREFIX = "tierlog: error: "
PARTITIONS, RECORDS = 3, 10
BASE_MS = 1_700_000_000_000
COMMITS = {0: 4, 1: 10}


@pytest.fixture(scope="module")
def boot(tmp_path_factory):
    """One node whose groups settle fast (a short initial rebalance delay, few offsets partitions)."""
    node = NodeProcess(tmp_path_factory.mktemp("groups") / "node-1",
                       props={"group.initial.rebalance.delay.ms": "100", "offsets.topic.num.partitions": "4"})
    node.start()
    yield node.bootstrap
    if node.alive():
        node.stop()


def tierlog(boot: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", "groups", *args, "--bootstrap-server", boot],
                          check=False, capture_output=True, text=True, timeout=90)


def ok(boot: str, *args: str) -> subprocess.CompletedProcess:
    result = tierlog(boot, *args)
    assert result.returncode == 0, f"tierlog groups {' '.join(args)} failed: {result.stderr}"
    return result


def ok_json(boot: str, *args: str):
    return json.loads(ok(boot, *args, "--json").stdout)


def one_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0][len(PREFIX):]


def active_group(boot: str, replicas: int = 1) -> tuple[str, str, Consumer]:
    """(topic, group, consumer): a Stable group whose one member holds every partition, COMMITS committed."""
    topic, group = f"gt-{uuid.uuid4().hex[:8]}", f"gg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(topic, PARTITIONS, replicas)])[topic].result(timeout=30)
    produce_all(boot, topic, [(p, None, b"r%d" % i, None, BASE_MS + p * 100_000 + i * 1000)
                              for p in range(PARTITIONS) for i in range(RECORDS)])
    consumer = Consumer({"bootstrap.servers": boot, "group.id": group, "client.id": "cli-groups-test",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while len(consumer.assignment()) < PARTITIONS:
        assert time.monotonic() < deadline, "the consumer was never assigned every partition"
        consumer.poll(0.1)
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in COMMITS.items()], asynchronous=False)
    return topic, group, consumer


def closed_group(boot: str, replicas: int = 1) -> tuple[str, str]:
    topic, group, consumer = active_group(boot, replicas)
    consumer.close()
    return topic, group


def committed(boot: str, group: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": boot})
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_list_and_describe_an_active_then_closed_group(boot):
    topic, group, consumer = active_group(boot)
    try:
        admin = AdminClient({"bootstrap.servers": boot})      # kept: a dropped client never completes its futures
        [member_id] = [m.member_id for m in admin.describe_consumer_groups([group])[group].result(timeout=30).members]
        listed = ok_json(boot, "list")
        assert {"group": group, "state": "Stable", "type": "classic"} in listed
        assert group in [g["group"] for g in ok_json(boot, "list", "--state", "stable,PreparingRebalance")]
        assert group not in [g["group"] for g in ok_json(boot, "list", "--state", "Empty")]

        [d] = ok_json(boot, "describe", group)
        assert (d["group"], d["state"], d["type"]) == (group, "Stable", "classic")
        assert [(m["member_id"], m["client_id"], len(m["partitions"])) for m in d["members"]] == [
            (member_id, "cli-groups-test", PARTITIONS)]
        assert [(r["topic"], r["partition"], r["current_offset"], r["log_end_offset"], r["lag"], r["member_id"],
                 r["client_id"]) for r in d["offsets"]] == [
            (topic, 0, 4, RECORDS, 6, member_id, "cli-groups-test"),
            (topic, 1, 10, RECORDS, 0, member_id, "cli-groups-test"),
            (topic, 2, None, RECORDS, None, member_id, "cli-groups-test")]
        table = ok(boot, "describe", group).stdout
        assert "CURRENT-OFFSET" in table and "LOG-END-OFFSET" in table and "LAG" in table
        assert table.count(member_id) == PARTITIONS and "cli-groups-test" in table
        assert member_id in ok(boot, "describe", group, "--members").stdout
        assert "Stable" in ok(boot, "describe", group, "--state").stdout

        assert "NON_EMPTY_GROUP" in one_error(tierlog(boot, "delete", group))
        refused = one_error(tierlog(boot, "reset-offsets", "--group", group, "--all-topics", "--to-earliest",
                                    "--execute"))
        assert "can only be reset while it is inactive" in refused and "Stable" in refused
    finally:
        consumer.close()
    assert committed(boot, group) == COMMITS
    assert {"group": group, "state": "Empty", "type": "classic"} in ok_json(boot, "list")
    [d] = ok_json(boot, "describe", group)
    assert d["state"] == "Empty" and d["members"] == []
    assert [(r["partition"], r["current_offset"], r["log_end_offset"], r["lag"], r["member_id"])
            for r in d["offsets"]] == [(0, 4, RECORDS, 6, None), (1, 10, RECORDS, 0, None)]
    result = ok(boot, "describe", group)
    assert "has no active members" in result.stderr


def test_reset_offsets_dry_run_changes_nothing_and_execute_commits(boot):
    topic, group = closed_group(boot)
    dry = ok(boot, "reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert "dry run" in dry.stderr and "NEW-OFFSET" in dry.stdout
    plan = ok_json(boot, "reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert plan["executed"] is False and plan["state"] == "Empty"
    assert [(p["partition"], p["current_offset"], p["new_offset"]) for p in plan["partitions"]] == [
        (0, 4, 0), (1, 10, 0), (2, None, 0)]
    assert committed(boot, group) == COMMITS

    shifted = ok_json(boot, "reset-offsets", "--group", group, "--topic", f"{topic}:0,1", "--shift-by", "-7",
                      "--execute")
    assert shifted["executed"] is True
    assert [(p["partition"], p["new_offset"]) for p in shifted["partitions"]] == [(0, 0), (1, 3)]  # 4-7 clamped
    assert committed(boot, group) == {0: 0, 1: 3}

    at = ok_json(boot, "reset-offsets", "--group", group, "--topic", topic,
                 "--to-datetime", iso(BASE_MS + 100_000 + 5500), "--execute")  # partition 1's record 6
    assert [(p["partition"], p["new_offset"]) for p in at["partitions"]] == [(0, RECORDS), (1, 6), (2, 0)]
    assert committed(boot, group) == {0: RECORDS, 1: 6, 2: 0}

    admin = AdminClient({"bootstrap.servers": boot})
    admin.delete_records([TopicPartition(topic, 2, 3)])[TopicPartition(topic, 2, 3)].result(timeout=30)
    clamped = ok_json(boot, "reset-offsets", "--group", group, "--topic", f"{topic}:1,2", "--to-offset", "1",
                      "--execute")
    assert [(p["partition"], p["log_start_offset"], p["new_offset"]) for p in clamped["partitions"]] == [
        (1, 0, 1), (2, 3, 3)]
    ok(boot, "reset-offsets", "--group", group, "--all-topics", "--to-latest", "--execute")
    assert committed(boot, group) == {0: RECORDS, 1: RECORDS, 2: RECORDS}
    assert "no committed offset" in one_error(tierlog(boot, "reset-offsets", "--group", f"none-{group}",
                                                      "--topic", topic, "--shift-by", "1"))
    assert "does not exist" in one_error(tierlog(boot, "reset-offsets", "--group", group, "--topic",
                                                 f"missing-{topic}", "--to-latest"))


def test_delete_removes_the_group_and_unknown_groups_are_one_line_errors(boot):
    _, group = closed_group(boot)
    unknown = f"unknown-{uuid.uuid4().hex[:8]}"
    assert one_error(tierlog(boot, "describe", unknown)) == f"group '{unknown}' does not exist"
    assert one_error(tierlog(boot, "delete", unknown)) == f"group '{unknown}' does not exist"
    result = ok(boot, "delete", group)
    assert result.stdout == f"deleted group {group}\n"
    assert group not in [g["group"] for g in ok_json(boot, "list")]
    assert committed(boot, group) == {}
    assert one_error(tierlog(boot, "describe", group)) == f"group '{group}' does not exist"
    assert one_error(tierlog(boot, "delete", group)) == f"group '{group}' does not exist"


@pytest.mark.cluster(props={**FAST_REPLICATION, "group.initial.rebalance.delay.ms": "100",
                            "offsets.topic.num.partitions": "4"})
def test_commands_follow_the_group_to_a_new_coordinator_after_kill9(cluster):
    """Right after a kill -9 of the group's coordinator the commands retry until the new one answers."""
    topic, group = closed_group(cluster.bootstrap, replicas=3)
    old = coordinator_of(cluster, group)
    cluster.broker(old).kill9()
    boot = cluster.bootstrap            # the live brokers only
    [d] = ok_json(boot, "describe", group, "--timeout", "60")
    assert [(r["partition"], r["current_offset"]) for r in d["offsets"]] == [(0, 4), (1, 10)]
    assert d["coordinator"] != old

    def lags():
        # A new leader answers ListOffsets with its high watermark before that has caught up
        # (Kafka answers OFFSET_NOT_AVAILABLE then): the lag is right once it has.
        [now] = ok_json(boot, "describe", group, "--timeout", "60")
        return [(r["partition"], r["log_end_offset"], r["lag"]) for r in now["offsets"]]
    deadline = time.monotonic() + 60
    while lags() != [(0, RECORDS, 6), (1, RECORDS, 0)]:
        assert time.monotonic() < deadline, f"lags never settled: {lags()}"
    ok(boot, "reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute", "--timeout", "60")
    assert committed(boot, group) == {0: 0, 1: 0, 2: 0}
