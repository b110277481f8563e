"""Schemas of the metadata quorum (KIP-595/630), controller and replication APIs,
the KRaft control records, Metadata v13 and the KIP-1303 fields of Fetch and
AlterPartition.

Golden bytes are written field by field with ``struct.pack`` from Kafka's
layouts, so a field out of order or a wrong flexible version fails here.
"""

import struct
import types
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import body_values

from tierlog.protocol import (
    APIS,
    ApiKey,
    ProtocolError,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from tierlog.protocol.codec import decode_struct, encode_struct
from tierlog.protocol.messages import alter_partition, fetch
from tierlog.protocol.messages import control_records as cr

# -- hand encoders --------------------------------------------------------------


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def u16(v): return struct.pack(">H", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def boolean(v): return b"\x01" if v else b"\x00"


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s):  # compact (nullable) string
    if s is None:
        return b"\x00"
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def string(s):  # classic (nullable) string
    if s is None:
        return i16(-1)
    raw = s.encode()
    return i16(len(raw)) + raw


def carr(*items):  # compact array of already-encoded items
    return uvarint(len(items) + 1) + b"".join(items)


def arr(*items):  # classic array
    return i32(len(items)) + b"".join(items)


def tags(*fields):  # tagged-field section; fields = (tag, encoded value)
    out = uvarint(len(fields))
    for tag, data in fields:
        out += uvarint(tag) + uvarint(len(data)) + data
    return out


NO_TAGS = b"\x00"
DIR_A = bytes(range(16))
DIR_B = bytes(range(16, 32))
META = "__cluster_metadata"


def _struct_of(key, kind):
    spec = APIS[key]
    return spec, (spec.request if kind == "request" else spec.response)


def body(key, kind, version, value) -> bytes:
    spec, s = _struct_of(key, kind)
    return bytes(encode_struct(s, version, spec.is_flexible(version), value))


def parse(key, kind, version, data) -> dict:
    spec, s = _struct_of(key, kind)
    value, end = decode_struct(s, version, spec.is_flexible(version), memoryview(data))
    assert end == len(data)
    return value


def golden(key, kind, version, value, expected: bytes) -> None:
    """Our encoding is ``expected`` and decodes back to ``value``'s fields."""
    assert body(key, kind, version, value).hex() == expected.hex()
    decoded = parse(key, kind, version, expected)
    _, s = _struct_of(key, kind)
    assert decoded == {**s.defaults(version), **decoded}
    _assert_subset(value, decoded)


def _assert_subset(given, decoded):
    if isinstance(given, dict):
        for k, v in given.items():
            _assert_subset(v, decoded[k])
    elif isinstance(given, list):
        assert len(given) == len(decoded)
        for a, b in zip(given, decoded):
            _assert_subset(a, b)
    else:
        assert decoded == given


# -- the registry ---------------------------------------------------------------

NEW_APIS = {  # key: (name, min, max, flexible from)
    ApiKey.ELECT_LEADERS: ("ElectLeaders", 0, 2, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ("AlterPartitionReassignments", 0, 1, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ("ListPartitionReassignments", 0, 0, 0),
    ApiKey.VOTE: ("Vote", 0, 2, 0),
    ApiKey.BEGIN_QUORUM_EPOCH: ("BeginQuorumEpoch", 0, 1, 1),
    ApiKey.END_QUORUM_EPOCH: ("EndQuorumEpoch", 0, 1, 1),
    ApiKey.DESCRIBE_QUORUM: ("DescribeQuorum", 0, 2, 0),
    ApiKey.ALTER_PARTITION: ("AlterPartition", 0, 4, 0),
    ApiKey.FETCH_SNAPSHOT: ("FetchSnapshot", 0, 1, 0),
    ApiKey.BROKER_REGISTRATION: ("BrokerRegistration", 0, 4, 0),
    ApiKey.BROKER_HEARTBEAT: ("BrokerHeartbeat", 0, 1, 0),
    ApiKey.UNREGISTER_BROKER: ("UnregisterBroker", 0, 0, 0),
    ApiKey.ALLOCATE_PRODUCER_IDS: ("AllocateProducerIds", 0, 0, 0),
    ApiKey.ADD_RAFT_VOTER: ("AddRaftVoter", 0, 1, 0),
    ApiKey.REMOVE_RAFT_VOTER: ("RemoveRaftVoter", 0, 0, 0),
    ApiKey.UPDATE_RAFT_VOTER: ("UpdateRaftVoter", 0, 0, 0),
}


@pytest.mark.parametrize("key", sorted(NEW_APIS))
def test_registered_with_kafka_versions(key):
    spec = APIS[key]
    assert (spec.name, spec.min_version, spec.max_version, spec.flexible_from) == NEW_APIS[key]


def test_metadata_and_fetch_ranges():
    assert (APIS[ApiKey.METADATA].max_version, APIS[ApiKey.METADATA].flexible_from) == (13, 9)
    assert (APIS[ApiKey.FETCH].max_version, APIS[ApiKey.FETCH].flexible_from) == (19, 12)
    assert fetch.LOCAL_LOG_STATE_VERSION == 19
    assert alter_partition.LOCAL_LOG_STATE_VERSION == 4


def test_schemas_do_not_change_what_the_broker_advertises():
    from tierlog.broker.apis import REGISTRY
    # admin APIs the brokers forward to the active controller
    served_by_brokers = {ApiKey.DESCRIBE_QUORUM, ApiKey.ELECT_LEADERS, ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                         ApiKey.LIST_PARTITION_REASSIGNMENTS}
    for key in set(NEW_APIS) - served_by_brokers:
        assert key not in REGISTRY, f"schema for {key!r} must not add a broker handler"
    assert REGISTRY[ApiKey.METADATA].MAX_VERSION == 13
    for key, module in REGISTRY.items():   # whatever is advertised has schemas
        assert APIS[key].min_version <= module.MIN_VERSION
        assert APIS[key].max_version >= module.MAX_VERSION


# -- round trips ----------------------------------------------------------------

_CASES = [(key, kind, v) for key in sorted(NEW_APIS) for kind in ("request", "response")
          for v in range(NEW_APIS[key][1], NEW_APIS[key][2] + 1)]
_CASES += [(ApiKey.METADATA, kind, 13) for kind in ("request", "response")]
_CASES += [(ApiKey.FETCH, kind, v) for kind in ("request", "response") for v in (17, 18, 19)]


def _frame(key, kind, version, value) -> bytes:
    if kind == "request":
        return encode_request(key, version, 7, "quorum", value)
    return b"".join(bytes(p) for p in encode_response(key, version, 7, value))


def _unframe(key, kind, version, frame) -> dict:
    if kind == "request":
        header, offset = decode_request_header(frame)
        assert (header.api_key, header.api_version, header.correlation_id) == (key, version, 7)
        return decode_request(key, version, frame, offset)
    correlation_id, value = decode_response(key, version, frame)
    assert correlation_id == 7
    return value


@pytest.mark.parametrize("key,kind,version", _CASES)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_every_version(key, kind, version, data):
    value = data.draw(body_values(APIS[key], kind, version))
    frame = _frame(key, kind, version, value)
    assert _unframe(key, kind, version, frame) == value
    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    with pytest.raises(ProtocolError):
        _unframe(key, kind, version, frame[:cut])


@pytest.mark.parametrize("key,kind,version", _CASES)
def test_empty_value_is_all_defaults(key, kind, version):
    _, s = _struct_of(key, kind)
    assert _unframe(key, kind, version, _frame(key, kind, version, {})) == s.defaults(version)


# -- Vote -----------------------------------------------------------------------

def _vote_partition(version):
    p = {"PartitionIndex": 0, "ReplicaEpoch": 5, "ReplicaId": 2,
         "LastOffsetEpoch": 4, "LastOffset": 100}
    if version >= 1:
        p.update(ReplicaDirectoryId=DIR_A, VoterDirectoryId=DIR_B)
    if version >= 2:
        p["PreVote"] = True
    return p


def test_vote_v0_request_golden():
    value = {"ClusterId": "c1", "Topics": [{"TopicName": META, "Partitions": [_vote_partition(0)]}]}
    partition = i32(0) + i32(5) + i32(2) + i32(4) + i64(100) + NO_TAGS
    expected = cstr("c1") + carr(cstr(META) + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.VOTE, "request", 0, value, expected)


def test_vote_v2_request_golden_with_directory_ids_and_pre_vote():
    value = {"ClusterId": None, "VoterId": 3,
             "Topics": [{"TopicName": META, "Partitions": [_vote_partition(2)]}]}
    partition = (i32(0) + i32(5) + i32(2) + DIR_A + DIR_B + i32(4) + i64(100)
                 + boolean(True) + NO_TAGS)
    expected = cstr(None) + i32(3) + carr(cstr(META) + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.VOTE, "request", 2, value, expected)


def test_vote_v1_response_golden_with_node_endpoints_tag():
    value = {"ErrorCode": 0, "Topics": [{"TopicName": META, "Partitions": [
        {"PartitionIndex": 0, "ErrorCode": 0, "LeaderId": 1, "LeaderEpoch": 6, "VoteGranted": True}]}],
        "NodeEndpoints": [{"NodeId": 1, "Host": "h1", "Port": 9093}]}
    partition = i32(0) + i16(0) + i32(1) + i32(6) + boolean(True) + NO_TAGS
    endpoints = carr(i32(1) + cstr("h1") + u16(9093) + NO_TAGS)
    expected = i16(0) + carr(cstr(META) + carr(partition) + NO_TAGS) + tags((0, endpoints))
    golden(ApiKey.VOTE, "response", 1, value, expected)


def test_vote_response_tag_absent_when_default():
    value = {"ErrorCode": 0, "Topics": []}
    assert body(ApiKey.VOTE, "response", 1, value) == i16(0) + carr() + NO_TAGS
    assert body(ApiKey.VOTE, "response", 1, {**value, "NodeEndpoints": []}) == i16(0) + carr() + NO_TAGS
    assert parse(ApiKey.VOTE, "response", 1, i16(0) + carr() + NO_TAGS)["NodeEndpoints"] == []


def test_vote_pre_vote_needs_v2():
    value = {"Topics": [{"TopicName": META, "Partitions": [{"PartitionIndex": 0}]}]}

    def partition(version):
        return parse(ApiKey.VOTE, "request", version, body(ApiKey.VOTE, "request", version, value))[
            "Topics"][0]["Partitions"][0]
    assert "PreVote" not in partition(1)
    assert partition(2)["PreVote"] is False


# -- BeginQuorumEpoch / EndQuorumEpoch -----------------------------------------

def test_begin_quorum_epoch_v0_request_golden_is_not_flexible():
    value = {"ClusterId": "c1", "Topics": [{"TopicName": META, "Partitions": [
        {"PartitionIndex": 0, "LeaderId": 1, "LeaderEpoch": 7}]}]}
    expected = string("c1") + arr(string(META) + arr(i32(0) + i32(1) + i32(7)))
    golden(ApiKey.BEGIN_QUORUM_EPOCH, "request", 0, value, expected)


def test_begin_quorum_epoch_v1_request_golden():
    value = {"ClusterId": "c1", "VoterId": 2,
             "Topics": [{"TopicName": META, "Partitions": [
                 {"PartitionIndex": 0, "VoterDirectoryId": DIR_A, "LeaderId": 1, "LeaderEpoch": 7}]}],
             "LeaderEndpoints": [{"Name": "CONTROLLER", "Host": "h1", "Port": 9093}]}
    partition = i32(0) + DIR_A + i32(1) + i32(7) + NO_TAGS
    expected = (cstr("c1") + i32(2) + carr(cstr(META) + carr(partition) + NO_TAGS)
                + carr(cstr("CONTROLLER") + cstr("h1") + u16(9093) + NO_TAGS) + NO_TAGS)
    golden(ApiKey.BEGIN_QUORUM_EPOCH, "request", 1, value, expected)


def test_begin_quorum_epoch_v0_response_golden():
    value = {"ErrorCode": 0, "Topics": [{"TopicName": META, "Partitions": [
        {"PartitionIndex": 0, "ErrorCode": 0, "LeaderId": 1, "LeaderEpoch": 7}]}]}
    expected = i16(0) + arr(string(META) + arr(i32(0) + i16(0) + i32(1) + i32(7)))
    golden(ApiKey.BEGIN_QUORUM_EPOCH, "response", 0, value, expected)


def test_end_quorum_epoch_v0_request_golden_with_preferred_successors():
    value = {"ClusterId": None, "Topics": [{"TopicName": META, "Partitions": [
        {"PartitionIndex": 0, "LeaderId": 1, "LeaderEpoch": 7, "PreferredSuccessors": [2, 3]}]}]}
    partition = i32(0) + i32(1) + i32(7) + arr(i32(2), i32(3))
    expected = string(None) + arr(string(META) + arr(partition))
    golden(ApiKey.END_QUORUM_EPOCH, "request", 0, value, expected)


def test_end_quorum_epoch_v1_request_golden_with_preferred_candidates():
    value = {"ClusterId": "c1", "Topics": [{"TopicName": META, "Partitions": [
        {"PartitionIndex": 0, "LeaderId": 1, "LeaderEpoch": 7,
         "PreferredCandidates": [{"CandidateId": 2, "CandidateDirectoryId": DIR_B}]}]}],
        "LeaderEndpoints": []}
    partition = i32(0) + i32(1) + i32(7) + carr(i32(2) + DIR_B + NO_TAGS) + NO_TAGS
    expected = cstr("c1") + carr(cstr(META) + carr(partition) + NO_TAGS) + carr() + NO_TAGS
    golden(ApiKey.END_QUORUM_EPOCH, "request", 1, value, expected)
    assert "PreferredSuccessors" not in parse(ApiKey.END_QUORUM_EPOCH, "request", 1, expected)["Topics"][0][
        "Partitions"][0]


def test_end_quorum_epoch_v1_response_node_endpoints_tag():
    value = {"ErrorCode": 0, "Topics": [], "NodeEndpoints": [{"NodeId": 4, "Host": "h", "Port": 1}]}
    expected = i16(0) + carr() + tags((0, carr(i32(4) + cstr("h") + u16(1) + NO_TAGS)))
    golden(ApiKey.END_QUORUM_EPOCH, "response", 1, value, expected)


# -- DescribeQuorum -------------------------------------------------------------

def test_describe_quorum_v0_request_golden():
    value = {"Topics": [{"TopicName": META, "Partitions": [{"PartitionIndex": 0}]}]}
    expected = carr(cstr(META) + carr(i32(0) + NO_TAGS) + NO_TAGS) + NO_TAGS
    golden(ApiKey.DESCRIBE_QUORUM, "request", 0, value, expected)


def test_describe_quorum_v1_response_golden():
    voter = {"ReplicaId": 1, "LogEndOffset": 50, "LastFetchTimestamp": 1000, "LastCaughtUpTimestamp": 900}
    value = {"ErrorCode": 0, "Topics": [{"TopicName": META, "Partitions": [
        {"PartitionIndex": 0, "ErrorCode": 0, "LeaderId": 1, "LeaderEpoch": 3, "HighWatermark": 49,
         "CurrentVoters": [voter], "Observers": []}]}]}
    replica = i32(1) + i64(50) + i64(1000) + i64(900) + NO_TAGS
    partition = i32(0) + i16(0) + i32(1) + i32(3) + i64(49) + carr(replica) + carr() + NO_TAGS
    expected = i16(0) + carr(cstr(META) + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.DESCRIBE_QUORUM, "response", 1, value, expected)


def test_describe_quorum_v2_response_golden():
    voter = {"ReplicaId": 1, "ReplicaDirectoryId": DIR_A, "LogEndOffset": 50,
             "LastFetchTimestamp": -1, "LastCaughtUpTimestamp": -1}
    value = {"ErrorCode": 0, "ErrorMessage": None, "Topics": [{"TopicName": META, "Partitions": [
        {"PartitionIndex": 0, "ErrorCode": 0, "ErrorMessage": "m", "LeaderId": 1, "LeaderEpoch": 3,
         "HighWatermark": 49, "CurrentVoters": [voter], "Observers": []}]}],
        "Nodes": [{"NodeId": 1, "Listeners": [{"Name": "CONTROLLER", "Host": "h1", "Port": 9093}]}]}
    replica = i32(1) + DIR_A + i64(50) + i64(-1) + i64(-1) + NO_TAGS
    partition = (i32(0) + i16(0) + cstr("m") + i32(1) + i32(3) + i64(49)
                 + carr(replica) + carr() + NO_TAGS)
    nodes = carr(i32(1) + carr(cstr("CONTROLLER") + cstr("h1") + u16(9093) + NO_TAGS) + NO_TAGS)
    expected = i16(0) + cstr(None) + carr(cstr(META) + carr(partition) + NO_TAGS) + nodes + NO_TAGS
    golden(ApiKey.DESCRIBE_QUORUM, "response", 2, value, expected)


# -- FetchSnapshot --------------------------------------------------------------

def _snapshot_request_partition(**extra):
    return {"Partition": 0, "CurrentLeaderEpoch": 3, "SnapshotId": {"EndOffset": 40, "Epoch": 2},
            "Position": 1024, **extra}


def test_fetch_snapshot_v0_request_golden_with_cluster_id_tag():
    value = {"ClusterId": "c1", "ReplicaId": 2, "MaxBytes": 1 << 20,
             "Topics": [{"Name": META, "Partitions": [_snapshot_request_partition()]}]}
    partition = i32(0) + i32(3) + (i64(40) + i32(2) + NO_TAGS) + i64(1024) + NO_TAGS
    expected = (i32(2) + i32(1 << 20) + carr(cstr(META) + carr(partition) + NO_TAGS)
                + tags((0, cstr("c1"))))
    golden(ApiKey.FETCH_SNAPSHOT, "request", 0, value, expected)


def test_fetch_snapshot_request_tags_absent_when_default():
    value = {"ClusterId": None, "Topics": [{"Name": META, "Partitions": [
        _snapshot_request_partition(ReplicaDirectoryId=bytes(16))]}]}
    partition = i32(0) + i32(3) + (i64(40) + i32(2) + NO_TAGS) + i64(1024) + NO_TAGS
    expected = i32(-1) + i32(0x7FFFFFFF) + carr(cstr(META) + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.FETCH_SNAPSHOT, "request", 1, value, expected)
    decoded = parse(ApiKey.FETCH_SNAPSHOT, "request", 1, expected)
    assert decoded["ClusterId"] is None
    assert decoded["Topics"][0]["Partitions"][0]["ReplicaDirectoryId"] == bytes(16)


def test_fetch_snapshot_v1_request_replica_directory_id_tag():
    value = {"ClusterId": None, "ReplicaId": 2, "MaxBytes": 100, "Topics": [
        {"Name": META, "Partitions": [_snapshot_request_partition(ReplicaDirectoryId=DIR_A)]}]}
    partition = i32(0) + i32(3) + (i64(40) + i32(2) + NO_TAGS) + i64(1024) + tags((0, DIR_A))
    expected = i32(2) + i32(100) + carr(cstr(META) + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.FETCH_SNAPSHOT, "request", 1, value, expected)


def test_fetch_snapshot_v0_response_golden_with_current_leader_tag():
    chunk = b"snapshot-bytes"
    value = {"ThrottleTimeMs": 0, "ErrorCode": 0, "Topics": [{"Name": META, "Partitions": [
        {"Index": 0, "ErrorCode": 0, "SnapshotId": {"EndOffset": 40, "Epoch": 2},
         "CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 3}, "Size": 5000, "Position": 1024,
         "UnalignedRecords": chunk}]}]}
    leader = i32(1) + i32(3) + NO_TAGS
    partition = (i32(0) + i16(0) + (i64(40) + i32(2) + NO_TAGS) + i64(5000) + i64(1024)
                 + uvarint(len(chunk) + 1) + chunk + tags((0, leader)))
    expected = i32(0) + i16(0) + carr(cstr(META) + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.FETCH_SNAPSHOT, "response", 0, value, expected)
    records = parse(ApiKey.FETCH_SNAPSHOT, "response", 0, expected)["Topics"][0]["Partitions"][0][
        "UnalignedRecords"]
    assert bytes(records) == chunk


def test_fetch_snapshot_response_current_leader_absent_when_default():
    partition = {"Index": 0, "ErrorCode": 0, "SnapshotId": {"EndOffset": 1, "Epoch": 1}, "Size": 0,
                 "Position": 0, "UnalignedRecords": b""}
    plain = body(ApiKey.FETCH_SNAPSHOT, "response", 1, {"Topics": [{"Name": "t", "Partitions": [partition]}]})
    explicit = body(ApiKey.FETCH_SNAPSHOT, "response", 1, {"Topics": [{"Name": "t", "Partitions": [
        {**partition, "CurrentLeader": {"LeaderId": 0, "LeaderEpoch": 0}}]}], "NodeEndpoints": []})
    assert plain == explicit
    decoded = parse(ApiKey.FETCH_SNAPSHOT, "response", 1, plain)
    assert decoded["Topics"][0]["Partitions"][0]["CurrentLeader"] == {"LeaderId": 0, "LeaderEpoch": 0}
    assert decoded["NodeEndpoints"] == []


def test_fetch_snapshot_v1_response_node_endpoints_tag():
    value = {"ThrottleTimeMs": 0, "ErrorCode": 0, "Topics": [],
             "NodeEndpoints": [{"NodeId": 1, "Host": "h1", "Port": 9093}]}
    expected = i32(0) + i16(0) + carr() + tags((0, carr(i32(1) + cstr("h1") + u16(9093) + NO_TAGS)))
    golden(ApiKey.FETCH_SNAPSHOT, "response", 1, value, expected)


# -- AlterPartition (KIP-1303 v4) -----------------------------------------------

_TOPIC_ID = uuid.UUID(int=7).bytes


def _alter_partition_request(version, isr):
    return {"BrokerId": 1, "BrokerEpoch": 10, "Topics": [{"TopicId": _TOPIC_ID, "Partitions": [
        {"PartitionIndex": 0, "LeaderEpoch": 4, "NewIsrWithEpochs": isr,
         "LeaderRecoveryState": 0, "PartitionEpoch": 9}]}]}


def test_alter_partition_v3_request_golden():
    value = _alter_partition_request(3, [{"BrokerId": 1, "BrokerEpoch": 10}, {"BrokerId": 2, "BrokerEpoch": 11}])
    isr = carr(i32(1) + i64(10) + NO_TAGS, i32(2) + i64(11) + NO_TAGS)
    partition = i32(0) + i32(4) + isr + i8(0) + i32(9) + NO_TAGS
    expected = i32(1) + i64(10) + carr(_TOPIC_ID + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.ALTER_PARTITION, "request", 3, value, expected)


def test_alter_partition_v4_request_golden_with_local_log_state():
    isr = [{"BrokerId": 1, "BrokerEpoch": 10, "LocalLogStartTimestamp": 1_700_000_000_000,
            "LocalLogSizeBytes": 5 << 30},
           {"BrokerId": 2, "BrokerEpoch": 11}]   # unknown: both -1
    value = _alter_partition_request(4, isr)
    entries = carr(i32(1) + i64(10) + i64(1_700_000_000_000) + i64(5 << 30) + NO_TAGS,
                   i32(2) + i64(11) + i64(-1) + i64(-1) + NO_TAGS)
    partition = i32(0) + i32(4) + entries + i8(0) + i32(9) + NO_TAGS
    expected = i32(1) + i64(10) + carr(_TOPIC_ID + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.ALTER_PARTITION, "request", 4, value, expected)
    decoded = parse(ApiKey.ALTER_PARTITION, "request", 4, expected)
    second = decoded["Topics"][0]["Partitions"][0]["NewIsrWithEpochs"][1]
    assert (second["LocalLogStartTimestamp"], second["LocalLogSizeBytes"]) == (-1, -1)


def test_alter_partition_local_log_state_is_not_in_v3():
    v3 = parse(ApiKey.ALTER_PARTITION, "request", 3, body(ApiKey.ALTER_PARTITION, "request", 3,
               _alter_partition_request(3, [{"BrokerId": 1, "BrokerEpoch": 10}])))
    assert set(v3["Topics"][0]["Partitions"][0]["NewIsrWithEpochs"][0]) == {"BrokerId", "BrokerEpoch"}


def test_alter_partition_v0_request_uses_names_and_new_isr():
    value = {"BrokerId": 1, "BrokerEpoch": 10, "Topics": [{"TopicName": "t", "Partitions": [
        {"PartitionIndex": 0, "LeaderEpoch": 4, "NewIsr": [1, 2], "PartitionEpoch": 9}]}]}
    partition = i32(0) + i32(4) + carr(i32(1), i32(2)) + i32(9) + NO_TAGS
    expected = i32(1) + i64(10) + carr(cstr("t") + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.ALTER_PARTITION, "request", 0, value, expected)


def test_alter_partition_v4_response_is_v3():
    value = {"ThrottleTimeMs": 0, "ErrorCode": 0, "Topics": [{"TopicId": _TOPIC_ID, "Partitions": [
        {"PartitionIndex": 0, "ErrorCode": 0, "LeaderId": 1, "LeaderEpoch": 4, "Isr": [1, 2],
         "LeaderRecoveryState": 0, "PartitionEpoch": 10}]}]}
    assert body(ApiKey.ALTER_PARTITION, "response", 4, value) == body(
        ApiKey.ALTER_PARTITION, "response", 3, value)


# -- Fetch (v17/v18 Kafka, v19 KIP-1303) ----------------------------------------

def _fetch_request(version, **partition_extra):
    partition = {"Partition": 0, "CurrentLeaderEpoch": 4, "FetchOffset": 100, "LastFetchedEpoch": 3,
                 "LogStartOffset": 0, "PartitionMaxBytes": 1 << 20, **partition_extra}
    return {"ReplicaState": {"ReplicaId": 2, "ReplicaEpoch": 8}, "MaxWaitMs": 500, "MinBytes": 1,
            "MaxBytes": 1 << 24, "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
            "Topics": [{"TopicId": _TOPIC_ID, "Partitions": [partition]}],
            "ForgottenTopicsData": [], "RackId": ""}


def _fetch_request_bytes(partition_bytes):
    replica_state = i32(2) + i64(8) + NO_TAGS
    return (i32(500) + i32(1) + i32(1 << 24) + i8(0) + i32(0) + i32(-1)
            + carr(_TOPIC_ID + carr(partition_bytes) + NO_TAGS) + carr() + cstr("")
            + tags((1, replica_state)))


_FETCH_PARTITION_HEAD = i32(0) + i32(4) + i64(100) + i32(3) + i64(0) + i32(1 << 20)


def test_fetch_v19_request_golden_with_local_log_state():
    value = _fetch_request(19, LocalLogStartTimestamp=1_700_000_000_000, LocalLogSizeBytes=123456)
    partition = _FETCH_PARTITION_HEAD + i64(1_700_000_000_000) + i64(123456) + NO_TAGS
    golden(ApiKey.FETCH, "request", 19, value, _fetch_request_bytes(partition))


def test_fetch_v19_local_log_state_defaults_to_minus_one():
    partition = _FETCH_PARTITION_HEAD + i64(-1) + i64(-1) + NO_TAGS
    assert body(ApiKey.FETCH, "request", 19, _fetch_request(19)) == _fetch_request_bytes(partition)


def test_fetch_v18_request_has_no_local_log_state_and_tags_high_watermark():
    value = _fetch_request(18, ReplicaDirectoryId=DIR_A, HighWatermark=99)
    partition = _FETCH_PARTITION_HEAD + tags((0, DIR_A), (1, i64(99)))
    golden(ApiKey.FETCH, "request", 18, value, _fetch_request_bytes(partition))
    decoded = parse(ApiKey.FETCH, "request", 18, _fetch_request_bytes(partition))
    assert "LocalLogStartTimestamp" not in decoded["Topics"][0]["Partitions"][0]


def test_fetch_v18_tags_absent_at_defaults():
    partition = _FETCH_PARTITION_HEAD + NO_TAGS
    assert body(ApiKey.FETCH, "request", 18, _fetch_request(18)) == _fetch_request_bytes(partition)
    decoded = parse(ApiKey.FETCH, "request", 18, _fetch_request_bytes(partition))
    fp = decoded["Topics"][0]["Partitions"][0]
    assert (fp["ReplicaDirectoryId"], fp["HighWatermark"]) == (bytes(16), (1 << 63) - 1)


def test_fetch_v17_has_directory_id_only():
    value = _fetch_request(17, ReplicaDirectoryId=DIR_B)
    golden(ApiKey.FETCH, "request", 17, value, _fetch_request_bytes(_FETCH_PARTITION_HEAD + tags((0, DIR_B))))


@pytest.mark.parametrize("version", [17, 18, 19])
def test_fetch_responses_after_16_are_16(version):
    value = {"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 1, "Responses": [
        {"TopicId": _TOPIC_ID, "Partitions": [{"PartitionIndex": 0, "ErrorCode": 0, "HighWatermark": 5,
                                               "Records": b"xyz"}]}],
        "NodeEndpoints": [{"NodeId": 1, "Host": "h", "Port": 9092, "Rack": None}]}
    assert body(ApiKey.FETCH, "response", version, value) == body(ApiKey.FETCH, "response", 16, value)


# -- Metadata v13 ---------------------------------------------------------------

def test_metadata_v13_response_golden_top_level_error_code_last():
    value = {"ThrottleTimeMs": 0, "Brokers": [{"NodeId": 1, "Host": "h", "Port": 9092, "Rack": None}],
             "ClusterId": "c", "ControllerId": 1, "Topics": [], "ErrorCode": 35}
    expected = (i32(0) + carr(i32(1) + cstr("h") + i32(9092) + cstr(None) + NO_TAGS)
                + cstr("c") + i32(1) + carr() + i16(35) + NO_TAGS)
    golden(ApiKey.METADATA, "response", 13, value, expected)
    assert "ErrorCode" not in parse(ApiKey.METADATA, "response", 12, body(ApiKey.METADATA, "response", 12, value))


def test_metadata_v13_request_is_v12():
    value = {"Topics": [{"TopicId": _TOPIC_ID, "Name": None}], "AllowAutoTopicCreation": False,
             "IncludeTopicAuthorizedOperations": True}
    assert body(ApiKey.METADATA, "request", 13, value) == body(ApiKey.METADATA, "request", 12, value)


def test_metadata_handler_answers_v13_with_error_code_zero():
    from tierlog.broker.apis import api_03_metadata
    image = types.SimpleNamespace(brokers={}, topics={}, cluster_id="c", controller_id=1,
                                  topic_by_id=lambda _id: None)
    broker = types.SimpleNamespace(node_id=1, image=image, config={"auto.create.topics.enable": False})
    header = types.SimpleNamespace(api_key=3, api_version=13, correlation_id=1, client_id="x", listener=None)
    answer = api_03_metadata.handle(broker, header, {"Topics": [], "AllowAutoTopicCreation": False})
    assert answer["ErrorCode"] == 0
    _, decoded = decode_response(3, 13, b"".join(bytes(p) for p in encode_response(3, 13, 1, answer)))
    assert decoded["ErrorCode"] == 0 and decoded["ClusterId"] == "c"


# -- controller / replication admin APIs ----------------------------------------

def test_broker_registration_v3_request_golden():
    incarnation = uuid.UUID(int=99).bytes
    value = {"BrokerId": 1, "ClusterId": "c", "IncarnationId": incarnation,
             "Listeners": [{"Name": "PLAINTEXT", "Host": "h", "Port": 9092, "SecurityProtocol": 0}],
             "Features": [{"Name": "metadata.version", "MinSupportedVersion": 7, "MaxSupportedVersion": 27}],
             "Rack": None, "IsMigratingZkBroker": False, "LogDirs": [DIR_A], "PreviousBrokerEpoch": 42}
    expected = (i32(1) + cstr("c") + incarnation
                + carr(cstr("PLAINTEXT") + cstr("h") + u16(9092) + i16(0) + NO_TAGS)
                + carr(cstr("metadata.version") + i16(7) + i16(27) + NO_TAGS)
                + cstr(None) + boolean(False) + carr(DIR_A) + i64(42) + NO_TAGS)
    golden(ApiKey.BROKER_REGISTRATION, "request", 3, value, expected)
    assert body(ApiKey.BROKER_REGISTRATION, "request", 4, value) == expected


def test_broker_heartbeat_v1_offline_log_dirs_tag():
    value = {"BrokerId": 1, "BrokerEpoch": 5, "CurrentMetadataOffset": 77, "WantFence": False,
             "WantShutDown": True}
    head = i32(1) + i64(5) + i64(77) + boolean(False) + boolean(True)
    assert body(ApiKey.BROKER_HEARTBEAT, "request", 1, value) == head + NO_TAGS
    golden(ApiKey.BROKER_HEARTBEAT, "request", 1, {**value, "OfflineLogDirs": [DIR_A]},
           head + tags((0, carr(DIR_A))))
    assert parse(ApiKey.BROKER_HEARTBEAT, "request", 1, head + NO_TAGS)["OfflineLogDirs"] == []


def test_broker_heartbeat_response_defaults_fenced():
    decoded = parse(ApiKey.BROKER_HEARTBEAT, "response", 0, body(ApiKey.BROKER_HEARTBEAT, "response", 0, {}))
    assert decoded == {"ThrottleTimeMs": 0, "ErrorCode": 0, "IsCaughtUp": False, "IsFenced": True,
                       "ShouldShutDown": False}


def test_unregister_and_allocate_producer_ids_golden():
    golden(ApiKey.UNREGISTER_BROKER, "request", 0, {"BrokerId": 3}, i32(3) + NO_TAGS)
    golden(ApiKey.UNREGISTER_BROKER, "response", 0, {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None},
           i32(0) + i16(0) + cstr(None) + NO_TAGS)
    golden(ApiKey.ALLOCATE_PRODUCER_IDS, "request", 0, {"BrokerId": 3, "BrokerEpoch": 9},
           i32(3) + i64(9) + NO_TAGS)
    golden(ApiKey.ALLOCATE_PRODUCER_IDS, "response", 0,
           {"ThrottleTimeMs": 0, "ErrorCode": 0, "ProducerIdStart": 5000, "ProducerIdLen": 1000},
           i32(0) + i16(0) + i64(5000) + i32(1000) + NO_TAGS)


def test_elect_leaders_v1_request_golden_and_null_means_all():
    value = {"ElectionType": 1, "TopicPartitions": [{"Topic": "t", "Partitions": [0, 2]}], "TimeoutMs": 1000}
    expected = i8(1) + arr(string("t") + arr(i32(0), i32(2))) + i32(1000)
    golden(ApiKey.ELECT_LEADERS, "request", 1, value, expected)
    golden(ApiKey.ELECT_LEADERS, "request", 2, {**value, "TopicPartitions": None},
           i8(1) + b"\x00" + i32(1000) + NO_TAGS)
    assert parse(ApiKey.ELECT_LEADERS, "request", 2, body(ApiKey.ELECT_LEADERS, "request", 2, {}))[
        "TopicPartitions"] == []


def test_alter_partition_reassignments_v1_golden():
    value = {"TimeoutMs": 1000, "AllowReplicationFactorChange": False, "Topics": [{"Name": "t", "Partitions": [
        {"PartitionIndex": 0, "Replicas": [1, 2]}, {"PartitionIndex": 1, "Replicas": None}]}]}
    partitions = carr(i32(0) + carr(i32(1), i32(2)) + NO_TAGS, i32(1) + b"\x00" + NO_TAGS)
    expected = i32(1000) + boolean(False) + carr(cstr("t") + partitions + NO_TAGS) + NO_TAGS
    golden(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "request", 1, value, expected)
    response = {"ThrottleTimeMs": 0, "AllowReplicationFactorChange": True, "ErrorCode": 0,
                "ErrorMessage": None, "Responses": []}
    golden(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "response", 1, response,
           i32(0) + boolean(True) + i16(0) + cstr(None) + carr() + NO_TAGS)


def test_list_partition_reassignments_golden():
    golden(ApiKey.LIST_PARTITION_REASSIGNMENTS, "request", 0, {"TimeoutMs": 100, "Topics": None},
           i32(100) + b"\x00" + NO_TAGS)
    value = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Topics": [{"Name": "t", "Partitions": [
        {"PartitionIndex": 0, "Replicas": [1, 2, 3], "AddingReplicas": [3], "RemovingReplicas": [1]}]}]}
    partition = i32(0) + carr(i32(1), i32(2), i32(3)) + carr(i32(3)) + carr(i32(1)) + NO_TAGS
    expected = i32(0) + i16(0) + cstr(None) + carr(cstr("t") + carr(partition) + NO_TAGS) + NO_TAGS
    golden(ApiKey.LIST_PARTITION_REASSIGNMENTS, "response", 0, value, expected)


# -- kafka-python cross-checks (it decodes what we encode) ----------------------

kafka_protocol = pytest.importorskip("kafka.protocol")


def _kafka_python_class(key, kind):
    import importlib
    import pkgutil

    from kafka.protocol.api_message import ApiMessage
    for module in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
        if ".old" not in module.name and "generate_stubs" not in module.name:
            importlib.import_module(module.name)
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and cls._json and (cls.API_KEY, cls.type) == (key, kind):
            return cls
    pytest.skip(f"kafka-python has no {kind} for api {key}")


def test_kafka_python_reads_metadata_v13_error_code():
    value = {"Brokers": [], "ClusterId": "c", "ControllerId": 1, "Topics": [], "ErrorCode": 35}
    theirs = _kafka_python_class(3, "response").decode(body(ApiKey.METADATA, "response", 13, value), version=13)
    assert (theirs.error_code, theirs.cluster_id, theirs.controller_id) == (35, "c", 1)


def test_kafka_python_reads_alter_partition_reassignments_v1():
    value = {"TimeoutMs": 1000, "AllowReplicationFactorChange": False,
             "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "Replicas": None}]}]}
    cls = _kafka_python_class(45, "request")
    theirs = cls.decode(body(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "request", 1, value), version=1)
    assert (theirs.timeout_ms, theirs.allow_replication_factor_change) == (1000, False)
    assert theirs.topics[0].partitions[0].replicas is None


def test_kafka_python_reads_describe_quorum_v2():
    value = {"ErrorCode": 0, "ErrorMessage": "x", "Topics": [{"TopicName": META, "Partitions": [
        {"PartitionIndex": 0, "LeaderId": 1, "LeaderEpoch": 3, "HighWatermark": 9,
         "CurrentVoters": [{"ReplicaId": 1, "ReplicaDirectoryId": DIR_A, "LogEndOffset": 10}]}]}],
        "Nodes": [{"NodeId": 1, "Listeners": [{"Name": "C", "Host": "h", "Port": 9093}]}]}
    cls = _kafka_python_class(55, "response")
    theirs = cls.decode(body(ApiKey.DESCRIBE_QUORUM, "response", 2, value), version=2)
    voter = theirs.topics[0].partitions[0].current_voters[0]
    assert (voter.replica_id, voter.log_end_offset, voter.last_fetch_timestamp) == (1, 10, -1)
    assert theirs.nodes[0].listeners[0].port == 9093 and theirs.error_message == "x"


def test_kafka_python_reads_fetch_v18_partition_tags():
    cls = _kafka_python_class(1, "request")
    theirs = cls.decode(body(ApiKey.FETCH, "request", 18, _fetch_request(18, HighWatermark=99)), version=18)
    partition = theirs.topics[0].partitions[0]
    assert (partition.fetch_offset, partition.high_watermark) == (100, 99)


# -- control records --------------------------------------------------------------

def test_control_record_key():
    assert cr.encode_control_key(cr.LEADER_CHANGE) == i16(0) + i16(2)
    assert cr.decode_control_key(i16(0) + i16(3)) == cr.SNAPSHOT_HEADER
    with pytest.raises(ProtocolError):
        cr.decode_control_key(b"\x00")


def test_leader_change_v0_golden():
    data = cr.encode_leader_change(1, [1, 2, 3], [1, 2])
    voters = carr(*(i32(v) + NO_TAGS for v in (1, 2, 3)))
    granting = carr(*(i32(v) + NO_TAGS for v in (1, 2)))
    assert data == i16(0) + i32(1) + voters + granting + NO_TAGS
    assert cr.decode_leader_change(data) == {
        "Version": 0, "LeaderId": 1, "Voters": [{"VoterId": v} for v in (1, 2, 3)],
        "GrantingVoters": [{"VoterId": 1}, {"VoterId": 2}]}


def test_leader_change_v1_carries_directory_ids():
    voters = [{"VoterId": 1, "VoterDirectoryId": DIR_A}]
    data = cr.encode_leader_change(1, voters, voters, version=1)
    assert data == i16(1) + i32(1) + carr(i32(1) + DIR_A + NO_TAGS) + carr(i32(1) + DIR_A + NO_TAGS) + NO_TAGS
    assert cr.decode_leader_change(data)["Voters"] == voters


def test_snapshot_header_and_footer_golden():
    header = cr.encode_snapshot_header(1_700_000_000_123)
    assert header == i16(0) + i64(1_700_000_000_123) + NO_TAGS
    assert cr.decode_snapshot_header(header) == {"Version": 0, "LastContainedLogTimestamp": 1_700_000_000_123}
    footer = cr.encode_snapshot_footer()
    assert footer == i16(0) + NO_TAGS
    assert cr.decode_snapshot_footer(footer) == {"Version": 0}


def test_control_values_reject_trailing_or_truncated_bytes_and_unknown_types():
    footer = cr.encode_snapshot_footer()
    with pytest.raises(ProtocolError):
        cr.decode_snapshot_footer(footer + b"\x00")
    with pytest.raises(ProtocolError):
        cr.decode_snapshot_header(cr.encode_snapshot_header(5)[:-2])
    with pytest.raises(ValueError):
        cr.encode_control_value(7, {})
    with pytest.raises(ValueError):
        cr.encode_control_value(cr.SNAPSHOT_FOOTER, {"Version": 1})


def test_kraft_version_and_voters_golden():
    """KIP-853's control records 5 and 6, byte for byte as Kafka's schemas lay them out."""
    kv = cr.encode_control_value(cr.KRAFT_VERSION, {"Version": 0, "KRaftVersion": 1})
    assert kv == i16(0) + i16(1) + NO_TAGS
    voter = {"VoterId": 3, "VoterUuid": bytes(range(16)),
             "Endpoints": [{"Name": "CONTROLLER", "Host": "h", "Port": 9093}],
             "KRaftVersionFeature": {"MinSupportedVersion": 0, "MaxSupportedVersion": 1}}
    data = cr.encode_control_value(cr.KRAFT_VOTERS, {"Version": 0, "Voters": [voter]})
    endpoint = b"\x0bCONTROLLER" + b"\x02h" + (9093).to_bytes(2, "big") + NO_TAGS
    expected = (i16(0) + b"\x02" + i32(3) + bytes(range(16)) + b"\x02" + endpoint
                + i16(0) + i16(1) + NO_TAGS + NO_TAGS + NO_TAGS)
    assert data == expected
    assert cr.decode_control_value(cr.KRAFT_VOTERS, data)["Voters"] == [voter]


def test_control_value_with_unknown_tags_is_read():
    newer = i16(0) + i64(5) + tags((3, b"future"))
    assert cr.decode_snapshot_header(newer) == {"Version": 0, "LastContainedLogTimestamp": 5}


# -- AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter (KIP-853) ----------------------

_LISTENER = {"Name": "CONTROLLER", "Host": "h3", "Port": 9095}
_LISTENER_BYTES = cstr("CONTROLLER") + cstr("h3") + u16(9095) + NO_TAGS


@pytest.mark.parametrize("version", [0, 1])
def test_add_raft_voter_request_golden(version):
    value = {"ClusterId": "c1", "TimeoutMs": 30000, "VoterId": 3, "VoterDirectoryId": DIR_A,
             "Listeners": [_LISTENER]}
    if version >= 1:
        value["AckWhenCommitted"] = False
    expected = (cstr("c1") + i32(30000) + i32(3) + DIR_A + carr(_LISTENER_BYTES)
                + (boolean(False) if version >= 1 else b"") + NO_TAGS)
    golden(ApiKey.ADD_RAFT_VOTER, "request", version, value, expected)


def test_add_raft_voter_acks_when_committed_by_default():
    assert parse(ApiKey.ADD_RAFT_VOTER, "request", 1, cstr(None) + i32(0) + i32(3) + DIR_A + carr()
                 + boolean(True) + NO_TAGS)["AckWhenCommitted"] is True
    assert APIS[ApiKey.ADD_RAFT_VOTER].request.defaults(1)["AckWhenCommitted"] is True


@pytest.mark.parametrize("key", [ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER])
def test_voter_change_response_golden(key):
    value = {"ThrottleTimeMs": 0, "ErrorCode": 126, "ErrorMessage": "voter 3 not found"}
    golden(key, "response", 0, value, i32(0) + i16(126) + cstr("voter 3 not found") + NO_TAGS)


def test_remove_raft_voter_request_golden():
    value = {"ClusterId": "c1", "VoterId": 2, "VoterDirectoryId": DIR_B}
    golden(ApiKey.REMOVE_RAFT_VOTER, "request", 0, value, cstr("c1") + i32(2) + DIR_B + NO_TAGS)


def test_update_raft_voter_golden():
    value = {"ClusterId": "c1", "CurrentLeaderEpoch": 7, "VoterId": 3, "VoterDirectoryId": DIR_A,
             "Listeners": [_LISTENER], "KRaftVersionFeature": {"MinSupportedVersion": 0, "MaxSupportedVersion": 1}}
    expected = (cstr("c1") + i32(7) + i32(3) + DIR_A + carr(_LISTENER_BYTES)
                + i16(0) + i16(1) + NO_TAGS + NO_TAGS)
    golden(ApiKey.UPDATE_RAFT_VOTER, "request", 0, value, expected)
    leader = {"LeaderId": 1, "LeaderEpoch": 7, "Host": "h1", "Port": 9093}
    response = {"ThrottleTimeMs": 0, "ErrorCode": 0, "CurrentLeader": leader}
    golden(ApiKey.UPDATE_RAFT_VOTER, "response", 0, response,
           i32(0) + i16(0) + tags((0, i32(1) + i32(7) + cstr("h1") + i32(9093) + NO_TAGS)))
