"""Tagged fields: written only when not default, unknown tags skipped."""

import pytest

from tierlog.protocol import (
    APIS,
    ApiKey,
    ProtocolError,
    decode_response,
    encode_response,
)
from tierlog.protocol.codec import decode_struct, encode_struct
from tierlog.protocol.schema import Field, Struct

_PARTITION = {"Index": 0, "ErrorCode": 6, "BaseOffset": -1}


def _produce_v10(partition: dict, **top) -> bytes:
    body = {"Responses": [{"Name": "t", "PartitionResponses": [partition]}], **top}
    return b"".join(encode_response(ApiKey.PRODUCE, 10, 1, body))


def test_default_tagged_struct_is_not_written():
    plain = _produce_v10(_PARTITION)
    explicit = _produce_v10({**_PARTITION, "CurrentLeader": {"LeaderId": -1, "LeaderEpoch": -1}})
    assert plain == explicit


def test_non_default_tagged_struct_is_written_with_tag_and_size():
    plain = _produce_v10(_PARTITION)
    hinted = _produce_v10({**_PARTITION, "CurrentLeader": {"LeaderId": 2, "LeaderEpoch": 5}})
    # one tag (0) of 9 bytes: LeaderId, LeaderEpoch and the struct's own empty tag section
    section = bytes([1, 0, 9]) + bytes.fromhex("00000002" "00000005" "00")
    assert len(hinted) == len(plain) + len(section) - 1
    assert section in hinted
    _, body = decode_response(ApiKey.PRODUCE, 10, hinted)
    leader = body["Responses"][0]["PartitionResponses"][0]["CurrentLeader"]
    assert leader == {"LeaderId": 2, "LeaderEpoch": 5}


def test_absent_tagged_fields_decode_to_their_defaults():
    _, body = decode_response(ApiKey.PRODUCE, 10, _produce_v10(_PARTITION))
    assert body["NodeEndpoints"] == []
    assert body["Responses"][0]["PartitionResponses"][0]["CurrentLeader"] == {"LeaderId": -1, "LeaderEpoch": -1}


def test_node_endpoints_tag_roundtrip():
    endpoints = [{"NodeId": 2, "Host": "h", "Port": 9092, "Rack": None}]
    _, body = decode_response(ApiKey.PRODUCE, 10, _produce_v10(_PARTITION, NodeEndpoints=endpoints))
    assert body["NodeEndpoints"] == endpoints


def _extended(struct: Struct, *extra: Field) -> Struct:
    return Struct(list(struct.fields) + list(extra), name=struct.name + "Plus")


@pytest.mark.parametrize("key,kind,version", [
    (ApiKey.FETCH, "response", 16), (ApiKey.FETCH, "request", 15),
    (ApiKey.PRODUCE, "response", 10), (ApiKey.API_VERSIONS, "request", 3),
])
def test_unknown_tags_are_skipped(key, kind, version):
    spec = APIS[key]
    struct = spec.request if kind == "request" else spec.response
    newer = _extended(struct, Field("Future", "string", tag=30), Field("Later", ["int64"], tag=7))
    value = {**struct.defaults(version), "Future": "from a newer peer", "Later": [1, 2, 3]}
    data = bytes(encode_struct(newer, version, True, value))
    decoded, pos = decode_struct(struct, version, True, data)
    assert pos == len(data)
    assert decoded == struct.defaults(version)


def test_tagged_value_not_matching_its_size_is_rejected():
    struct = Struct([Field("T", "int32", tag=0)])
    with pytest.raises(ProtocolError):
        decode_struct(struct, 0, True, bytes([1, 0, 5]) + b"\x00\x00\x00\x01\x00")
    with pytest.raises(ProtocolError):
        decode_struct(struct, 0, True, bytes([1, 0, 2]) + b"\x00\x00")


def test_tag_count_beyond_the_data_is_rejected():
    struct = Struct([Field("T", "int32", tag=0)])
    with pytest.raises(ProtocolError):
        decode_struct(struct, 0, True, bytes([2, 0, 4]) + b"\x00\x00\x00\x01")


def test_a_field_tagged_in_a_non_flexible_version_is_a_schema_error():
    struct = Struct([Field("A", "int8"), Field("T", "int32", tag=0)])
    with pytest.raises(ValueError):
        encode_struct(struct, 0, False, {"A": 1})


def test_a_field_is_regular_outside_its_tagged_versions():
    struct = Struct([Field("A", "int8"), Field("T", "int8", tag=0, tagged_versions="2+")])
    assert bytes(encode_struct(struct, 1, True, {"A": 1, "T": 9})) == bytes([1, 9, 0])
    assert bytes(encode_struct(struct, 2, True, {"A": 1, "T": 9})) == bytes([1, 1, 0, 1, 9])


def test_tags_are_written_in_ascending_order():
    struct = Struct([Field("B", "int8", tag=5), Field("A", "int8", tag=2)])
    assert bytes(encode_struct(struct, 0, True, {"A": 1, "B": 2})) == bytes([2, 2, 1, 1, 5, 1, 2])
