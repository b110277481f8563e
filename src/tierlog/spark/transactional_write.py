"""The sink's exactly-once writes (``transactional=true``): one Kafka transaction per task.

Spark's streaming commit(epoch) runs on the driver, after every task returned, and Kafka
has no way to commit another process's transaction (KIP-939 is not there yet), so each
task commits its own transaction and records, inside it, which micro-batch it finished:

- transactional.id ``<prefix>-<Spark partition id>``, with the prefix ``transactionalIdPrefix``
  or ``tierlog-spark-<query id>`` (Spark keeps a streaming query's id in its checkpoint, so
  a restarted query gets the same ids). ``init_transactions`` fences the task attempt
  before it with the same id and aborts what that attempt left open;
- the batch id (Spark's ``streaming.sql.batchId`` task property) is committed with the
  records as the offset ``batch id + 1`` of partition ``<Spark partition id>`` of
  ``BATCHES_TOPIC`` in the group ``<prefix>`` (TxnOffsetCommit: offsets in a transaction
  apply only with its COMMIT marker, KIP-98/447);
- a task, once ``init_transactions`` returned (so an earlier attempt's commit under way
  has completed), reads that group's committed offset: when it is past the batch id,
  this partition of this batch was committed by an earlier attempt (the query died
  before Spark wrote its commit log) and the task writes nothing.

So every micro-batch partition's records become visible to read_committed readers once,
provided a re-run micro-batch splits into the same partitions (Spark replays a batch from
the offsets in its checkpoint; a deterministic plan gives the same rows per partition).
Batch writes take one transaction per task: a retried task fences and aborts its earlier
attempt, so a task's rows are visible once and all together. A batch write inside
``foreachBatch`` with ``transactionalIdPrefix`` set records its micro-batch like a
streaming write (the batch id property is set there too), so it is exactly-once as well;
without the option (a new prefix per write) nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

__all__ = ["BATCHES_TOPIC", "transactional_id_prefix", "write_in_transaction"]

BATCHES_TOPIC = "tierlog-spark-sink-batches"     # names the offsets that record finished micro-batches
QUERY_ID_PROPERTY = "sql.streaming.queryId"      # Spark's StreamExecution.QUERY_ID_KEY
BATCH_ID_PROPERTY = "streaming.sql.batchId"      # Spark's MicroBatchExecution.BATCH_ID_KEY
TIMEOUT_S = 60.0


def _task():
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("transactional: the tierlog sink's write runs outside a Spark task")
    return context


def transactional_id_prefix(given: str | None) -> str:
    """The option's prefix, else one per streaming query (its id survives restarts)."""
    if given:
        return given
    query_id = _task().getLocalProperty(QUERY_ID_PROPERTY)
    if not query_id:
        raise RuntimeError("transactionalIdPrefix: no streaming query id in the task to make one from; "
                           "set the option")
    return f"tierlog-spark-{query_id}"


def _consumer_config(config: dict, group: str) -> dict:
    """A consumer of ``group`` that connects as the sink's producer does (security settings)."""
    security = {k: v for k, v in config.items() if k.startswith(("security.", "ssl.", "sasl."))}
    return {"bootstrap.servers": config["bootstrap.servers"], "group.id": group, "enable.auto.commit": False,
            "isolation.level": "read_committed", **security}


class _BatchRecord:
    """The group ``<prefix>``'s record of finished micro-batches, one offset per Spark partition;
    ``batch_id`` is the micro-batch this task writes."""

    def __init__(self, config: dict, group: str, partition: int, batch_id: int):
        from confluent_kafka import Consumer

        self.partition, self.batch_id = partition, batch_id
        self.consumer = Consumer(_consumer_config(config, group))

    def finished_through(self) -> int:
        """Batch id + 1 of the partition's last committed micro-batch, or 0."""
        from confluent_kafka import TopicPartition

        [found] = self.consumer.committed([TopicPartition(BATCHES_TOPIC, self.partition)], timeout=TIMEOUT_S)
        return max(0, found.offset)

    def add_to(self, producer) -> None:
        """Commit ``batch id + 1`` with the producer's transaction (TxnOffsetCommit)."""
        from confluent_kafka import TopicPartition

        done = TopicPartition(BATCHES_TOPIC, self.partition, self.batch_id + 1)
        producer.send_offsets_to_transaction([done], self.consumer.consumer_group_metadata(), TIMEOUT_S)

    def close(self) -> None:
        self.consumer.close()


def write_in_transaction(config: dict, prefix: str | None, produce_rows: Callable,
                         batches: Iterator[pa.RecordBatch], record_batches: bool) -> int:
    """Write the task's rows in one transaction (skipped when its micro-batch was committed
    before, if ``record_batches`` and the task runs in one); the number of rows written.
    ``produce_rows(producer, batches)`` produces them."""
    task = _task()
    prefix = transactional_id_prefix(prefix)
    partition = task.partitionId()
    batch = task.getLocalProperty(BATCH_ID_PROPERTY) if record_batches else None
    batch_id = int(batch) if batch else None
    record = _BatchRecord(config, prefix, partition, batch_id) if batch_id is not None else None
    try:
        return _transaction(config, f"{prefix}-{partition}", record, produce_rows, batches)
    finally:
        if record is not None:
            record.close()


def _transaction(config: dict, transactional_id: str, record: _BatchRecord | None,
                 produce_rows: Callable, batches: Iterator[pa.RecordBatch]) -> int:
    from confluent_kafka import KafkaException, Producer

    producer = Producer({**config, "transactional.id": transactional_id})
    try:
        # first fence the earlier attempt: its commit, if under way, completes before we look
        producer.init_transactions(TIMEOUT_S)
        if record is not None and record.finished_through() > record.batch_id:
            return 0                    # an earlier attempt committed this partition of this batch
        producer.begin_transaction()
        count = produce_rows(producer, batches)
        if record is not None:
            record.add_to(producer)
        producer.commit_transaction(TIMEOUT_S)
    except KafkaException as exc:
        _abort(producer)
        raise RuntimeError(f"tierlog transactional write ({transactional_id}) failed: {exc}") from exc
    return count


def _abort(producer) -> None:
    """Abort what the failed attempt left open; if that fails too, the next attempt's
    init_transactions (or the transaction timeout) aborts it."""
    from confluent_kafka import KafkaException

    try:
        producer.abort_transaction(TIMEOUT_S)
    except KafkaException:
        pass
