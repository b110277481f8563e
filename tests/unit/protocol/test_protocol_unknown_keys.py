"""The encoder refuses a value with a key that is no field of its struct: a
mistyped key would otherwise encode the field's default without a word."""

import pytest

from tierlog.protocol import (
    ApiKey,
    ErrorCode,
    decode_response,
    encode_request,
    encode_response,
)
from tierlog.protocol.codec import encode_struct
from tierlog.protocol.schema import Field, Struct

_INNER = Struct([Field("Index", "int32"), Field("Note", "string", versions="1+")], name="Inner")
_OUTER = Struct([Field("ErrorCode", "int16"), Field("Items", [_INNER]),
                 Field("Hint", "int32", versions="2+", tag=0)], name="Outer")


def _produce_response(version: int, partition: dict) -> list:
    body = {"Responses": [{"Name": "t", "PartitionResponses": [partition]}]}
    return encode_response(ApiKey.PRODUCE, version, 1, body)


def test_unknown_top_level_key_fails():
    with pytest.raises(AssertionError, match="Outer v0 has no field ErrorCod"):
        encode_struct(_OUTER, 0, False, {"ErrorCod": 6, "Items": []})


def test_unknown_key_in_a_nested_struct_fails():
    with pytest.raises(AssertionError, match="Inner v1 has no field Indx"):
        encode_struct(_OUTER, 1, False, {"Items": [{"Index": 1}, {"Indx": 2}]})


def test_the_message_names_every_unknown_key():
    with pytest.raises(AssertionError, match="has no field Bar, Foo$"):
        encode_struct(_OUTER, 0, False, {"Foo": 1, "Bar": 2})


def test_a_field_of_another_version_is_accepted_and_not_written():
    """Handlers fill fields of newer versions; older versions leave them out."""
    with_newer = encode_struct(_OUTER, 0, False, {"Items": [{"Index": 1, "Note": "x"}], "Hint": 3})
    plain = encode_struct(_OUTER, 0, False, {"Items": [{"Index": 1}]})
    assert bytes(with_newer) == bytes(plain)


def test_tagged_fields_are_known_keys():
    encoded = encode_struct(_OUTER, 2, True, {"Items": [], "Hint": 3})
    assert bytes(encoded).endswith(bytes([1, 0, 4, 0, 0, 0, 3]))


def test_a_mistyped_partition_key_in_a_produce_response_fails():
    partition = {"Index": 0, "ErrorCode": ErrorCode.NONE, "BaseOffset": 5, "LogStartOfset": 0}
    with pytest.raises(AssertionError, match="LogStartOfset"):
        _produce_response(9, partition)


def test_a_produce_response_with_known_keys_round_trips():
    partition = {"Index": 0, "ErrorCode": ErrorCode.NOT_LEADER_OR_FOLLOWER, "BaseOffset": -1,
                 "LogStartOffset": 4, "CurrentLeader": {"LeaderId": 2, "LeaderEpoch": 1}}
    _, body = decode_response(ApiKey.PRODUCE, 10, b"".join(_produce_response(10, partition)))
    decoded = body["Responses"][0]["PartitionResponses"][0]
    assert decoded["LogStartOffset"] == 4 and decoded["CurrentLeader"]["LeaderId"] == 2


def test_requests_are_checked_too():
    with pytest.raises(AssertionError, match="Topic"):
        encode_request(ApiKey.METADATA, 12, 1, "c", {"Topic": [{"Name": "t"}]})
