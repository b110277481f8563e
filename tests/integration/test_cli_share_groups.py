"""`tierlog share-groups` (KIP-932) as subprocesses against one tierlog node: list, describe (start
offsets, lag, members, state), reset-offsets (dry run, then --execute while the group is empty) and
delete, with a member joined over the wire (ShareGroupHeartbeat) and results checked through the
share-group APIs themselves, never through the command under test."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from clients import create_topic, produce_all
from cluster import request, wait_for
from nodeproc import NodeProcess
from test_share_groups import RETRIABLE, describe_offsets, share_beat, starts

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration
PREFIX = "tierlog: error: "


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    n = NodeProcess(tmp_path_factory.mktemp("share-cli") / "node-1", props={"offsets.topic.num.partitions": "2"})
    n.start()
    yield n
    if n.alive():
        n.stop()


def tierlog(node, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", "share-groups", *args, "--bootstrap-server",
                           node.bootstrap], check=False, capture_output=True, text=True, timeout=90)


def ok(node, *args: str) -> str:
    result = tierlog(node, *args)
    assert result.returncode == 0, f"tierlog share-groups {' '.join(args)} failed: {result.stderr}"
    return result.stdout


def one_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1 and "Traceback" not in result.stderr, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), result.stderr
    return lines[0][len(PREFIX):]


def test_list_describe_reset_and_delete_a_share_group(node):
    create_topic(node.bootstrap, "cli-jobs", 2)
    produce_all(node.bootstrap, "cli-jobs", [(i % 2, None, b"j%d" % i, None, None) for i in range(20)])
    def join():
        request("127.0.0.1", node.port, ApiKey.FIND_COORDINATOR, {"Key": "cli-sg", "KeyType": 0}, 2)  # creates
        resp = share_beat(node.port, "cli-sg", "m-1", 0, ["cli-jobs"])                  # __consumer_offsets
        return None if resp["ErrorCode"] in RETRIABLE else resp
    joined = wait_for(join, 60, "the member joined")
    assert joined["ErrorCode"] == 0
    assert json.loads(ok(node, "list", "--json")) == [{"group": "cli-sg", "state": "Stable"}]
    plain = ok(node, "list")                                    # piped: plain text, no table borders
    assert "cli-sg" in plain and "Stable" in plain and "│" not in plain
    (described,) = json.loads(ok(node, "describe", "cli-sg", "--json"))
    assert described["state"] == "Stable" and described["assignor"] == "simple"
    assert [(m["member_id"], sorted(m["assignment"])) for m in described["members"]] == [
        ("m-1", ["cli-jobs:0", "cli-jobs:1"])]
    assert [(p["partition"], p["start_offset"], p["lag"]) for p in described["partitions"]] == [
        (0, None, None), (1, None, None)]                       # assigned, nothing fetched: no state yet
    refused = one_error(tierlog(node, "reset-offsets", "--group", "cli-sg", "--topic", "cli-jobs",
                                "--to-earliest", "--execute"))
    assert "has no members" in refused and "it has 1" in refused
    assert share_beat(node.port, "cli-sg", "m-1", -1, None)["ErrorCode"] == 0
    plan = json.loads(ok(node, "reset-offsets", "--group", "cli-sg", "--topic", "cli-jobs:1", "--to-offset", "4",
                         "--json"))
    assert plan["executed"] is False and [(p["partition"], p["new_offset"]) for p in plan["partitions"]] == [(1, 4)]
    assert starts(describe_offsets(node.port, "cli-sg")) == {("cli-jobs", 0): -1, ("cli-jobs", 1): -1}
    ok(node, "reset-offsets", "--group", "cli-sg", "--topic", "cli-jobs", "--to-latest", "--execute")
    assert starts(describe_offsets(node.port, "cli-sg")) == {("cli-jobs", 0): 10, ("cli-jobs", 1): 10}
    ok(node, "reset-offsets", "--group", "cli-sg", "--all-topics", "--shift-by", "-3", "--execute")
    (after,) = json.loads(ok(node, "describe", "cli-sg", "--json"))
    assert [(p["partition"], p["start_offset"], p["lag"]) for p in after["partitions"]] == [(0, 7, 3), (1, 7, 3)]
    assert "START-OFFSET" in ok(node, "describe", "cli-sg") and "Empty" in ok(node, "describe", "cli-sg", "--state")
    assert ok(node, "delete", "cli-sg").strip() == "deleted share group cli-sg"
    assert describe_offsets(node.port, "cli-sg")["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert one_error(tierlog(node, "delete", "cli-sg")) == "share group 'cli-sg' does not exist"
    assert one_error(tierlog(node, "describe", "nobody")) == "share group 'nobody' does not exist"
