"""Requests that used to raise inside a handler (a logged traceback and a dropped connection) get a
Kafka error code on the wire; the connection stays open and the node logs no traceback.

Found by fuzzing (issue 21): Metadata v10+ with a null topic name or an unknown TopicId, OffsetCommit
v2-4 with a RetentionTimeMs past the int64 range of the record's expire timestamp, and quorum
requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot) naming no partition or
another partition than ``__cluster_metadata``-0. The tests share one 1+1 cluster (``shared_cluster``).
"""
import socket
import struct

import pytest
from cluster import wait_for
from confluent_kafka import Consumer, TopicPartition

from tierlog.protocol import decode_response, encode_request
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

pytestmark = pytest.mark.cluster(controllers=1, brokers=1)
INT64_MAX = 2**63 - 1


class Connection:
    """One socket kept open across requests: an answer on it proves the node did not drop it."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.correlation_id = 0

    def request(self, api_key: int, version: int, body: dict) -> dict:
        self.correlation_id += 1
        frame = encode_request(api_key, version, self.correlation_id, "handler-errors", body)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        correlation_id, answer = decode_response(api_key, version, self._frame())
        assert correlation_id == self.correlation_id
        return answer

    def _frame(self) -> bytes:
        return self._exactly(struct.unpack(">i", self._exactly(4))[0])

    def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "the node closed the connection"
            buf += chunk
        return bytes(buf)

    def close(self):
        self.sock.close()


def assert_no_traceback(*nodes):
    for n in nodes:
        text = n.log_path.read_text(errors="replace")
        assert "Traceback" not in text, n.log_tail(60)


@pytest.mark.parametrize("version", [10, 11, 12, 13])
def test_metadata_by_null_name_or_unknown_topic_id(shared_cluster, version):
    broker = shared_cluster.brokers[0]
    conn = Connection(broker.port)
    unknown_id = bytes(range(1, 17))
    answer = conn.request(ApiKey.METADATA, version, {
        "Topics": [{"TopicId": unknown_id, "Name": None}, {"TopicId": bytes(16), "Name": None}],
        "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False})
    by_error = {t["ErrorCode"]: t for t in answer["Topics"]}
    assert set(by_error) == {ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.INVALID_REQUEST}
    assert by_error[ErrorCode.UNKNOWN_TOPIC_ID]["TopicId"] == unknown_id
    assert conn.request(ApiKey.API_VERSIONS, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})[
        "ErrorCode"] == ErrorCode.NONE
    conn.close()
    assert_no_traceback(broker)


def test_offset_commit_with_a_retention_past_int64(shared_cluster):
    broker = shared_cluster.brokers[0]
    conn = Connection(broker.port)
    topic = "retention-forever"
    conn.request(ApiKey.CREATE_TOPICS, 4, {"Topics": [{"Name": topic, "NumPartitions": 1, "ReplicationFactor": 1,
                                                       "Assignments": [], "Configs": []}], "timeoutMs": 10000})
    commit = {"GroupId": "forever", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "RetentionTimeMs": INT64_MAX,
              "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 42,
                                                         "CommittedMetadata": None}]}]}

    def committed():
        conn.request(ApiKey.FIND_COORDINATOR, 2, {"Key": "forever", "KeyType": 0})    # creates __consumer_offsets
        code = conn.request(ApiKey.OFFSET_COMMIT, 2, commit)["Topics"][0]["Partitions"][0]["ErrorCode"]
        assert code in (ErrorCode.NONE, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), code
        return code == ErrorCode.NONE

    wait_for(committed, what="the commit is accepted")
    conn.close()
    consumer = Consumer({"bootstrap.servers": shared_cluster.bootstrap, "group.id": "forever"})
    try:
        assert consumer.committed([TopicPartition(topic, 0)], timeout=20)[0].offset == 42
    finally:
        consumer.close()
    assert_no_traceback(broker)


QUORUM_BODIES = {   # each names no partition
    ApiKey.VOTE: {"ClusterId": "tierlog-test-cluster", "Topics": []},
    ApiKey.BEGIN_QUORUM_EPOCH: {"ClusterId": "tierlog-test-cluster", "Topics": []},
    ApiKey.END_QUORUM_EPOCH: {"ClusterId": "tierlog-test-cluster", "Topics": []},
    ApiKey.FETCH: {"ClusterId": "tierlog-test-cluster", "ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 0,
                   "Topics": [], "ForgottenTopicsData": [], "RackId": ""},
    ApiKey.FETCH_SNAPSHOT: {"ClusterId": "tierlog-test-cluster", "ReplicaId": -1, "Topics": []},
}
QUORUM_VERSIONS = {ApiKey.VOTE: 0, ApiKey.BEGIN_QUORUM_EPOCH: 0, ApiKey.END_QUORUM_EPOCH: 0, ApiKey.FETCH: 18,
                   ApiKey.FETCH_SNAPSHOT: 0}


def test_quorum_requests_without_our_partition(shared_cluster):
    controller = shared_cluster.controllers[0]
    conn = Connection(controller.port)
    for api_key, body in QUORUM_BODIES.items():
        assert conn.request(api_key, QUORUM_VERSIONS[api_key], body)["ErrorCode"] == ErrorCode.INVALID_REQUEST
    other = {"ClusterId": "tierlog-test-cluster", "Topics": [{"TopicName": "not-metadata", "Partitions": [
        {"PartitionIndex": 0, "ReplicaEpoch": 1, "ReplicaId": 9, "LastOffsetEpoch": 0, "LastOffset": 0}]}]}
    assert conn.request(ApiKey.VOTE, 0, other)["ErrorCode"] == ErrorCode.INVALID_REQUEST
    conn.close()
    assert_no_traceback(controller)
