"""ElectLeaders (43) over a socket to one tierlog node (broker + controller): versions and bad input."""
import uuid

import pytest
from clients import create_topic
from cluster import request

from tierlog.protocol import ErrorCode

pytestmark = pytest.mark.integration
ELECT_LEADERS = 43


def _results(resp) -> dict:
    return {(t["Topic"], r["PartitionId"]): r["ErrorCode"]
            for t in resp["ReplicaElectionResults"] for r in t["PartitionResult"]}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_version_answers_per_partition(shared_node, version):
    topic = f"wire-{uuid.uuid4().hex[:8]}"
    create_topic(shared_node.bootstrap, topic, 1)
    body = {"ElectionType": 0, "TopicPartitions": [{"Topic": topic, "Partitions": [0, 4]}], "TimeoutMs": 5000}
    resp = request("127.0.0.1", shared_node.port, ELECT_LEADERS, body, version=version)
    assert _results(resp) == {(topic, 0): ErrorCode.ELECTION_NOT_NEEDED,
                              (topic, 4): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_unknown_election_type_is_invalid_request(shared_node):
    body = {"ElectionType": 7, "TopicPartitions": None, "TimeoutMs": 5000}
    resp = request("127.0.0.1", shared_node.port, ELECT_LEADERS, body, version=2)
    assert resp["ErrorCode"] == ErrorCode.INVALID_REQUEST and resp["ReplicaElectionResults"] == []
