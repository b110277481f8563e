"""Spark's read_committed and read_uncommitted over transactions written by confluent-kafka's
transactional producer: committed, aborted and still open transactions on two partitions."""
import uuid

from clients import create_topic
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
