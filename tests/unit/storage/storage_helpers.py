"""Shared helpers for the storage tests."""

from tierlog.records import Record, build_batch, decode_batches
from tierlog.records.control import build_marker
from tierlog.storage import LogConfig

NOW = 1_700_000_000_000


def config(**props) -> LogConfig:
    """A LogConfig from keyword props (dots as underscores); small segments by default."""
    values = {"internal.segment.bytes": 4096, "index.interval.bytes": 256}
    values.update({key.replace("_", "."): value for key, value in props.items()})
    return LogConfig.from_props({k: str(v) for k, v in values.items()})


def batch(count: int = 3, timestamp: int = NOW, value_size: int = 40, timestamps=None, **kwargs) -> bytearray:
    """A producer batch (base offset 0) of ``count`` records."""
    stamps = timestamps if timestamps is not None else [timestamp + i for i in range(count)]
    records = [Record(i, stamps[i], b"key-%d" % i, b"v" * value_size, [("h", b"1")]) for i in range(len(stamps))]
    return bytearray(build_batch(records, **kwargs))


def offsets_in(data: bytes) -> list[int]:
    return [record.offset for _header, records in decode_batches(data) for record in records]


def batch_bases(data: bytes) -> list[int]:
    return [header.base_offset for header, _records in decode_batches(data)]


def read_all(log, start=None) -> bytes:
    start = log.log_start_offset if start is None else start
    return log.read(start, 1 << 30).to_bytes()


def txn_batch(pid, epoch, seq=0, count=2):
    """A transactional batch of ``count`` records of producer ``pid``."""
    return batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)


def marker(pid, epoch, commit, coordinator_epoch=3):
    """A COMMIT (``commit``) or ABORT control batch of producer ``pid``."""
    return bytearray(build_marker(pid, epoch, commit, coordinator_epoch, NOW))
