"""Batch reads through the tierlog data source, checked against what confluent-kafka wrote."""
import json
import time

import pytest
from clients import create_topic, produce_all
from nodeproc import free_port


def _reader(spark, node, **options):
    r = spark.read.format("tierlog").option("kafka.bootstrap.servers", node.bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


@pytest.fixture(scope="session")
def written(spark_node):
    """Two partitions: null and empty keys, null values, headers (null header values too), zstd batches.

    Session-scoped like ``spark_node``, whose topic it creates: with ``--dist worksteal`` a worker can
    leave this module and come back, which would set up a module-scoped fixture a second time."""
    create_topic(spark_node.bootstrap, "read-a", 2)
    records = []
    for i in range(3000):
        key = None if i % 7 == 0 else (b"" if i % 11 == 0 else b"key-%d" % i)
        value = None if i % 13 == 0 else b"value-%d-" % i + b"x" * (i % 40)
        headers = [("trace", b"t%d" % i), ("empty", None)] if i % 5 == 0 else None
        records.append((i % 2, key, value, headers, 1_700_000_000_000 + i))
    produce_all(spark_node.bootstrap, "read-a", records[:1500])
    produce_all(spark_node.bootstrap, "read-a", records[1500:], **{"compression.type": "zstd"})
    return records


def test_batch_read_equals_what_was_produced(spark, spark_node, written):
    df = _reader(spark, spark_node, subscribe="read-a", includeHeaders="true")
    assert [f.name for f in df.schema.fields] == ["key", "value", "topic", "partition", "offset", "timestamp",
                                                  "timestampType", "headers"]
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>")
    rows = df.collect()
    assert len(rows) == len(written)
    got = {}
    for r in rows:
        assert r.topic == "read-a" and r.timestampType == 0
        got.setdefault(r.partition, []).append(r)
    for part in (0, 1):
        want = [rec for rec in written if rec[0] == part]
        have = sorted(got[part], key=lambda r: r.offset)
        assert [r.offset for r in have] == list(range(len(want)))
        for r, (_, key, value, headers, ts) in zip(have, want):
            assert (None if r.key is None else bytes(r.key)) == key
            assert (None if r.value is None else bytes(r.value)) == value
            assert int(r.timestamp.timestamp() * 1000) == ts
            hs = [(h.key, None if h.value is None else bytes(h.value)) for h in (r.headers or [])]
            assert hs == (headers or [])


def test_a_schema_picks_the_columns_read(spark, spark_node, written):
    """``.schema(...)`` naming some of the source's columns reads those, in its order; a headers
    column decodes the headers without ``includeHeaders``."""
    base = spark.read.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap) \
        .option("subscribe", "read-a")
    df = base.schema("offset long, partition int, value binary").load()
    assert df.columns == ["offset", "partition", "value"]
    want = {(rec[0], i // 2): rec[2] for i, rec in enumerate(written)}     # record i: offset i // 2 of i % 2
    got = {(r.partition, r.offset): None if r.value is None else bytes(r.value) for r in df.collect()}
    assert got == want
    headers = base.schema("headers array<struct<key: string, value: binary>>").load()
    assert headers.filter("size(headers) > 0").count() == sum(1 for rec in written if rec[3])


@pytest.mark.parametrize("schema, said", [
    ("nope int", "no column 'nope'"),
    ("offset int", "column 'offset' is long, not int"),
    ("value binary, value binary", "named twice"),
])
def test_a_schema_the_source_cannot_give_is_refused(spark, spark_node, written, schema, said):
    with pytest.raises(Exception, match=said):
        spark.read.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap) \
            .option("subscribe", "read-a").schema(schema).load().count()


def test_offsets_options_and_min_partitions(spark, spark_node, written):
    start = json.dumps({"read-a": {"0": 100, "1": -2}})
    end = json.dumps({"read-a": {"0": 200, "1": 50}})
    df = _reader(spark, spark_node, subscribe="read-a", startingOffsets=start, endingOffsets=end, minPartitions="6")
    assert df.rdd.getNumPartitions() >= 6
    rows = df.select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, o) for o in range(100, 200)] + [(1, o) for o in range(50)]
    df = _reader(spark, spark_node, assign=json.dumps({"read-a": [1]}), endingOffsets=json.dumps({"read-a": {"1": 10}}))
    assert sorted(r.offset for r in df.collect()) == list(range(10)) and {r.partition for r in df.collect()} == {1}
    assert _reader(spark, spark_node, subscribePattern="read-[a]").count() == len(written)


def test_starting_timestamp(spark, spark_node, written):
    # record i has timestamp 1_700_000_000_000 + i and lands in partition i % 2 at offset i // 2
    df = _reader(spark, spark_node, subscribe="read-a", startingTimestamp=str(1_700_000_000_000 + 2000))
    assert df.count() == 1000
    by_part = json.dumps({"read-a": {"0": 1_700_000_000_000 + 2990, "1": 1_700_000_000_000}})
    df = _reader(spark, spark_node, subscribe="read-a", startingOffsetsByTimestamp=by_part)
    assert df.count() == 5 + 1500
    with pytest.raises(Exception, match="startingTimestamp"):
        _reader(spark, spark_node, subscribe="read-a", startingTimestamp=str(int(time.time() * 1000) + 10**9)).count()


@pytest.mark.parametrize("options, named", [
    ({"subscribe": "read-a", "startingOffsets": "beginning"}, "startingOffsets"),
    ({"subscribe": "read-a", "startingOffsets": "latest"}, "startingOffsets"),
    ({"subscribe": "read-a", "endingOffsets": '{"read-a": {"0": "x"}}'}, "endingOffsets"),
    ({"subscribe": "read-a", "startingOffsets": json.dumps({"read-a": {"0": 1}})}, "startingOffsets"),
    ({"subscribe": "read-a", "kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
    ({"subscribe": "read-a", "assign": '{"read-a": [0]}'}, "subscribe"),
    ({"subscribe": "read-a", "minPartitions": "zero"}, "minPartitions"),
    ({"subscribe": "read-a", "kafka.isolation.level": "snapshot"}, "kafka.isolation.level"),
    ({"subscribe": "read-a", "kafka.max.poll.records": "5"}, "kafka.max.poll.records: not supported"),
])
def test_bad_option_names_the_option(spark, spark_node, written, options, named):
    """The message is what the user reads first: Spark's one line carries it, no worker traceback
    (spark/option_errors.py)."""
    with pytest.raises(Exception, match=named) as caught:
        _reader(spark, spark_node, **options).count()
    first, *_ = str(caught.value).splitlines()
    assert first.startswith("[PYTHON_DATA_SOURCE_ERROR] Failed to ") and f": tierlog.spark.options.OptionError: {named}" in first
    assert "Traceback" not in str(caught.value)


def test_missing_bootstrap_names_the_option(spark):
    with pytest.raises(Exception, match="kafka.bootstrap.servers"):
        spark.read.format("tierlog").option("subscribe", "read-a").load().count()


def test_empty_missing_and_unmatched_reads_give_an_empty_dataframe(spark, spark_node):
    """Spark's Kafka source: no partition to read, no rows (a missing topic has no partitions)."""
    create_topic(spark_node.bootstrap, "read-empty", 2)
    for options in ({"subscribe": "read-empty"}, {"subscribe": "read-no-such-topic"},
                    {"subscribePattern": "read-nothing-[0-9]+"}):
        df = _reader(spark, spark_node, **options)
        assert df.collect() == [] and df.columns[:2] == ["key", "value"], options


def test_the_kafka_sources_remaining_options_are_taken(spark, spark_node, written):
    df = _reader(spark, spark_node, subscribe="read-a", groupIdPrefix="audit",
                 **{"kafkaConsumer.pollTimeoutMs": "30000", "fetchOffset.numRetries": "1",
                    "fetchOffset.retryIntervalMs": "50", "kafka.isolation.level": "read_uncommitted"})
    assert df.count() == len(written)


def test_offset_queries_are_asked_again_then_fail_naming_the_options(spark):
    r = (spark.read.format("tierlog").option("kafka.bootstrap.servers", f"127.0.0.1:{free_port()}")
         .option("subscribe", "read-a").option("kafka.request.timeout.ms", "300")
         .option("fetchOffset.numRetries", "1").option("fetchOffset.retryIntervalMs", "20"))
    with pytest.raises(Exception, match=r"failed 2 time\(s\) \(fetchOffset.numRetries=1, fetchOffset.retryIntervalMs=20\)"):
        r.load().count()
