"""The records of ``__transaction_state`` (Kafka's ``TransactionLogKey`` / ``TransactionLogValue``).

Key and value each start with an int16 version, then the struct of that version:

- key version 0: {TransactionalId string};
- value version 0 (classic) and 1 (the first flexible version, written from
  ``transaction.version`` 1): ProducerId int64, ProducerEpoch int16,
  TransactionTimeoutMs int32, TransactionStatus int8 (``TransactionState.id``),
  TransactionPartitions [{Topic, PartitionIds [int32]}] (null when the state is
  Empty), TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs
  int64; v1 adds the tagged PreviousProducerId (tag 0, default -1),
  NextProducerId (tag 1, default -1) and ClientTransactionVersion (tag 2,
  default 0).  Tags this module does not know (KIP-939's NextProducerEpoch,
  tag 3) are skipped when read.

A null value is a tombstone: the transactional id expired.  A key of an unknown
version is not ours to read (``decode_key`` answers None); a value of an unknown
version is an error (Kafka throws too).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from tierlog.protocol.codec import decode_struct, encode_struct
from tierlog.protocol.schema import Field, Struct

from .state import NO_PRODUCER_EPOCH, TransactionMetadata, TransactionState, TxnTransit

__all__ = [
    "TRANSACTION_LOG_KEY",
    "TRANSACTION_LOG_VALUE",
    "TransactionLogValue",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "log_value",
    "metadata_from_log",
]

KEY_VERSION = 0
VALUE_FLEXIBLE_FROM = 1
VALUE_VERSIONS = range(2)
NO_PRODUCER_ID = -1

TRANSACTION_LOG_KEY = Struct([
    Field("TransactionalId", "string", versions="0"),
], name="TransactionLogKey")

_PARTITIONS_SCHEMA = Struct([
    Field("Topic", "string"),
    Field("PartitionIds", ["int32"]),
], name="PartitionsSchema")

TRANSACTION_LOG_VALUE = Struct([
    Field("ProducerId", "int64"),
    Field("PreviousProducerId", "int64", versions="1+", tag=0, default=NO_PRODUCER_ID),
    Field("NextProducerId", "int64", versions="1+", tag=1, default=NO_PRODUCER_ID),
    Field("ProducerEpoch", "int16"),
    Field("TransactionTimeoutMs", "int32"),
    Field("TransactionStatus", "int8"),
    Field("TransactionPartitions", [_PARTITIONS_SCHEMA], nullable="0+"),
    Field("TransactionLastUpdateTimestampMs", "int64"),
    Field("TransactionStartTimestampMs", "int64"),
    Field("ClientTransactionVersion", "int16", versions="1+", tag=2, default=0),
], name="TransactionLogValue")

_VERSION = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    """One transactional id's state as the log holds it; ``partitions`` is empty when Empty."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[tuple[str, int]]
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


def log_value(t: TxnTransit) -> TransactionLogValue:
    """What a prepared transition writes (Kafka's ``TransactionLog.valueToBytes``)."""
    return TransactionLogValue(t.producer_id, t.producer_epoch, t.timeout_ms, t.state, t.partitions,
                               t.last_update_timestamp_ms, t.start_timestamp_ms, t.previous_producer_id,
                               t.next_producer_id, t.client_transaction_version)


def metadata_from_log(transactional_id: str, v: TransactionLogValue) -> TransactionMetadata:
    """A transactional id as loaded from the log (Kafka's ``readTxnRecordValue``): the last epoch
    is not stored, so a KIP-360 retry across a coordinator move is fenced (Kafka's known gap)."""
    return TransactionMetadata(transactional_id, v.producer_id, v.producer_epoch, v.timeout_ms,
                               v.last_update_timestamp_ms, v.state, v.previous_producer_id, v.next_producer_id,
                               NO_PRODUCER_EPOCH, set(v.partitions), v.start_timestamp_ms,
                               v.client_transaction_version)


def encode_key(transactional_id: str) -> bytes:
    return _VERSION.pack(KEY_VERSION) + bytes(encode_struct(
        TRANSACTION_LOG_KEY, KEY_VERSION, False, {"TransactionalId": transactional_id}))


def encode_value(value: TransactionLogValue, version: int) -> bytes:
    """``version`` 0 until ``transaction.version`` 1 is finalized, then 1 (Kafka's
    ``TransactionVersion.transactionLogValueVersion``)."""
    assert version in VALUE_VERSIONS, version
    assert not (value.state is TransactionState.EMPTY and value.partitions), "an Empty transaction has no partitions"
    fields = {
        "ProducerId": value.producer_id, "ProducerEpoch": value.producer_epoch,
        "TransactionTimeoutMs": value.timeout_ms, "TransactionStatus": value.state.id,
        "TransactionPartitions": None if value.state is TransactionState.EMPTY else _partitions_out(value.partitions),
        "TransactionLastUpdateTimestampMs": value.last_update_timestamp_ms,
        "TransactionStartTimestampMs": value.start_timestamp_ms,
    }
    if version >= VALUE_FLEXIBLE_FROM:
        fields |= {"PreviousProducerId": value.previous_producer_id, "NextProducerId": value.next_producer_id,
                   "ClientTransactionVersion": value.client_transaction_version}
    return _VERSION.pack(version) + bytes(encode_struct(TRANSACTION_LOG_VALUE, version,
                                                        version >= VALUE_FLEXIBLE_FROM, fields))


def decode_key(buf: bytes) -> str | None:
    """The transactional id of a key; None for a key version this coordinator does not know.
    Raises ValueError (or the codec's ProtocolError) on a malformed key."""
    version = _read_version(buf)
    if version != KEY_VERSION:
        return None
    fields, _ = decode_struct(TRANSACTION_LOG_KEY, version, False, buf, 2)
    transactional_id: str = fields["TransactionalId"]
    return transactional_id


def decode_value(buf: bytes | None) -> TransactionLogValue | None:
    """The value of a record; None for a tombstone.  Raises ValueError on an unknown version or
    state id."""
    if buf is None:
        return None
    version = _read_version(buf)
    if version not in VALUE_VERSIONS:
        raise ValueError(f"unknown __transaction_state value version {version}")
    fields, _ = decode_struct(TRANSACTION_LOG_VALUE, version, version >= VALUE_FLEXIBLE_FROM, buf, 2)
    state = TransactionState.from_id(fields["TransactionStatus"])
    partitions = frozenset() if state is TransactionState.EMPTY else frozenset(
        (p["Topic"], index) for p in fields["TransactionPartitions"] or () for index in p["PartitionIds"])
    return TransactionLogValue(
        fields["ProducerId"], fields["ProducerEpoch"], fields["TransactionTimeoutMs"], state, partitions,
        fields["TransactionLastUpdateTimestampMs"], fields["TransactionStartTimestampMs"],
        fields.get("PreviousProducerId", NO_PRODUCER_ID), fields.get("NextProducerId", NO_PRODUCER_ID),
        fields.get("ClientTransactionVersion", 0))


def _partitions_out(partitions: frozenset[tuple[str, int]]) -> list[dict[str, Any]]:
    """Grouped by topic (Kafka groups them too), topics and partition ids sorted so equal sets encode equally."""
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        by_topic.setdefault(topic, []).append(index)
    return [{"Topic": topic, "PartitionIds": ids} for topic, ids in by_topic.items()]


def _read_version(buf: bytes | None) -> int:
    if buf is None or len(buf) < 2:
        raise ValueError("a __transaction_state key or value needs a 2-byte version")
    version: int = _VERSION.unpack_from(buf, 0)[0]
    return version
