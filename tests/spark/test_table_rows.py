"""remoteStorage=table: a Parquet batch of the table becomes the source's rows of the task's offsets
only (a batch wholly inside the range is passed without a filter's copy; one across its ends is cut)."""
import datetime

import pyarrow as pa
import pytest

from tierlog.records.arrow_records import KAFKA_SCHEMA, KAFKA_SCHEMA_WITH_HEADERS
from tierlog.spark.planning import OffsetRange
from tierlog.spark.table_read import TableReadOptions
from tierlog.spark.table_topic import TableRangePartition, _topic_rows
from tierlog.tiered.table.arrow import key_value_schema

T0 = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)


def _batch(offsets: list[int]) -> pa.RecordBatch:
    n = len(offsets)
    columns = {"partition": [3] * n, "offset": offsets, "timestamp": [T0] * n, "timestamp_type": [0] * n,
               "key": [b"k%d" % o for o in offsets], "value": [b"v%d" % o for o in offsets], "headers": [[]] * n}
    return pa.RecordBatch.from_pydict(columns, schema=key_value_schema())


def _part(start: int, end: int) -> TableRangePartition:
    return TableRangePartition(OffsetRange("t", 3, start, end), ("file:///x.parquet",), TableReadOptions("t", ""))


@pytest.mark.parametrize(("start", "end", "kept"), [
    (10, 20, list(range(10, 20))),      # the whole batch: no filter
    (0, 100, list(range(10, 20))),
    (12, 20, list(range(12, 20))),      # the range's first file
    (10, 15, list(range(10, 15))),      # its last
    (12, 13, [12]),
    (20, 30, []),
])
def test_only_the_ranges_offsets_become_rows(start, end, kept):
    rows = _topic_rows(_batch(list(range(10, 20))), _part(start, end), tuple(KAFKA_SCHEMA.names))
    assert rows.schema == KAFKA_SCHEMA
    assert rows.column("offset").to_pylist() == kept
    assert rows.column("value").to_pylist() == [b"v%d" % o for o in kept]
    assert rows.column("topic").to_pylist() == ["t"] * len(kept)


def test_an_empty_batch_is_no_rows():
    assert _topic_rows(_batch([]), _part(0, 10), tuple(KAFKA_SCHEMA_WITH_HEADERS.names)).num_rows == 0


def test_the_named_columns_only_in_their_order():
    rows = _topic_rows(_batch([10, 11]).select(["offset", "timestamp"]), _part(0, 100), ("timestamp", "offset"))
    assert rows.schema.names == ["timestamp", "offset"] and rows.column("offset").to_pylist() == [10, 11]
