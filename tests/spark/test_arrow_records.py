"""records -> Arrow decoding against the tools decoder (no Spark needed)."""
import random

import pyarrow as pa
import pytest

from tierlog.records import (
    CompressionType,
    Record,
    TimestampType,
    build_batch,
    decode_batches,
)
from tierlog.records.arrow_records import decode_fetched


def _records(rng, base, n):
    out = []
    for i in range(n):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 3, 12, 13, 200]))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 1, 12, 40, 5000]))
        headers = [] if rng.random() < 0.5 else [(f"h{j}", None if j == 1 else rng.randbytes(j * 3))
                                                  for j in range(rng.randint(1, 3))]
        out.append(Record(base + i * rng.choice([1, 1, 2]), 1_700_000_000_000 + rng.randint(-5000, 5000),
                          key, value, headers))
    return out


def _fetch_answer(rng, batches=6):
    buf, offset = bytearray(), 100
    for b in range(batches):
        recs = _records(rng, offset, rng.randint(1, 50))
        recs = [r._replace(offset=offset + i) for i, r in enumerate(recs)]
        codec = [CompressionType.NONE, CompressionType.ZSTD, CompressionType.LZ4, CompressionType.GZIP][b % 4]
        tstype = TimestampType.LOG_APPEND_TIME if b == 3 else TimestampType.CREATE_TIME
        buf += build_batch(recs, base_offset=offset, compression=codec, timestamp_type=tstype)
        offset += len(recs)
    return bytes(buf)


@pytest.mark.parametrize("seed", range(5))
def test_decode_matches_tools_decoder(seed):
    rng = random.Random(seed)
    answer = _fetch_answer(rng)
    expected = [(h, r) for h, recs in decode_batches(answer) for r in recs]
    start, end = expected[3][1].offset, expected[-2][1].offset
    chunk = decode_fetched(answer + answer[:30], "t", 7, start, end, include_headers=True)
    rows = chunk.batch.to_pylist()
    want = [(h, r) for h, r in expected if start <= r.offset < end]
    assert len(rows) == len(want)
    for row, (h, r) in zip(rows, want):
        assert (row["key"], row["value"], row["offset"]) == (r.key, r.value, r.offset)
        assert (row["topic"], row["partition"]) == ("t", 7)
        assert row["timestampType"] == int(h.timestamp_type)
        assert int(row["timestamp"].timestamp() * 1000) == r.timestamp
        assert (row["headers"] or []) == [{"key": k, "value": v} for k, v in r.headers]
    assert end <= chunk.next_offset <= expected[-1][1].offset + 1   # never past the whole batches


@pytest.mark.parametrize(("keys", "values"), [
    ([None] * 5, [b"v" * 1024] * 5),                       # a keyless topic: the key column is nulls only
    ([b"", b"k", b"k" * 12, None, b""], [b"v" * 13, b"w" * 40, b"x" * 5000, b"y" * 13, b"z" * 300]),  # no value inline
    ([b"k" * 13] * 3, [b"", b"s" * 12, None]),              # no key inline, no value over 12 bytes
    ([None, None], [b"v" * 20, b"abc"]),                    # an inline value within 12 bytes of the end
])
def test_binary_columns_of_one_shape(keys, values):
    answer = build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(zip(keys, values))])
    batch = decode_fetched(answer, "t", 0, 0, len(keys)).batch
    assert batch.column("key").type == batch.column("value").type == pa.binary()
    assert batch.column("key").to_pylist() == keys
    assert batch.column("value").to_pylist() == values


def test_partial_only_and_empty():
    answer = build_batch([Record(0, 1, b"k", b"v")], base_offset=0)
    chunk = decode_fetched(answer[:-1], "t", 0, 0, 10)
    assert chunk.batch is None and chunk.next_offset == 0
    assert decode_fetched(None, "t", 0, 5, 10).next_offset == 5


def _at(batch: bytes, base_offset: int) -> bytes:
    return base_offset.to_bytes(8, "big") + batch[8:]      # the base offset is outside the CRC


def test_read_committed_drops_aborted_transactions_and_every_marker():
    """Two producers interleave on one partition; producer 7 aborts its first transaction and
    commits its second, producer 8 commits one that straddles 7's abort."""
    from tierlog.records.aborted import AbortedFilter
    from tierlog.records.control import build_marker

    def data(pid, base, *values):
        return _at(build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], producer_id=pid,
                               producer_epoch=0, base_sequence=0, transactional=True), base)

    def marker(pid, base, commit):
        return _at(build_marker(pid, 0, commit, 0, 0), base)

    log = b"".join([data(7, 0, b"a0", b"a1"), data(8, 2, b"c0"), data(7, 3, b"a2"), marker(7, 4, False),
                    data(8, 5, b"c1"), marker(8, 6, True), data(7, 7, b"k0"), marker(7, 8, True),
                    _at(build_batch([Record(0, 0, None, b"plain")]), 9)])
    committed = decode_fetched(log, "t", 0, 0, 10, aborted=AbortedFilter([{"ProducerId": 7, "FirstOffset": 0}]))
    assert committed.batch.column("value").to_pylist() == [b"c0", b"c1", b"k0", b"plain"]
    assert committed.batch.column("offset").to_pylist() == [2, 5, 7, 9]
    assert committed.next_offset == 10                  # the markers' offsets are stepped over
    everything = decode_fetched(log, "t", 0, 0, 10)
    assert everything.batch.column("value").to_pylist() == [b"a0", b"a1", b"c0", b"a2", b"c1", b"k0", b"plain"]
    # a read starting inside the aborted transaction still drops its rest
    later = decode_fetched(log, "t", 0, 3, 10, aborted=AbortedFilter([{"ProducerId": 7, "FirstOffset": 0}]))
    assert later.batch.column("value").to_pylist() == [b"c1", b"k0", b"plain"]
