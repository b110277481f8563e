"""remoteStorage=table: a read of a key_value table topic served by its Iceberg table where the table
covers the range, the rest (the local tail) through the broker; the rows equal a read_committed read
through the broker, aborted transactions and all."""
import json
import uuid

import pytest
import tiered_topic
from clients import create_topic, produce_all
from cluster import wait_for
from confluent_kafka import Producer
from nodeproc import NodeProcess
from tiered import LATEST_TIERED, TIERED_TOPIC, fs_props, offsets

from tierlog.spark.options import OptionError
from tierlog.spark.source import TierlogDataSource
from tierlog.spark.table_topic import TableRangePartition
from tierlog.tiered import FsObjectStore
from tierlog.tiered.table.catalog import TableCatalog, covered_offsets, table_settings

TOPIC, PARTITIONS = "kv-table", tiered_topic.PARTITIONS
COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def _covered(catalog) -> dict[int, int]:
    try:
        table = catalog.load(TOPIC)
    except Exception:       # noqa: BLE001 -- the broker creates the catalog file meanwhile
        return {}
    return {} if table is None else covered_offsets(table)


def _transactions(node) -> None:
    """Partition 0: a committed transaction, an aborted one, a committed one (60 records of 20 KB each)."""
    producer = Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 5,
                         "transactional.id": f"kv-table-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(30)
    for txn in range(3):
        producer.begin_transaction()
        for i in range(60):
            producer.produce(TOPIC, b"txn-%d-%d:" % (txn, i) + b"t" * 20_000, partition=0)
        if txn == 1:
            assert producer.flush(30) == 0
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)


@pytest.fixture(scope="module")
def table_node(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-table-topic")
    remote = root / "remote-storage"
    node = NodeProcess(root / "node-1", props=fs_props(remote)).start()
    try:
        create_topic(node.bootstrap, TOPIC, PARTITIONS, {**TIERED_TOPIC, "tierlog.table.mode": "key_value"})
        rows = tiered_topic.records()
        produce_all(node.bootstrap, TOPIC, rows[:tiered_topic.RECORDS // 2])
        _transactions(node)
        produce_all(node.bootstrap, TOPIC, rows[tiered_topic.RECORDS // 2:], **{"compression.type": "zstd"})
        catalog = TableCatalog(table_settings(FsObjectStore(remote), {}))
        # the transactions (~3.6 MB from offset 2000 of partition 0) in the table, and a local tail
        wait_for(lambda: (c := _covered(catalog)).get(0, -1) > 2300 and c.get(1, -1) >= 1000
                 and all((offsets(node, TOPIC, p, LATEST_TIERED) or -1) == c[p] for p in range(PARTITIONS)),
                 180, f"{TOPIC}'s table past the transactions", interval_s=0.5)
        node.remote = remote
        yield node
    finally:
        if node.alive():
            node.stop()


def _options(node, remote: str, **extra) -> dict:
    return {"kafka.bootstrap.servers": node.bootstrap, "subscribe": TOPIC, "includeHeaders": "true",
            "kafka.isolation.level": "read_committed", "remoteStorage": remote, **extra}


def _rows(spark, options) -> list:
    reader = spark.read.format("tierlog")
    for k, v in options.items():
        reader = reader.option(k, v)
    return sorted((tuple(r) for r in reader.load().select(*COLUMNS).collect()), key=lambda r: (r[3], r[4]))


def _plan(options):
    source = TierlogDataSource(options)
    return source.reader(source.schema()).partitions()


def test_the_table_serves_what_it_covers_and_the_rows_equal_the_brokers(spark, table_node):
    tiered = {p: offsets(table_node, TOPIC, p, LATEST_TIERED) for p in range(PARTITIONS)}
    plan = _plan(_options(table_node, "table"))
    from_table = [p for p in plan if isinstance(p, TableRangePartition)]
    for p in range(PARTITIONS):      # the table from 0 to the highest tiered offset, the tail through the broker
        assert min(t.start for t in from_table if t.partition == p) == 0, plan
        assert max(t.end for t in from_table if t.partition == p) >= tiered[p] + 1, (plan, tiered)
    tail = [p for p in plan if not isinstance(p, TableRangePartition)]
    assert tail and all(p.segment is None for p in tail), plan
    ends = {p: max(t.end for t in plan if t.partition == p) for p in range(PARTITIONS)}
    assert all(sum(t.end - t.start for t in plan if t.partition == p) == ends[p] for p in range(PARTITIONS))

    through_broker = _rows(spark, _options(table_node, "off", endingOffsets=json.dumps(
        {TOPIC: {str(p): e for p, e in ends.items()}})))
    read = _rows(spark, _options(table_node, "table", endingOffsets=json.dumps(
        {TOPIC: {str(p): e for p, e in ends.items()}})))
    assert len(read) == len(through_broker) > tiered_topic.RECORDS
    assert read == through_broker
    values = [bytes(r[1]) for r in read if r[3] == 0]
    assert sum(v.startswith(b"txn-") for v in values) == 120 and not any(v.startswith(b"txn-1-") for v in values)


def test_a_range_within_the_table_reads_only_its_offsets(spark, table_node):
    ends = json.dumps({TOPIC: {"0": 1500, "1": 900}})
    starts = json.dumps({TOPIC: {"0": 333, "1": 0}})
    options = _options(table_node, "table", startingOffsets=starts, endingOffsets=ends)
    assert all(isinstance(p, TableRangePartition) for p in _plan(options))
    rows = _rows(spark, options)
    assert [(r[3], r[4]) for r in rows] == [(0, o) for o in range(333, 1500)] + [(1, o) for o in range(900)]
    assert rows == _rows(spark, _options(table_node, "off", startingOffsets=starts, endingOffsets=ends))


def test_a_table_read_is_refused_at_read_uncommitted(table_node):
    with pytest.raises(OptionError, match="remoteStorage=table needs kafka.isolation.level=read_committed"):
        _plan({**_options(table_node, "table"), "kafka.isolation.level": "read_uncommitted"})


def test_a_topic_without_a_table_is_read_as_auto_reads_it(spark, table_node):
    create_topic(table_node.bootstrap, "no-table", 1, {})
    produce_all(table_node.bootstrap, "no-table", [(0, None, b"v%d" % i, None, None) for i in range(30)])
    options = {**_options(table_node, "table"), "subscribe": "no-table"}
    assert [type(p).__name__ for p in _plan(options)] == ["TierlogPartition"]
    assert [r[4] for r in _rows(spark, options)] == list(range(30))


def test_a_user_schema_reads_only_its_columns_from_the_table(spark, table_node, monkeypatch):
    """``.schema("partition int, offset long")``: the Parquet files are read for those and ``offset``
    only (no value is decompressed), and the rows equal the same columns read through the broker."""
    ends = json.dumps({TOPIC: {"0": 1500, "1": 900}})
    options = _options(table_node, "table", endingOffsets=ends)
    [part, *_] = [p for p in _plan(options) if isinstance(p, TableRangePartition)]
    import pyarrow.parquet as pq

    from tierlog.spark.table_topic import read_table_range
    asked: list = []
    iter_batches = pq.ParquetFile.iter_batches
    monkeypatch.setattr(pq.ParquetFile, "iter_batches",
                        lambda self, **kw: (asked.append(kw["columns"]), iter_batches(self, **kw))[1])
    batches = list(read_table_range(part, True, ("timestamp", "partition")))
    assert asked and all(c == ["partition", "offset", "timestamp"] for c in asked)
    assert batches[0].schema.names == ["timestamp", "partition"]
    assert sum(b.num_rows for b in batches) == part.end - part.start

    def read(remote):
        reader = spark.read.format("tierlog").schema("partition int, offset long")
        for k, v in {**_options(table_node, remote, endingOffsets=ends), "includeHeaders": "false"}.items():
            reader = reader.option(k, v)
        return sorted(tuple(r) for r in reader.load().collect())
    rows = read("table")
    assert rows == read("off") == [(0, o) for o in range(1500)] + [(1, o) for o in range(900)]
