"""`tierlog elect-leaders` as a subprocess against one tierlog node: outcomes and one-line errors.

The multi-broker elections (controlled shutdown, preferred, unclean) are in
test_leader_election.py; here one node (broker and controller) answers.
"""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from clients import create_topic
from nodeproc import free_port

pytestmark = pytest.mark.integration
PREFIX = "tierlog: error: "


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", "elect-leaders", *args],
                          check=False, capture_output=True, text=True, timeout=90)


def _one_error(result) -> str:
    assert result.returncode == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), result.stderr
    return lines[0][len(PREFIX):]


@pytest.fixture(scope="module")
def topic(shared_node):
    name = f"el-{uuid.uuid4().hex[:8]}"
    create_topic(shared_node.bootstrap, name, 2)
    return name


def test_preferred_leader_already_elected(shared_node, topic):
    result = _run("--election-type", "preferred", "--topic", topic, "--bootstrap-server", shared_node.bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Valid replica already elected for partitions {topic}-0, {topic}-1\n"


def test_all_partitions_with_nothing_to_do(shared_node, topic):
    result = _run("--preferred", "--all-topic-partitions", "--bootstrap-server", shared_node.bootstrap)
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr == "no partition needed a leader election\n"


def test_unknown_partitions_are_reported_per_partition(shared_node, topic, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0},
                                               {"topic": topic, "partition": 9},
                                               {"topic": "no-such-topic", "partition": 0}]}))
    result = _run("--unclean", "--path-to-json-file", str(plan), "--bootstrap-server", shared_node.bootstrap)
    assert _one_error(result) == "2 replica(s) could not be elected"
    lines = result.stdout.splitlines()
    assert lines[0] == f"Valid replica already elected for partitions {topic}-0"
    assert lines[1].startswith(f"Error completing leader election (UNCLEAN) for partition: {topic}-9: ")
    assert lines[2].startswith("Error completing leader election (UNCLEAN) for partition: no-such-topic-0: ")
    assert all("UNKNOWN_TOPIC_OR_PART" in line for line in lines[1:]), lines


def test_unknown_topic_is_one_error(shared_node):
    assert _one_error(_run("--preferred", "--topic", "no-such-topic", "--bootstrap-server",
                           shared_node.bootstrap)) == "topic 'no-such-topic' does not exist"


def test_unreachable_cluster_is_one_error():
    message = _one_error(_run("--preferred", "--all-topic-partitions", "--timeout", "2",
                              "--bootstrap-server", f"127.0.0.1:{free_port()}"))
    assert "127.0.0.1" in message
