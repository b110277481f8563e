"""Structured Streaming from tierlog: checkpointed offsets, exactly once into an idempotent sink."""
import time

from clients import create_topic, produce_all

from tierlog.spark import offsets_behind_latest


class BatchSink:
    """Idempotent: a re-run micro-batch replaces what the same batch id wrote."""

    def __init__(self):
        self.batches: dict[int, list] = {}

    def __call__(self, df, batch_id):
        self.batches[batch_id] = [(r.topic, r.partition, r.offset, bytes(r.value)) for r in df.collect()]

    def rows(self):
        return [row for b in sorted(self.batches) for row in self.batches[b]]


def _produce(node, topic, partitions, start, n):
    produce_all(node.bootstrap, topic, [(i % partitions, None, b"v%d" % i, None, None)
                                        for i in range(start, start + n)])


def _stream(spark, node, sink, checkpoint, **options):
    r = (spark.readStream.format("tierlog").option("kafka.bootstrap.servers", node.bootstrap)
         .option("subscribePattern", "stream-a.*").option("startingOffsets", "earliest"))
    for k, v in options.items():
        r = r.option(k, v)
    return r.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))


def test_stop_and_restart_from_checkpoint_exactly_once(spark, spark_node, tmp_path):
    create_topic(spark_node.bootstrap, "stream-a1", 2)
    _produce(spark_node, "stream-a1", 2, 0, 600)
    sink = BatchSink()
    checkpoint = tmp_path / "checkpoint"

    # 1. a running query, stopped after its first batches (maxOffsetsPerTrigger keeps batches small)
    query = _stream(spark, spark_node, sink, checkpoint, maxOffsetsPerTrigger="200").trigger(
        processingTime="200 milliseconds").start()
    deadline = time.monotonic() + 180        # a loaded 2-core machine may take a minute per batch
    while len(sink.batches) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()
    assert len(sink.batches) >= 2 and all(len(b) <= 200 for b in sink.batches.values())
    # the Kafka source's progress metrics: batch 0 took 100 of each partition's 300 records
    first = next(p for p in query.recentProgress if p["numInputRows"] > 0)
    assert offsets_behind_latest(first["sources"][0]) == {
        "minOffsetsBehindLatest": "200", "maxOffsetsBehindLatest": "200", "avgOffsetsBehindLatest": "200.0"}

    # 2. more data, and a new topic matching the pattern (new partitions are picked up from earliest)
    _produce(spark_node, "stream-a1", 2, 600, 300)
    create_topic(spark_node.bootstrap, "stream-a2", 1)
    _produce(spark_node, "stream-a2", 1, 10_000, 50)

    # 3. restart from the checkpoint and read everything available now, in batches of at most 250
    before = len(sink.batches)
    query = _stream(spark, spark_node, sink, checkpoint, maxOffsetsPerTrigger="250").trigger(
        availableNow=True).start()
    query.awaitTermination(120)
    assert len(sink.batches) > before + 1
    assert all(len(b) <= 250 for b in sink.batches.values())

    rows = sink.rows()
    keys = [(t, p, o) for t, p, o, _ in rows]
    assert len(keys) == len(set(keys)), "a record was delivered twice"
    expected = {("stream-a1", i % 2, i // 2) for i in range(900)} | {("stream-a2", 0, i) for i in range(50)}
    assert set(keys) == expected
    values = {(t, p, o): v for t, p, o, v in rows}
    assert values[("stream-a1", 1, 449)] == b"v899" and values[("stream-a2", 0, 0)] == b"v10000"


def test_stream_to_tierlog_sink(spark, spark_node, tmp_path):
    create_topic(spark_node.bootstrap, "stream-in", 2)
    create_topic(spark_node.bootstrap, "stream-out", 2)
    _produce(spark_node, "stream-in", 2, 0, 400)
    query = (spark.readStream.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
             .option("subscribe", "stream-in").option("startingOffsets", "earliest").load()
             .selectExpr("key", "value", "partition")
             .writeStream.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
             .option("topic", "stream-out").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    back = (spark.read.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
            .option("subscribe", "stream-out").load().selectExpr("cast(value as string) v", "partition").collect())
    assert sorted(r.v for r in back) == sorted(f"v{i}" for i in range(400))
    assert {(r.partition, int(r.v[1:]) % 2) for r in back} == {(0, 0), (1, 1)}


def test_lost_data_follows_fail_on_data_loss(spark, spark_node, tmp_path):
    from confluent_kafka.admin import AdminClient

    create_topic(spark_node.bootstrap, "stream-lost", 1)
    _produce(spark_node, "stream-lost", 1, 0, 100)
    checkpoints = {flag: tmp_path / f"cp-{flag}" for flag in ("true", "false")}
    sinks = {flag: BatchSink() for flag in checkpoints}

    def run(flag):
        q = (spark.readStream.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
             .option("subscribe", "stream-lost").option("startingOffsets", "earliest")
             .option("failOnDataLoss", flag).load()
             .writeStream.foreachBatch(sinks[flag]).option("checkpointLocation", str(checkpoints[flag]))
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination(120)
        except Exception as e:           # noqa: BLE001 - the query's failure is what is checked
            return e
        return q.exception()

    for flag in checkpoints:
        assert run(flag) is None
    # the topic is deleted and recreated with fewer records: offsets 10..99 are gone
    admin = AdminClient({"bootstrap.servers": spark_node.bootstrap})
    admin.delete_topics(["stream-lost"])["stream-lost"].result(20)
    deadline = time.monotonic() + 30
    while "stream-lost" in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.2)
    create_topic(spark_node.bootstrap, "stream-lost", 1)
    _produce(spark_node, "stream-lost", 1, 1000, 10)
    failed = run("true")
    assert failed is not None and "failOnDataLoss" in str(failed)
    assert run("false") is None
