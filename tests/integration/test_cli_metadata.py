"""`tierlog metadata quorum|snapshots` against a real 3-controller + 1-broker cluster.

Issue 3 item 6. One cluster for the module; the snapshot props make the
controllers write a snapshot after a few topics.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from clients import create_topic
from cluster import Cluster, running, wait_for
from nodeproc import free_port

pytestmark = pytest.mark.integration

PROPS = {"controller.quorum.election.timeout.ms": "500", "controller.quorum.fetch.timeout.ms": "1000",
         "broker.heartbeat.interval.ms": "300", "broker.session.timeout.ms": "2000",
         "metadata.log.max.record.bytes.between.snapshots": "1024"}
TOPICS = [f"meta-{i}" for i in range(20)]


def tierlog(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TIERLOG_BOOTSTRAP"}
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args], capture_output=True,
                          text=True, timeout=60, env=env, check=False)


def ok(*args: str) -> str:
    result = tierlog(*args)
    assert result.returncode == 0, f"tierlog {' '.join(args)} failed: {result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One cluster for the module (not conftest's per-test one), with TOPICS created."""
    with running(Cluster(tmp_path_factory.mktemp("cli-metadata"), 3, 1, PROPS)) as c:
        c.wait_leader()
        for name in TOPICS:
            create_topic(c.bootstrap, name, 1)
        yield c


def _snapshot_files(cluster):
    return [p for c in cluster.controllers for p in (c.data_dir / "__cluster_metadata-0").glob("*.checkpoint")]


def test_quorum_json_through_the_broker(cluster):
    q = json.loads(ok("metadata", "quorum", "--bootstrap-server", cluster.bootstrap, "--json"))
    voters = {v["node_id"] for v in q["voters"]}
    assert voters == {c.node_id for c in cluster.controllers}
    assert q["leader_id"] in voters and q["leader_epoch"] >= 1
    assert [o["node_id"] for o in q["observers"]] == [cluster.brokers[0].node_id]
    assert q["high_watermark"] > 0 and q["cluster_id"] == "tierlog-test-cluster"
    assert all(r["lag"] >= 0 for r in q["voters"] + q["observers"])
    assert [v["status"] for v in q["voters"] if v["node_id"] == q["leader_id"]] == ["Leader"]
    assert {o["status"] for o in q["observers"]} == {"Observer"}
    # DescribeQuorum v2 (KIP-853): each voter's controller endpoint; a static quorum's directory ids are zero
    ports = {c.node_id: c.port for c in cluster.controllers}
    assert {v["node_id"]: v["endpoints"] for v in q["voters"]} == {
        n: [f"CONTROLLER://127.0.0.1:{port}"] for n, port in ports.items()}
    assert {r["directory_id"] for r in q["voters"] + q["observers"]} == {"AAAAAAAAAAAAAAAAAAAAAA"}


def test_quorum_text_from_the_leader_controller(cluster):
    leader = cluster.controller(cluster.wait_leader())
    out = ok("metadata", "quorum", "--bootstrap-server", f"127.0.0.1:{leader.port}")
    assert "LeaderId:" in out and "CurrentVoters:" in out and "HighWatermark:" in out
    assert "Leader" in out and "Follower" in out and "Observer" in out


def test_quorum_unreachable_server_is_one_error_line():
    result = tierlog("metadata", "quorum", "--bootstrap-server", f"127.0.0.1:{free_port()}", "--timeout", "3")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tierlog: error: cannot reach bootstrap server"), lines


def test_snapshots_list_and_print(cluster):
    wait_for(lambda: _snapshot_files(cluster), 20, "a metadata snapshot")
    node = next(c for c in cluster.controllers if list((c.data_dir / "__cluster_metadata-0").glob("*.checkpoint")))
    listed = json.loads(ok("metadata", "snapshots", "--dir", str(node.data_dir), "--json"))
    assert listed and all(s["size"] > 0 and s["end_offset"] > 0 for s in listed)
    assert "EndOffset" in ok("metadata", "snapshots", "--dir", str(node.data_dir / "__cluster_metadata-0"))

    lines = ok("metadata", "snapshots", "--dir", str(node.data_dir), "--print", "latest", "--json").splitlines()
    records = [json.loads(line) for line in lines]
    topic_names = {r["name"] for r in records if r["type"] == "TopicRecord"}
    assert topic_names & set(TOPICS)
    last = listed[-1]
    text = ok("metadata", "snapshots", "--dir", str(node.data_dir),
              "--print", f"{last['end_offset']}-{last['epoch']}")
    assert "TopicRecord name=" in text


def test_snapshots_missing_dir_and_snapshot_are_one_error_line(tmp_path):
    (tmp_path / "__cluster_metadata-0").mkdir()
    for args in (("--dir", str(tmp_path / "nope")), ("--dir", str(tmp_path), "--print", "latest"),
                 ("--dir", str(tmp_path), "--print", "5-1")):
        result = tierlog("metadata", "snapshots", *args)
        assert result.returncode == 1
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("tierlog: error: "), result.stderr
