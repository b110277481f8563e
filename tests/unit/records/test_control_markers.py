"""Reading a transaction marker: the canonical layout (one uncompressed 16-byte record, as Kafka
and ``build_marker`` write it) is read in place; every other control batch through the record
decoder, with the same answer."""
import pytest

from tierlog.records.builder import build_batch
from tierlog.records.compression import CompressionType
from tierlog.records.control import _KEY, _VALUE, ABORT, COMMIT, build_marker, read_marker
from tierlog.records.decoder import decode_records
from tierlog.records.errors import InvalidRecordError
from tierlog.records.header import parse_header
from tierlog.records.record import Record


def _decoded(batch: bytes) -> tuple[int, int]:
    """The marker's (type, coordinator epoch) from the decoded record."""
    record = decode_records(batch, parse_header(batch, 0))[0]
    control_type = _KEY.unpack_from(record.key, 0)[1]
    return control_type, _VALUE.unpack_from(record.value, 0)[1] if control_type in (ABORT, COMMIT) else -1


def _control(records, compression=CompressionType.NONE) -> bytes:
    return build_batch(records, compression=compression, producer_id=7, producer_epoch=1, base_sequence=-1,
                       transactional=True, control=True)


@pytest.mark.parametrize("commit", [True, False])
@pytest.mark.parametrize("coordinator_epoch", [0, 1, 2**31 - 1, -1])
def test_a_marker_as_written_reads_as_its_record_says(commit, coordinator_epoch):
    batch = build_marker(1000, 3, commit, coordinator_epoch, 1_700_000_000_000)
    header = parse_header(batch, 0)
    assert header.size == len(batch)
    for form in (batch, bytearray(batch), memoryview(batch)):
        assert read_marker(form, header) == _decoded(batch) == (COMMIT if commit else ABORT, coordinator_epoch)


@pytest.mark.parametrize("records, compression", [
    ([Record(0, 5, _KEY.pack(0, COMMIT), _VALUE.pack(0, 9), [("h", b"v")])], CompressionType.NONE),  # a header
    ([Record(0, 5, _KEY.pack(0, ABORT), _VALUE.pack(0, 4) + b"extra")], CompressionType.NONE),       # a longer value
    ([Record(0, 5, _KEY.pack(0, COMMIT), _VALUE.pack(0, 2))], CompressionType.GZIP),
    ([Record(0, 5, _KEY.pack(0, 3), _VALUE.pack(0, 2))], CompressionType.NONE),           # not a transaction marker
])
def test_any_other_control_batch_is_decoded_with_the_same_answer(records, compression):
    batch = _control(records, compression)
    assert read_marker(batch, parse_header(batch, 0)) == _decoded(batch)


def test_a_control_batch_without_a_key_is_corrupt():
    batch = _control([Record(0, 5, None, _VALUE.pack(0, 2))])
    with pytest.raises(InvalidRecordError):
        read_marker(batch, parse_header(batch, 0))
