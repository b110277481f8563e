"""Transaction markers: the control batches that end a transaction on a partition (KIP-98;
Kafka's ``EndTransactionMarker`` and ``ControlRecordType``).

A marker batch has the transactional (0x10) and control (0x20) attributes, the
producer's id and epoch, baseSequence -1 and one record whose key is
``Version int16 (0) | Type int16`` (0 ABORT, 1 COMMIT) and whose value is
``Version int16 (0) | CoordinatorEpoch int32``.
"""
from __future__ import annotations

import struct

from tierlog.records.builder import build_batch
from tierlog.records.decoder import decode_records
from tierlog.records.errors import CORRUPT_MESSAGE, InvalidRecordError
from tierlog.records.header import HEADER_SIZE, BatchHeader
from tierlog.records.record import Record

__all__ = ["ABORT", "COMMIT", "build_marker", "control_marker", "read_marker"]

ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
_VERSION = 0
# A marker as Kafka and ``build_marker`` write it, uncompressed: one record of 16 bytes (length
# varint 0x20), attributes 0, timestamp and offset deltas 0, a 4-byte key (0x08), a 6-byte value
# (0x0c), no headers; read without the record decoder.
_CANONICAL_SIZE = HEADER_SIZE + 17
_CANONICAL_HEAD = b"\x20\x00\x00\x00\x08"
_KEY_AT, _VALUE_LEN_AT, _VALUE_AT, _HEADERS_AT = HEADER_SIZE + 5, HEADER_SIZE + 9, HEADER_SIZE + 10, HEADER_SIZE + 16


def build_marker(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    key = _KEY.pack(_VERSION, COMMIT if commit else ABORT)
    value = _VALUE.pack(_VERSION, coordinator_epoch)
    return build_batch([Record(0, timestamp_ms, key, value)], producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=-1, transactional=True, control=True)


def control_marker(records: list[Record]) -> int | None:
    """ABORT or COMMIT for the decoded records of a transaction marker batch, else None."""
    key = records[0].key if records else None
    if key is None or len(key) < _KEY.size:
        return None
    control_type = _KEY.unpack_from(key, 0)[1]
    return control_type if control_type in (ABORT, COMMIT) else None


def read_marker(batch: bytes | bytearray | memoryview, header: BatchHeader) -> tuple[int, int]:
    """(control type, coordinator epoch) of a control batch (``batch`` spans exactly it); other
    control types (KRaft's) answer their type and -1."""
    if header.size == _CANONICAL_SIZE and header.compression == 0 and header.records_count == 1 \
            and batch[HEADER_SIZE:_KEY_AT] == _CANONICAL_HEAD and batch[_VALUE_LEN_AT] == 0x0c \
            and batch[_HEADERS_AT] == 0:
        _version, control_type = _KEY.unpack_from(batch, _KEY_AT)
        epoch = _VALUE.unpack_from(batch, _VALUE_AT)[1] if control_type in (ABORT, COMMIT) else -1
        return control_type, epoch
    records = decode_records(batch, header)
    if not records or records[0].key is None or len(records[0].key) < _KEY.size:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"control batch at {header.base_offset} has no control key")
    _version, control_type = _KEY.unpack_from(records[0].key, 0)
    value = records[0].value
    epoch = _VALUE.unpack_from(value, 0)[1] if control_type in (ABORT, COMMIT) and value and \
        len(value) >= _VALUE.size else -1
    return control_type, epoch
