"""``__transaction_state`` records against bytes built here by hand from Kafka's
TransactionLogKey.json / TransactionLogValue.json (an encoder independent of the codec engine)."""
import struct

import pytest

from tierlog.txn import (
    TransactionLogValue,
    TransactionState,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)


def string(s):
    b = s.encode()
    return i16(len(b)) + b


def uvarint(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def compact_string(s):
    b = s.encode()
    return uvarint(len(b) + 1) + b


def tag(number, data):
    return uvarint(number) + uvarint(len(data)) + data


ONGOING = TransactionLogValue(producer_id=4001, producer_epoch=7, timeout_ms=60_000, state=TransactionState.ONGOING,
                              partitions=frozenset({("orders", 2), ("orders", 0), ("audit", 5)}),
                              last_update_timestamp_ms=1_700_000_000_500, start_timestamp_ms=1_700_000_000_000)


def test_key_is_version_0_and_the_transactional_id():
    expected = i16(0) + string("payments-tx")
    assert encode_key("payments-tx") == expected
    assert decode_key(expected) == "payments-tx"


def test_a_key_of_another_version_is_not_ours():
    assert decode_key(i16(1) + string("x")) is None
    with pytest.raises(ValueError):
        decode_key(b"\x00")


def test_value_v0_ongoing():
    expected = (i16(0) + i64(4001) + i16(7) + i32(60_000) + i8(1)
                + i32(2) + string("audit") + i32(1) + i32(5) + string("orders") + i32(2) + i32(0) + i32(2)
                + i64(1_700_000_000_500) + i64(1_700_000_000_000))
    assert encode_value(ONGOING, 0) == expected
    assert decode_value(expected) == ONGOING


def test_value_v0_empty_has_null_partitions():
    empty = TransactionLogValue(4001, 0, 60_000, TransactionState.EMPTY, frozenset(), 1_700_000_000_000, -1)
    expected = i16(0) + i64(4001) + i16(0) + i32(60_000) + i8(0) + i32(-1) + i64(1_700_000_000_000) + i64(-1)
    assert encode_value(empty, 0) == expected
    assert decode_value(expected) == empty


def test_value_v1_is_flexible_with_tagged_producer_ids_and_client_version():
    value = TransactionLogValue(4002, 0, 60_000, TransactionState.COMPLETE_COMMIT, frozenset(),
                                1_700_000_000_900, 1_700_000_000_000, previous_producer_id=4001,
                                next_producer_id=-1, client_transaction_version=2)
    expected = (i16(1) + i64(4002) + i16(0) + i32(60_000) + i8(4)
                + uvarint(0 + 1)                                   # compact array, no partitions
                + i64(1_700_000_000_900) + i64(1_700_000_000_000)
                + uvarint(2) + tag(0, i64(4001)) + tag(2, i16(2)))   # NextProducerId at its default: absent
    assert encode_value(value, 1) == expected
    assert decode_value(expected) == value


def test_value_v1_partitions_are_compact_and_defaults_leave_no_tags():
    expected = (i16(1) + i64(4001) + i16(7) + i32(60_000) + i8(1)
                + uvarint(2 + 1)
                + compact_string("audit") + uvarint(1 + 1) + i32(5) + uvarint(0)
                + compact_string("orders") + uvarint(2 + 1) + i32(0) + i32(2) + uvarint(0)
                + i64(1_700_000_000_500) + i64(1_700_000_000_000)
                + uvarint(0))
    assert encode_value(ONGOING, 1) == expected
    assert decode_value(expected) == ONGOING


def test_unknown_tags_of_newer_kafkas_are_skipped():
    value = (i16(1) + i64(4001) + i16(7) + i32(60_000) + i8(0) + uvarint(0) + i64(5) + i64(-1)
             + uvarint(2) + tag(1, i64(4009)) + tag(3, i16(8)))       # tag 3: KIP-939's NextProducerEpoch
    decoded = decode_value(value)
    assert (decoded.state, decoded.next_producer_id, decoded.partitions) == (TransactionState.EMPTY, 4009, frozenset())


def test_tombstones_unknown_versions_and_states():
    assert decode_value(None) is None
    with pytest.raises(ValueError, match="version 2"):
        decode_value(i16(2) + i64(1))
    bad_state = i16(0) + i64(1) + i16(0) + i32(1) + i8(9) + i32(-1) + i64(0) + i64(-1)
    with pytest.raises(ValueError, match="state id 9"):
        decode_value(bad_state)


def test_an_empty_transaction_with_partitions_is_a_programmer_error():
    with pytest.raises(AssertionError):
        encode_value(TransactionLogValue(1, 0, 1, TransactionState.EMPTY, frozenset({("t", 0)}), 0, -1), 0)
