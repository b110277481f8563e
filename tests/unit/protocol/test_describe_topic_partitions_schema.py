"""DescribeTopicPartitions (75) v0: golden bytes worked out by hand from Kafka's layout,
and both directions through kafka-python's independent codec (nullable Cursor, ELR)."""
import uuid

import pytest

from tierlog.protocol import APIS, ApiKey, decode_response, encode_response
from tierlog.protocol.codec import decode_struct, encode_struct

kafka_topics = pytest.importorskip("kafka.protocol.admin.topics")

SPEC = APIS[ApiKey.DESCRIBE_TOPIC_PARTITIONS]
TOPIC_ID = bytes(range(1, 17))

REQUEST_NO_CURSOR = bytes.fromhex(
    "02" "0274" "00"          # Topics: 1 entry, Name "t", entry tags
    "000007d0"                # ResponsePartitionLimit 2000
    "ff"                      # Cursor null
    "00")                     # tags
REQUEST_CURSOR = bytes.fromhex("02" "0274" "00" "000007d0" "01" "0274" "00000003" "00" "00")

RESPONSE = bytes.fromhex(
    "00000000"                                   # ThrottleTimeMs
    "02"                                         # Topics: 1 entry
    "0000" "0274" + TOPIC_ID.hex() + "00"        # ErrorCode, Name "t", TopicId, IsInternal
    + "02"                                       # Partitions: 1 entry
    "0000" "00000000" "00000001" "00000005"      # ErrorCode, index 0, leader 1, epoch 5
    "04" "00000001" "00000002" "00000003"        # ReplicaNodes [1, 2, 3]
    "02" "00000001"                              # IsrNodes [1]
    "02" "00000002"                              # EligibleLeaderReplicas [2]
    "00"                                         # LastKnownElr null
    "02" "00000003"                              # OfflineReplicas [3]
    "00"                                         # partition tags
    "80000000" "00"                              # TopicAuthorizedOperations, topic tags
    "01" "0275" "00000000" "00"                  # NextCursor {"u", 0}
    "00")                                        # tags

RESPONSE_VALUE = {
    "ThrottleTimeMs": 0,
    "Topics": [{"ErrorCode": 0, "Name": "t", "TopicId": TOPIC_ID, "IsInternal": False,
                "Partitions": [{"ErrorCode": 0, "PartitionIndex": 0, "LeaderId": 1, "LeaderEpoch": 5,
                                "ReplicaNodes": [1, 2, 3], "IsrNodes": [1], "EligibleLeaderReplicas": [2],
                                "LastKnownElr": None, "OfflineReplicas": [3], "LocalLogCoverage": []}],
                "TopicAuthorizedOperations": -2147483648}],
    "NextCursor": {"TopicName": "u", "PartitionIndex": 0},
}


def _encode(struct, value) -> bytes:
    return bytes(encode_struct(struct, 0, True, value))


def _decode(struct, data: bytes) -> dict:
    value, end = decode_struct(struct, 0, True, memoryview(data))
    assert end == len(data)
    return value


def test_spec_is_v0_flexible():
    assert (SPEC.name, SPEC.min_version, SPEC.max_version, SPEC.flexible_from) == (
        "DescribeTopicPartitions", 0, 0, 0)


@pytest.mark.parametrize("cursor, expected", [
    (None, REQUEST_NO_CURSOR), ({"TopicName": "t", "PartitionIndex": 3}, REQUEST_CURSOR)])
def test_request_golden(cursor, expected):
    value = {"Topics": [{"Name": "t"}], "ResponsePartitionLimit": 2000, "Cursor": cursor}
    assert _encode(SPEC.request, value).hex() == expected.hex()
    assert _decode(SPEC.request, expected) == value


def test_request_defaults_are_kafkas():
    assert SPEC.request.defaults(0) == {"Topics": [], "ResponsePartitionLimit": 2000, "Cursor": None}


def test_response_golden():
    assert _encode(SPEC.response, RESPONSE_VALUE).hex() == RESPONSE.hex()
    assert _decode(SPEC.response, RESPONSE) == RESPONSE_VALUE


@pytest.mark.parametrize("cursor", [None, ("t", 3)])
def test_kafka_python_requests_decode(cursor):
    cls = kafka_topics.DescribeTopicPartitionsRequest
    theirs = cls(topics=[cls.TopicRequest(name="t"), cls.TopicRequest(name="u")], response_partition_limit=7,
                 cursor=None if cursor is None else cls.Cursor(topic_name=cursor[0], partition_index=cursor[1]))
    ours = _decode(SPEC.request, bytes(theirs.encode(version=0)))
    assert ours["Topics"] == [{"Name": "t"}, {"Name": "u"}] and ours["ResponsePartitionLimit"] == 7
    assert ours["Cursor"] == (None if cursor is None else {"TopicName": cursor[0], "PartitionIndex": cursor[1]})


def test_kafka_python_decodes_our_response_frame():
    frame = b"".join(bytes(p) for p in encode_response(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 41, RESPONSE_VALUE))
    assert decode_response(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, frame) == (41, RESPONSE_VALUE)
    theirs = kafka_topics.DescribeTopicPartitionsResponse.decode(frame, version=0, header=True)
    assert theirs.header.correlation_id == 41
    [topic] = theirs.topics
    assert (topic.name, topic.topic_id, topic.error_code) == ("t", uuid.UUID(bytes=TOPIC_ID), 0)
    [p] = topic.partitions
    assert (p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes)) == (1, 5, [1, 2, 3], [1])
    assert list(p.eligible_leader_replicas) == [2] and p.last_known_elr is None
    assert list(p.offline_replicas) == [3]
    assert (theirs.next_cursor.topic_name, theirs.next_cursor.partition_index) == ("u", 0)


def test_local_log_coverage_is_a_tagged_field_kafka_python_skips():
    """tierlog's KIP-1303 extension: per-replica coverage under tag 1303."""
    cov = [{"BrokerId": 1, "LocalLogStartTimestamp": 1000, "LocalLogSizeBytes": 4096, "Eligible": False}]
    value = {**RESPONSE_VALUE, "Topics": [{**RESPONSE_VALUE["Topics"][0], "Partitions": [
        {**RESPONSE_VALUE["Topics"][0]["Partitions"][0], "LocalLogCoverage": cov}]}]}
    frame = b"".join(bytes(p) for p in encode_response(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 41, value))
    assert decode_response(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, frame) == (41, value)
    theirs = kafka_topics.DescribeTopicPartitionsResponse.decode(frame, version=0, header=True)
    assert list(theirs.topics[0].partitions[0].replica_nodes) == [1, 2, 3]
