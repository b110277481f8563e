import struct

import pytest

from tierlog.group.log_records import (
    GroupKey,
    OffsetKey,
    decode_key,
    decode_value,
    group_metadata_record,
    offset_commit_record,
)
from tierlog.group.partitioner import coordinator_partition, java_string_hash


def test_java_string_hash_known_values():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)      # Integer.MIN_VALUE
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00   # two UTF-16 code units


def test_coordinator_partition_maps_min_value_to_zero():
    assert coordinator_partition("polygenelubricants", 50) == 0
    assert coordinator_partition("hello", 50) == 99162322 % 50
    assert coordinator_partition("Aa", 7) == coordinator_partition("BB", 7)    # equal Java hashes


def test_offset_commit_record_bytes_are_kafkas_layout():
    key, value = offset_commit_record(OffsetKey("g", "t", 3), {
        "offset": 42, "leaderEpoch": 5, "metadata": "m", "commitTimestamp": 1000, "expireTimestamp": -1})
    assert key == struct.pack(">hh1sh1si", 1, 1, b"g", 1, b"t", 3)
    assert value == struct.pack(">hqih1sq", 3, 42, 5, 1, b"m", 1000)
    k = decode_key(key)
    assert k == OffsetKey("g", "t", 3)
    assert decode_value(k, value) == {"offset": 42, "leaderEpoch": 5, "metadata": "m", "commitTimestamp": 1000}


def test_offset_value_with_expiry_is_v1():
    _, value = offset_commit_record(OffsetKey("g", "t", 0), {
        "offset": 1, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 5, "expireTimestamp": 9})
    assert value == struct.pack(">hqhqq", 1, 1, 0, 5, 9)
    assert decode_value(OffsetKey("g", "t", 0), value)["expireTimestamp"] == 9


def test_group_metadata_round_trip_and_tombstone():
    value = {"protocolType": "consumer", "generation": 7, "protocol": "range", "leader": "m1",
             "currentStateTimestamp": 123, "members": [
                 {"memberId": "m1", "groupInstanceId": "i1", "clientId": "c", "clientHost": "/127.0.0.1",
                  "rebalanceTimeout": 300000, "sessionTimeout": 10000, "subscription": b"sub",
                  "assignment": b"asg"}]}
    key, raw = group_metadata_record(GroupKey("grp"), value)
    assert key == struct.pack(">hh3s", 2, 3, b"grp")
    assert raw[:2] == b"\x00\x03"
    k = decode_key(key)
    assert k == GroupKey("grp")
    assert decode_value(k, raw) == value
    assert group_metadata_record(GroupKey("grp"), None) == (key, None)
    assert decode_value(k, None) is None


def test_kip848_keys_are_skipped_and_garbage_refused():
    assert decode_key(struct.pack(">hh1s", 3, 1, b"g")) is None
    with pytest.raises(ValueError):
        decode_key(b"\x00")
    with pytest.raises(ValueError):
        decode_value(GroupKey("g"), b"\x00\x09")
