"""spark.read.format("tierlog").option("table", ...): a topic's Iceberg table read with no broker,
planned with pyiceberg (the filters Spark pushes prune data files), against a table two segments of
two partitions made through the same writer the brokers use."""
from __future__ import annotations

import json
import uuid

import pytest

from tierlog.records import Record, build_batch
from tierlog.spark.options import OptionError
from tierlog.storage.table_config import VALUE_JSON
from tierlog.tiered import FsObjectStore
from tierlog.tiered.table.catalog import TableCatalog, table_settings
from tierlog.tiered.table.writer import SegmentCommit, TableWriter

NOW = 1_700_000_000_000
SCHEMA = json.dumps({"type": "object", "properties": {"id": {"type": "integer"}, "amount": {"type": "number"}},
                     "required": ["id"]})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("table-read")
    store = FsObjectStore(root / "remote")
    store.root.mkdir()
    writer = TableWriter(store, TableCatalog(table_settings(store, {})), root / "staging")
    for partition in (0, 1):
        for start in (0, 100):
            records = [Record(o, NOW + o * 1000, b"k%d" % o,
                              b"oops" if o == 50 else json.dumps({"id": partition * 1000 + o, "amount": o / 2}).encode())
                       for o in range(start, start + 100)]
            log = root / f"{partition}-{start}.log"
            log.write_bytes(build_batch(records, base_offset=start))
            writer.commit_segment(SegmentCommit("sales", partition, uuid.uuid4(), start, start + 99, log, [],
                                                VALUE_JSON, SCHEMA))
    return str(store.root)


def _read(spark, store, **options):
    reader = spark.read.format("tierlog").option("table", "sales").option("storage", store)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_the_table_reads_as_its_rows(spark, store):
    df = _read(spark, store)
    assert df.columns == ["partition", "offset", "timestamp", "timestamp_type", "key", "headers", "id", "amount"]
    rows = df.select("partition", "offset", "id", "amount").orderBy("partition", "offset").collect()
    assert len(rows) == 2 * 199
    assert [tuple(r) for r in rows[:2]] == [(0, 0, 0, 0.0), (0, 1, 1, 0.5)]
    assert rows[-1]["id"] == 1199
    assert df.rdd.getNumPartitions() == 1        # four small files, one task
    dead = _read(spark, store, deadLetter="true").select("partition", "offset", "error").orderBy("partition").collect()
    assert [(r["partition"], r["offset"]) for r in dead] == [(0, 50), (1, 50)]


def test_pushed_filters_prune_files_and_the_rows_still_match(spark, store):
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    df = _read(spark, store).where("partition = 1 AND offset >= 150")
    assert df.count() == 50
    reader = _plan(store, df)
    assert reader.row_filter == "partition = 1 and offset >= 150" or "partition = 1" in reader.row_filter
    files = reader.partitions()[0].files
    assert len(files) == 1 and "partition=1" in files[0] and "00000000000000000100-" in files[0]
    ts = _read(spark, store).where("timestamp >= timestamp'2023-11-14 22:15:00'")
    assert ts.count() == sum(1 for p in (0, 1) for o in range(200) if o != 50 and NOW + o * 1000 >= 1_699_999_999_999 + 100_001)


def _plan(store, df):
    """The reader Spark planned with the filters it pushed (re-made on the driver from the same filter)."""
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual

    from tierlog.spark.table_read import TierlogTableReader, arrow_schema, load_table, table_read_options
    opts = table_read_options({"table": "sales", "storage": store})
    reader = TierlogTableReader(opts, arrow_schema(load_table(opts)))
    list(reader.pushFilters([EqualTo(("partition",), 1), GreaterThanOrEqual(("offset",), 150)]))
    return reader


def test_a_missing_table_is_one_line(store):
    from tierlog.spark.table_read import load_table, table_read_options
    with pytest.raises(OptionError, match="table: no table of topic 'nope'"):
        load_table(table_read_options({"table": "nope", "storage": store}))
    with pytest.raises(OptionError, match="startingoffsets: not an option of a table read"):
        table_read_options({"table": "sales", "storage": store, "startingOffsets": "earliest"})


def test_a_user_schema_prunes_the_columns_read(spark, store, monkeypatch):
    df = spark.read.format("tierlog").schema("amount double, id bigint").option("table", "sales") \
        .option("storage", store).load()
    assert df.columns == ["amount", "id"]
    assert df.selectExpr("sum(id)").collect()[0][0] == sum(p * 1000 + o for p in (0, 1) for o in range(200) if o != 50)

    import pyarrow.parquet as pq
    from pyspark.sql.types import DoubleType, StructField, StructType

    from tierlog.spark.table_read import (
        TierlogTableReader,
        arrow_schema,
        chosen_table_columns,
        load_table,
        table_read_options,
    )
    opts = table_read_options({"table": "sales", "storage": store})
    reader = TierlogTableReader(opts, chosen_table_columns(StructType([StructField("amount", DoubleType())]),
                                                           arrow_schema(load_table(opts))))
    asked: list = []
    iter_batches = pq.ParquetFile.iter_batches
    monkeypatch.setattr(pq.ParquetFile, "iter_batches",
                        lambda self, **kw: (asked.append(kw["columns"]), iter_batches(self, **kw))[1])
    batches = [b for p in reader.partitions() for b in reader.read(p)]
    assert asked and all(c == ["amount"] for c in asked) and batches[0].schema.names == ["amount"]


def test_a_user_schema_naming_what_the_table_lacks_is_one_line(spark, store):
    from pyspark.errors import PySparkException
    for ddl, error in (("nope string", "schema: the table has no column 'nope'; its columns are partition int, "),
                       ("id string", "schema: column 'id' is bigint, not string; its columns are ")):
        with pytest.raises(PySparkException, match=error):
            spark.read.format("tierlog").schema(ddl).option("table", "sales").option("storage", store).load().collect()
