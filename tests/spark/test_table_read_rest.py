"""spark.read.format("tierlog").option("table", ...) through a REST catalog: a real Iceberg REST catalog
server (tests/support/rest_catalog.py, Lakana's, from .venv-rest) holding a table that the brokers'
writer committed over HTTP, two segments of two partitions; Spark finds it with the brokers' own
settings as options (tierlog.table.catalog.*, tierlog.table.namespace) and reads every row, a pushed
filter planning one file of four."""
from __future__ import annotations

import uuid

import pytest
from rest_catalog import rest_catalog_server

from tierlog.records import Record, build_batch
from tierlog.storage.table_config import KEY_VALUE
from tierlog.tiered import FsObjectStore
from tierlog.tiered.table.catalog import TableCatalog, table_settings
from tierlog.tiered.table.writer import SegmentCommit, TableWriter

NOW = 1_700_000_000_000


@pytest.fixture(scope="module")
def rest_table(tmp_path_factory):
    """(remote store root, the REST catalog's settings) of a table "sales" committed through the catalog."""
    root = tmp_path_factory.mktemp("table-read-rest")
    store = FsObjectStore(root / "remote")
    with rest_catalog_server(root / "rest-catalog", store.root / "tierlog-tables") as rest:
        writer = TableWriter(store, TableCatalog(table_settings(store, rest.properties())), root / "staging")
        for partition in (0, 1):
            for start in (0, 100):
                records = [Record(o, NOW + o, b"k%d" % o, b"%d-%d" % (partition, o)) for o in range(start, start + 100)]
                log = root / f"{partition}-{start}.log"
                log.write_bytes(build_batch(records, base_offset=start))
                writer.commit_segment(SegmentCommit("sales", partition, uuid.uuid4(), start, start + 99, log, [],
                                                    KEY_VALUE, ""))
        yield str(store.root), rest.properties()


def test_spark_reads_a_table_of_a_rest_catalog_with_the_brokers_settings(spark, rest_table):
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    store, settings = rest_table
    reader = spark.read.format("tierlog").option("table", "sales").option("storage", store)
    for k, v in settings.items():
        reader = reader.option(k, v)
    df = reader.load()
    rows = df.select("partition", "offset", "value").orderBy("partition", "offset").collect()
    assert [(r["partition"], r["offset"], bytes(r["value"])) for r in rows] == [
        (p, o, b"%d-%d" % (p, o)) for p in (0, 1) for o in range(200)]
    assert df.where("partition = 1 AND offset >= 150").count() == 50

    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual

    from tierlog.spark.table_read import TierlogTableReader, arrow_schema, load_table, table_read_options
    opts = table_read_options({"table": "sales", "storage": store, **settings})
    planner = TierlogTableReader(opts, arrow_schema(load_table(opts)))
    list(planner.pushFilters([EqualTo(("partition",), 1), GreaterThanOrEqual(("offset",), 150)]))
    [task] = planner.partitions()
    assert len(task.files) == 1 and "partition=1" in task.files[0] and "00000000000000000100-" in task.files[0]
