"""Schemas of the share-group APIs (KIP-932): ShareGroupHeartbeat 1, ShareGroupDescribe 1,
ShareFetch 1-2 and ShareAcknowledge 1-2, against bytes written field by field from
Kafka's layouts, so a field out of order, a wrong version range or a flexible
version off by one fails here.  None of them is advertised yet (not served).
"""

import uuid

import pytest
from test_quorum_schemas import NO_TAGS, boolean, carr, cstr, golden, i8, i16, i32, i64, uvarint

from tierlog.protocol import APIS, ApiKey

TOPIC = uuid.UUID(int=0x1234).bytes
RECORDS = b"\x00" * 61     # stands in for a record batch: the codec carries it as bytes


def test_versions_are_kafkas():
    # Kafka 4.1 removed the 4.0 early-access v0 of all four; 4.2 added v2 of fetch and acknowledge
    assert [(APIS[k].min_version, APIS[k].max_version, APIS[k].flexible_from) for k in (
        ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE,
    )] == [(1, 1, 0), (1, 1, 1), (1, 2, 0), (1, 2, 0)]


def test_share_group_heartbeat_request():
    value = {"GroupId": "g", "MemberId": "m1", "MemberEpoch": 0, "RackId": None, "SubscribedTopicNames": ["t"]}
    expected = cstr("g") + cstr("m1") + i32(0) + cstr(None) + carr(cstr("t")) + NO_TAGS
    golden(ApiKey.SHARE_GROUP_HEARTBEAT, "request", 1, value, expected)


def test_share_group_heartbeat_response_with_assignment():
    value = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "MemberId": "m1", "MemberEpoch": 3,
             "HeartbeatIntervalMs": 5000,
             "Assignment": {"TopicPartitions": [{"TopicId": TOPIC, "Partitions": [0, 2]}]}}
    assignment = carr(TOPIC + carr(i32(0), i32(2)) + NO_TAGS) + NO_TAGS
    expected = (i32(0) + i16(0) + cstr(None) + cstr("m1") + i32(3) + i32(5000)
                + b"\x01" + assignment + NO_TAGS)       # a nullable struct: 1 then its fields
    golden(ApiKey.SHARE_GROUP_HEARTBEAT, "response", 1, value, expected)


def test_share_group_heartbeat_response_without_assignment():
    value = {"ThrottleTimeMs": 0, "ErrorCode": 25, "ErrorMessage": "unknown member", "MemberId": None,
             "MemberEpoch": -1, "HeartbeatIntervalMs": 0, "Assignment": None}
    expected = i32(0) + i16(25) + cstr("unknown member") + cstr(None) + i32(-1) + i32(0) + b"\xff" + NO_TAGS
    golden(ApiKey.SHARE_GROUP_HEARTBEAT, "response", 1, value, expected)


def test_share_group_describe():
    golden(ApiKey.SHARE_GROUP_DESCRIBE, "request", 1, {"GroupIds": ["g"], "IncludeAuthorizedOperations": True},
           carr(cstr("g")) + boolean(True) + NO_TAGS)
    member = {"MemberId": "m1", "RackId": None, "MemberEpoch": 2, "ClientId": "c", "ClientHost": "/h",
              "SubscribedTopicNames": ["t"],
              "Assignment": {"TopicPartitions": [{"TopicId": TOPIC, "TopicName": "t", "Partitions": [1]}]}}
    group = {"ErrorCode": 0, "ErrorMessage": None, "GroupId": "g", "GroupState": "Stable", "GroupEpoch": 2,
             "AssignmentEpoch": 2, "AssignorName": "simple", "Members": [member], "AuthorizedOperations": -2147483648}
    member_bytes = (cstr("m1") + cstr(None) + i32(2) + cstr("c") + cstr("/h") + carr(cstr("t"))
                    + carr(TOPIC + cstr("t") + carr(i32(1)) + NO_TAGS) + NO_TAGS + NO_TAGS)
    group_bytes = (i16(0) + cstr(None) + cstr("g") + cstr("Stable") + i32(2) + i32(2) + cstr("simple")
                   + carr(member_bytes) + i32(-2147483648) + NO_TAGS)
    golden(ApiKey.SHARE_GROUP_DESCRIBE, "response", 1, {"ThrottleTimeMs": 0, "Groups": [group]},
           i32(0) + carr(group_bytes) + NO_TAGS)


def _ack_batch(first: int, last: int, types: list[int]) -> bytes:
    return i64(first) + i64(last) + carr(*(i8(t) for t in types)) + NO_TAGS


@pytest.mark.parametrize("version", [1, 2])
def test_share_fetch_request_with_piggy_backed_acknowledgements(version):
    value = {"GroupId": "g", "MemberId": "m1", "ShareSessionEpoch": 1, "MaxWaitMs": 500, "MinBytes": 1,
             "MaxBytes": 52428800, "MaxRecords": 500, "BatchSize": 500,
             "Topics": [{"TopicId": TOPIC, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
                 {"FirstOffset": 0, "LastOffset": 2, "AcknowledgeTypes": [1, 2, 3]}]}]}],
             "ForgottenTopicsData": [{"TopicId": TOPIC, "Partitions": [1]}]}
    if version >= 2:
        value["ShareAcquireMode"] = 1
    head = cstr("g") + cstr("m1") + i32(1) + i32(500) + i32(1) + i32(52428800) + i32(500) + i32(500)
    mode = i8(1) if version >= 2 else b""
    topics = carr(TOPIC + carr(i32(0) + carr(_ack_batch(0, 2, [1, 2, 3])) + NO_TAGS) + NO_TAGS)
    forgotten = carr(TOPIC + carr(i32(1)) + NO_TAGS)
    golden(ApiKey.SHARE_FETCH, "request", version, value, head + mode + topics + forgotten + NO_TAGS)


@pytest.mark.parametrize("version", [1, 2])
def test_share_fetch_response(version):
    partition = {"PartitionIndex": 0, "ErrorCode": 0, "ErrorMessage": None, "AcknowledgeErrorCode": 0,
                 "AcknowledgeErrorMessage": None, "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 4},
                 "Records": RECORDS, "AcquiredRecords": [{"FirstOffset": 0, "LastOffset": 9, "DeliveryCount": 1}]}
    value = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "AcquisitionLockTimeoutMs": 30000,
             "Responses": [{"TopicId": TOPIC, "Partitions": [partition]}],
             "NodeEndpoints": [{"NodeId": 1, "Host": "h", "Port": 9092, "Rack": None}]}
    partition_bytes = (i32(0) + i16(0) + cstr(None) + i16(0) + cstr(None) + i32(1) + i32(4) + NO_TAGS
                       + uvarint(len(RECORDS) + 1) + RECORDS + carr(i64(0) + i64(9) + i16(1) + NO_TAGS) + NO_TAGS)
    expected = (i32(0) + i16(0) + cstr(None) + i32(30000) + carr(TOPIC + carr(partition_bytes) + NO_TAGS)
                + carr(i32(1) + cstr("h") + i32(9092) + cstr(None) + NO_TAGS) + NO_TAGS)
    golden(ApiKey.SHARE_FETCH, "response", version, value, expected)


@pytest.mark.parametrize("version", [1, 2])
def test_share_acknowledge(version):
    value = {"GroupId": "g", "MemberId": "m1", "ShareSessionEpoch": 2,
             "Topics": [{"TopicId": TOPIC, "Partitions": [{"PartitionIndex": 3, "AcknowledgementBatches": [
                 {"FirstOffset": 5, "LastOffset": 5, "AcknowledgeTypes": [3]}]}]}]}
    renew = boolean(False) if version >= 2 else b""
    expected = (cstr("g") + cstr("m1") + i32(2) + renew
                + carr(TOPIC + carr(i32(3) + carr(_ack_batch(5, 5, [3])) + NO_TAGS) + NO_TAGS) + NO_TAGS)
    golden(ApiKey.SHARE_ACKNOWLEDGE, "request", version, value, expected)
    response = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None,
                "Responses": [{"TopicId": TOPIC, "Partitions": [{"PartitionIndex": 3, "ErrorCode": 0,
                                                                 "ErrorMessage": None,
                                                                 "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 4}}]}],
                "NodeEndpoints": []}
    lock = b""
    if version >= 2:            # KIP-1222: the lock duration in the acknowledge response too
        response["AcquisitionLockTimeoutMs"] = 30000
        lock = i32(30000)
    partition_bytes = i32(3) + i16(0) + cstr(None) + i32(1) + i32(4) + NO_TAGS + NO_TAGS
    expected = (i32(0) + i16(0) + cstr(None) + lock + carr(TOPIC + carr(partition_bytes) + NO_TAGS)
                + carr() + NO_TAGS)
    golden(ApiKey.SHARE_ACKNOWLEDGE, "response", version, response, expected)
