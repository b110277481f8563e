"""Partition reassignment in real processes (issue 4): 1 controller + 4 brokers (nodes 2-5).

1. Two RF 2 partitions on brokers 2 and 3 move to brokers 4 and 5 (kafka-python's
   KafkaAdminClient) while an idempotent acks=all librdkafka producer streams:
   the reassignment completes (nothing listed, replicas == target everywhere),
   every acknowledged record reads back at its acknowledged offset, and the old
   brokers delete their logs.
2. A reassignment that cannot complete (its new broker is down) is listed and
   cancelled: the partition is back on its original replicas.
3. Bad input over the wire: an unregistered broker -> INVALID_REPLICA_ASSIGNMENT,
   an unknown partition -> UNKNOWN_TOPIC_OR_PARTITION, a cancel with nothing to
   cancel -> NO_REASSIGNMENT_IN_PROGRESS.
4. `tierlog reassign`: --generate, --execute (rollback plan), --verify until
   complete, --list, a stuck reassignment cancelled, one-line errors.

1 and 3 stop no broker: they share one cluster (``shared_cluster``), each on a topic of its own.
"""
import json
import subprocess
import sys

import pytest
from clients import AckedStream, read_back
from cluster import request, wait_for
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, TopicPartition

from tierlog.protocol.errors import ErrorCode

ALTER, LIST = 45, 46


pytestmark = pytest.mark.cluster(brokers=4)


def _partitions(cluster, topic, brokers=None) -> dict[int, list[dict]]:
    """Per live broker: the topic's partitions as that broker's Metadata shows them."""
    out = {}
    for b in brokers or cluster.brokers:
        if b.alive():
            out[b.node_id] = cluster.partitions(b, topic)
    return out


def _create(cluster, topic, assignment):
    cluster.wait_leader()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, len(assignment), replica_assignment=assignment)],
                        request_timeout=15)[topic].result(timeout=20)

    def placed():
        return all(len(ps) == len(assignment) and all(
            p["LeaderId"] >= 0 and sorted(p["IsrNodes"]) == sorted(want) for p, want in zip(ps, assignment))
            for ps in _partitions(cluster, topic).values())
    wait_for(placed, 30, f"{topic} placed on {assignment} with full ISRs on every broker")


def _kafka_admin(cluster):
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)


def test_reassignment_of_a_partition_to_new_brokers_while_producing_no_loss(shared_cluster):
    cluster, topic, old, target = shared_cluster, "moving", [[2, 3], [3, 2]], [[4, 5], [5, 4]]
    _create(cluster, topic, old)
    stream = AckedStream(cluster.bootstrap, topic, keys=31)
    stream.start()
    admin = _kafka_admin(cluster)
    try:
        wait_for(lambda: len(stream.acked) >= 300, 30, "the first acknowledged records")
        result = admin.alter_partition_reassignments(
            {TopicPartition(topic, p): replicas for p, replicas in enumerate(target)})
        assert result == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}, result

        def completed():
            if admin.list_partition_reassignments():
                return False
            return all(len(ps) == 2 and all(p["ReplicaNodes"] == want and sorted(p["IsrNodes"]) == sorted(want)
                                            and p["LeaderId"] in want for p, want in zip(ps, target))
                       for ps in _partitions(cluster, topic).values())
        try:
            wait_for(completed, 60, "the reassignment to complete on every broker")
        except AssertionError as e:
            raise AssertionError(f"{e}: {_partitions(cluster, topic)}\n{cluster.logs_tail()}") from None
        done_at = len(stream.acked)
        wait_for(lambda: len(stream.acked) > done_at + 200, 40, "acknowledgements from the new leaders")
    finally:
        left = stream.finish()
        admin.close()
    assert left == 0, f"{left} records undelivered\n{cluster.logs_tail()}"
    assert not stream.errors, stream.errors[:5]

    got = read_back(cluster.bootstrap, topic, 2)
    for p in range(2):
        mine = [(off, v) for q, off, v in stream.acked if q == p]
        assert len(mine) > 100, f"partition {p}: only {len(mine)} acknowledged"
        missing = [(off, v) for off, v in mine if got[p].get(off) != v]
        assert not missing, f"partition {p}: {len(missing)} of {len(mine)} acknowledged records lost: {missing[:5]}"
        values = list(got[p].values())
        assert len(values) == len(set(values)), f"partition {p}: duplicates despite idempotence"

    def old_logs_deleted():
        return not any((cluster.broker(b).data_dir / f"{topic}-{p}").exists() for b in (2, 3) for p in range(2))
    wait_for(old_logs_deleted, 30, "brokers 2 and 3 to delete their logs of the moved partitions")
    assert all((cluster.broker(b).data_dir / f"{topic}-{p}").is_dir() for b in (4, 5) for p in range(2))


def test_a_stuck_reassignment_is_listed_and_cancelled(cluster):
    topic = "stuck"
    _create(cluster, topic, [[2, 3]])
    down = cluster.broker(5)
    down.stop()                                   # registered but fenced: it can never catch up

    def fenced_everywhere():                      # else a client may still be pointed at it
        return all(down.node_id not in {b["NodeId"] for b in cluster.metadata(b)["Brokers"]}
                   for b in cluster.brokers if b.alive())
    wait_for(fenced_everywhere, 20, "every live broker's metadata without the stopped broker")
    admin = _kafka_admin(cluster)
    try:
        assert admin.alter_partition_reassignments({TopicPartition(topic, 0): [2, 5]}) == \
            {TopicPartition(topic, 0): None}
        ongoing = wait_for(admin.list_partition_reassignments, 20, "the reassignment to be listed")
        assert ongoing == {TopicPartition(topic, 0): {"replicas": [2, 5, 3], "adding_replicas": [5],
                                                      "removing_replicas": [3]}}, ongoing
        assert admin.alter_partition_reassignments({TopicPartition(topic, 0): None}) == \
            {TopicPartition(topic, 0): None}
        assert admin.list_partition_reassignments() == {}
        again = admin.alter_partition_reassignments({TopicPartition(topic, 0): None})
        assert again[TopicPartition(topic, 0)].errno == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    finally:
        admin.close()

    def reverted():
        return all(ps and ps[0]["ReplicaNodes"] == [2, 3] and ps[0]["LeaderId"] == 2
                   for ps in _partitions(cluster, topic).values())
    wait_for(reverted, 30, "the partition back on brokers 2 and 3 on every live broker")


def test_bad_reassignments_get_kafka_error_codes_over_the_wire(shared_cluster):
    cluster, topic = shared_cluster, "guarded"
    _create(cluster, topic, [[2, 3]])
    broker = cluster.brokers[0]
    body = {"TimeoutMs": 10000, "AllowReplicationFactorChange": True, "Topics": [{"Name": topic, "Partitions": [
        {"PartitionIndex": 0, "Replicas": [4, 99]},
        {"PartitionIndex": 7, "Replicas": [4, 5]},
        {"PartitionIndex": 0, "Replicas": None}]}, {"Name": "nope", "Partitions": [
            {"PartitionIndex": 0, "Replicas": [4]}]}]}
    resp = request("127.0.0.1", broker.port, ALTER, body, timeout_s=30)
    assert resp["ErrorCode"] == 0, resp
    codes = [[p["ErrorCode"] for p in t["Partitions"]] for t in resp["Responses"]]
    assert codes == [[ErrorCode.INVALID_REPLICA_ASSIGNMENT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      ErrorCode.INVALID_REQUEST], [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]], resp
    body = {"TimeoutMs": 10000, "AllowReplicationFactorChange": False, "Topics": [{"Name": topic, "Partitions": [
        {"PartitionIndex": 0, "Replicas": [4, 5, 2]}]}]}
    resp = request("127.0.0.1", broker.port, ALTER, body, timeout_s=30)
    assert resp["Responses"][0]["Partitions"][0]["ErrorCode"] == ErrorCode.INVALID_REPLICATION_FACTOR, resp
    listed = request("127.0.0.1", broker.port, LIST, {"TimeoutMs": 10000, "Topics": None}, timeout_s=30)
    assert listed["ErrorCode"] == 0 and [t for t in listed["Topics"] if t["Name"] == topic] == [], listed
    assert all(ps and ps[0]["ReplicaNodes"] == [2, 3] for ps in _partitions(cluster, topic).values())


def _tierlog(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", "reassign", *args], capture_output=True,
                          text=True, timeout=90, check=False)


def _error_line(result) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode == 1 and len(lines) == 1 and lines[0].startswith("tierlog: error: "), result
    return lines[0]


def test_the_reassign_cli_generates_executes_verifies_lists_and_cancels(cluster, tmp_path):
    _create(cluster, "cli", [[2, 3], [3, 2]])
    boot = ("--bootstrap-server", cluster.broker(5).bootstrap, "--timeout", "30")   # stays up
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "cli"}]}))
    out = _tierlog("--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "4,5", *boot)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    current, proposed = json.loads(lines[1]), json.loads(lines[4])
    assert [p["replicas"] for p in current["partitions"]] == [[2, 3], [3, 2]]
    assert all(sorted(p["replicas"]) == [4, 5] for p in proposed["partitions"])

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(proposed))
    out = _tierlog("--execute", "--reassignment-json-file", str(plan), *boot)
    assert out.returncode == 0 and "Successfully started partition reassignment(s) for cli-0,cli-1" in out.stdout, out
    rollback = json.loads(out.stdout.splitlines()[2])
    assert rollback == current

    def verified():
        result = _tierlog("--verify", "--reassignment-json-file", str(plan), *boot)
        assert result.returncode in (0, 3), result
        return result.returncode == 0 and result
    done = wait_for(verified, 60, "tierlog reassign --verify to report completion")
    assert "Reassignment of partition cli-0 is complete." in done.stdout
    assert _tierlog("--list", *boot).stdout.strip() == "No partition reassignments found."

    # a stuck one: broker 2 is down, so moving cli-0 back onto it cannot complete
    cluster.broker(2).stop()
    back = tmp_path / "back.json"
    back.write_text(json.dumps({"version": 1, "partitions": [{"topic": "cli", "partition": 0, "replicas": [2, 3]}]}))
    assert _tierlog("--execute", "--reassignment-json-file", str(back), *boot).returncode == 0
    listed = _tierlog("--list", *boot).stdout
    assert "cli-0: replicas: 2,3," in listed and "adding: 2,3." in listed, listed
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"version": 1, "partitions": [{"topic": "cli", "partition": 1, "replicas": [5, 4]}]}))
    assert "existing partition reassignment" in _error_line(
        _tierlog("--execute", "--reassignment-json-file", str(other), *boot))
    assert _tierlog("--verify", "--reassignment-json-file", str(back), *boot).returncode == 3
    out = _tierlog("--cancel", "--reassignment-json-file", str(back), *boot)
    assert out.returncode == 0 and "Successfully cancelled partition reassignment(s) for: cli-0" in out.stdout, out
    assert "No reassignment in progress for: cli-0" in _tierlog(
        "--cancel", "--reassignment-json-file", str(back), *boot).stdout
    assert "failed for cli-0" in _error_line(_tierlog("--verify", "--reassignment-json-file", str(back), *boot))

    # bad input: one line each, nothing submitted
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "not valid JSON" in _error_line(_tierlog("--execute", "--reassignment-json-file", str(bad), *boot))
    bad.write_text(json.dumps({"version": 1, "partitions": [{"topic": "nope", "partition": 0, "replicas": [4]}]}))
    assert "topic 'nope' does not exist" in _error_line(
        _tierlog("--execute", "--reassignment-json-file", str(bad), *boot))
    bad.write_text(json.dumps({"version": 1, "partitions": [{"topic": "cli", "partition": 1, "replicas": [4, 99]}]}))
    refused = _tierlog("--execute", "--reassignment-json-file", str(bad), *boot)
    assert "cli-1: The manual partition assignment includes unregistered broker(s) [99]." in refused.stdout
    assert "(INVALID_REPLICA_ASSIGNMENT)" in refused.stdout and "refused: cli-1" in _error_line(refused)
    bad.write_text(json.dumps({"version": 1, "partitions": [{"topic": "cli", "partition": 1, "replicas": [4]}]}))
    refused = _tierlog("--execute", "--disallow-replication-factor-change", "--reassignment-json-file", str(bad),
                       *boot)
    assert "cli-1: The replication factor is changed from 2 to 1 (INVALID_REPLICATION_FACTOR)" in refused.stdout
    assert "refused: cli-1" in _error_line(refused)
