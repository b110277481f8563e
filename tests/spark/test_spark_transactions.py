"""Spark's read_committed and read_uncommitted over transactions written by confluent-kafka's
transactional producer: committed, aborted and still open transactions on two partitions."""
import os
import sys
import time
import uuid

from clients import create_topic, produce_all
from confluent_kafka import Producer

COMMITTED = [b"c1-0", b"c1-1", b"c1-2", b"c2-0"]
ABORTED = [b"a-0", b"a-1", b"a-2"]


def _transactions(bootstrap: str, topic: str) -> Producer:
    """Commit, abort, commit; then leave one transaction open (returned, to commit later)."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"spark-{topic}", "linger.ms": 5,
                  "transaction.timeout.ms": 600_000})      # open while Spark reads, on a loaded machine
    p.init_transactions(30)
    for values, commit in (({0: COMMITTED[:2], 1: COMMITTED[2:3]}, True), ({0: ABORTED[:1], 1: ABORTED[1:]}, False),
                           ({1: COMMITTED[3:]}, True), ({0: [b"open-0"]}, None)):
        p.begin_transaction()
        for part, vs in values.items():
            for v in vs:
                p.produce(topic, v, partition=part)
        assert p.flush(30) == 0
        if commit is True:
            p.commit_transaction(30)
        elif commit is False:
            p.abort_transaction(30)
    return p


def _read(spark, node, topic, isolation):
    return sorted(bytes(r.value) for r in
                  spark.read.format("tierlog").option("kafka.bootstrap.servers", node.bootstrap)
                  .option("subscribe", topic).option("kafka.isolation.level", isolation).load().collect())


def _stream(spark, node, topic, checkpoint, isolation):
    seen = []
    q = (spark.readStream.format("tierlog").option("kafka.bootstrap.servers", node.bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest")
         .option("kafka.isolation.level", isolation).load()
         .writeStream.foreachBatch(lambda df, _id: seen.extend(bytes(r.value) for r in df.collect()))
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    return sorted(seen)


def test_read_committed_sees_exactly_the_committed_records(spark, spark_node, tmp_path):
    topic = f"txn-{uuid.uuid4().hex[:6]}"
    create_topic(spark_node.bootstrap, topic, 2)
    open_txn = _transactions(spark_node.bootstrap, topic)
    assert _read(spark, spark_node, topic, "read_committed") == sorted(COMMITTED)
    assert _read(spark, spark_node, topic, "read_uncommitted") == sorted(COMMITTED + ABORTED + [b"open-0"])
    # streaming: failOnDataLoss (true by default) never trips on the markers' and aborted data's offsets
    checkpoint = tmp_path / "cp"
    assert _stream(spark, spark_node, topic, checkpoint, "read_committed") == sorted(COMMITTED)
    open_txn.commit_transaction(30)
    assert _stream(spark, spark_node, topic, checkpoint, "read_committed") == [b"open-0"]


def _committed_values(bootstrap: str, topic: str, partitions, timeout_s: float = 60) -> list[bytes]:
    """Every value a read_committed consumer finds in ``partitions`` of ``topic``, to their end."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "isolation.level": "read_committed", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    values, at_end = [], set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(at_end) < len(partitions) and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None:
                (at_end.add(m.partition()) if m.error() else (values.append(m.value()), at_end.discard(m.partition())))
        assert len(at_end) == len(partitions), f"read_committed of {topic} did not reach the end"
        return sorted(values)
    finally:
        c.close()


def test_the_transactional_sink_writes_each_record_once_across_a_failed_batch(spark, spark_node, tmp_path):
    """Micro-batch 0 fails after the task writing output partition 0 committed its transaction;
    the query restarted from its checkpoint re-runs batch 0, and that task writes nothing again."""
    from pyspark import cloudpickle
    from pyspark.sql import functions as F

    cloudpickle.register_pickle_by_value(sys.modules[__name__])     # the UDF below, for Spark's workers
    source, sink = f"eo-in-{uuid.uuid4().hex[:6]}", f"eo-out-{uuid.uuid4().hex[:6]}"
    create_topic(spark_node.bootstrap, source, 2)
    create_topic(spark_node.bootstrap, sink, 2)
    values = [b"p%d-%d" % (i % 2, i // 2) for i in range(200)]
    produce_all(spark_node.bootstrap, source, [(i % 2, None, v, None, None) for i, v in enumerate(values)])
    flag, bootstrap = tmp_path / "fail-once", spark_node.bootstrap
    flag.touch()

    @F.udf("binary")
    def fail_once_after_partition_0(value):
        if value == b"p1-60" and os.path.exists(flag):
            # fail this task (input partition 1) once the other one's 100 records are committed
            got = 0
            for _ in range(600):
                got = len(_committed_values(bootstrap, sink, [0], timeout_s=30))
                if got >= 100:
                    break
                time.sleep(0.2)
            raise RuntimeError(f"injected failure after {got} records of partition 0 were committed")
        return value

    def run():
        q = (spark.readStream.format("tierlog").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest").load()
             .select(fail_once_after_partition_0("value").alias("value"), "partition")
             .writeStream.format("tierlog").option("kafka.bootstrap.servers", bootstrap).option("topic", sink)
             .option("transactional", "true").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination(180)
        except Exception as exc:        # noqa: BLE001 - the first run's failure is what is checked
            return exc
        return q.exception()

    failed = run()
    assert failed is not None and "injected failure after 100 records" in str(failed)
    assert _committed_values(bootstrap, sink, [0, 1]) == sorted(values[0::2])   # partition 0's, committed
    flag.unlink()
    assert run() is None
    assert _committed_values(bootstrap, sink, [0, 1]) == sorted(values)         # each record once


def test_a_transactional_batch_write_commits_each_task(spark, spark_node):
    topic = f"txw-{uuid.uuid4().hex[:6]}"
    create_topic(spark_node.bootstrap, topic, 2)
    df = spark.range(300).selectExpr("cast(id as string) as value", "cast(id % 2 as int) as partition").repartition(3)
    (df.write.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap).option("topic", topic)
       .option("transactional", "true").mode("append").save())
    assert _committed_values(spark_node.bootstrap, topic, [0, 1]) == sorted(str(i).encode() for i in range(300))
    assert _read(spark, spark_node, topic, "read_committed") == sorted(str(i).encode() for i in range(300))


def test_foreach_batch_writes_with_a_prefix_record_their_micro_batch(spark, spark_node, tmp_path):
    """A transactional batch write inside foreachBatch, with transactionalIdPrefix, commits its
    micro-batch id with its rows (what makes a re-run micro-batch skip it)."""
    from confluent_kafka import Consumer, TopicPartition

    from tierlog.spark.transactional_write import BATCHES_TOPIC

    source, sink, prefix = (f"{kind}-{uuid.uuid4().hex[:6]}" for kind in ("fb-in", "fb-out", "fb-txn"))
    create_topic(spark_node.bootstrap, source, 1)
    create_topic(spark_node.bootstrap, sink, 1)
    produce_all(spark_node.bootstrap, source, [(0, None, b"v%d" % i, None, None) for i in range(20)])

    def write(df, _batch_id):
        (df.select("value").coalesce(1).write.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
           .option("topic", sink).option("transactional", "true").option("transactionalIdPrefix", prefix)
           .mode("append").save())

    q = (spark.readStream.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
         .option("subscribe", source).option("startingOffsets", "earliest").load()
         .writeStream.foreachBatch(write).option("checkpointLocation", str(tmp_path / "cp"))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    assert _committed_values(spark_node.bootstrap, sink, [0]) == sorted(b"v%d" % i for i in range(20))
    c = Consumer({"bootstrap.servers": spark_node.bootstrap, "group.id": prefix})
    try:
        [done] = c.committed([TopicPartition(BATCHES_TOPIC, 0)], timeout=30)
    finally:
        c.close()
    assert done.offset == 1                     # micro-batch 0, recorded as 0 + 1
