"""The ``tierlog`` sink: Arrow batches from Spark tasks to a confluent-kafka producer.

Each task produces its rows (acks=all by default) and flushes before it reports
success: at-least-once, as Spark's Kafka sink. With ``transactional=true`` each task
writes in one Kafka transaction and a streaming query's micro-batches are written
exactly once across restarts (`spark.transactional_write`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from tierlog.spark.option_errors import option_errors_in_one_line
from tierlog.spark.options import OptionError, SinkOptions, parse_sink_options
from tierlog.spark.transactional_write import write_in_transaction
from tierlog.spark.worker_gc import before_task

__all__ = ["TierlogBatchWriter", "TierlogCommit", "TierlogStreamWriter", "produce_rows"]


class TierlogCommit(WriterCommitMessage):
    def __init__(self, records: int):
        self.records = records


def _check_write_schema(schema: StructType, topic_option: str | None) -> None:
    names = {f.name.lower(): f for f in schema.fields}
    if "value" not in names:
        raise OptionError("value: the DataFrame written to tierlog needs a 'value' column (binary or string)")
    if topic_option is None and "topic" not in names:
        raise OptionError("topic: set the 'topic' option or give the DataFrame a 'topic' column")
    for col in ("key", "value"):
        if col in names and names[col].dataType.typeName() not in ("binary", "string"):
            raise OptionError(f"{col}: column type {names[col].dataType.simpleString()} is not binary or string")


class _Deliveries:
    """Delivery reports of one task's producer: failures counted, the first few kept."""

    def __init__(self):
        self.failed = 0
        self.failures: list[str] = []

    def __call__(self, err, msg) -> None:
        if err is not None:
            self.failed += 1
            if len(self.failures) < 5:
                self.failures.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}")


def _columns(batch: pa.RecordBatch, default_topic: str | None):
    """(topic, key, value, partition, headers) per row of ``batch``."""
    names = batch.schema.names
    n = batch.num_rows

    def column(name):
        return batch.column(names.index(name)).to_pylist() if name in names else [None] * n
    topics = [default_topic] * n if default_topic is not None else column("topic")
    return zip(topics, column("key"), column("value"), column("partition"), column("headers"))


def produce_rows(producer, default_topic: str | None, batches: Iterator[pa.RecordBatch], on_delivery) -> int:
    """Produce every row of ``batches`` (waiting when the producer's queue is full); the row count."""
    from confluent_kafka import KafkaException

    produce, poll = producer.produce, producer.poll
    count = 0
    for batch in batches:
        for topic, key, value, part, hdrs in _columns(batch, default_topic):
            if topic is None:
                raise ValueError("topic: a row has a null topic and no 'topic' option is set")
            kwargs = {}
            if part is not None:
                kwargs["partition"] = part
            if hdrs:
                kwargs["headers"] = [(h["key"], h["value"]) for h in hdrs]
            while True:
                try:
                    produce(topic, value, key, on_delivery=on_delivery, **kwargs)
                    break
                except BufferError:
                    poll(0.05)
                except KafkaException as e:
                    raise RuntimeError(f"tierlog write to {topic} failed: {e}") from e
            count += 1
        poll(0)
    return count


def _write_batches(sink: SinkOptions, batches: Iterator[pa.RecordBatch]) -> TierlogCommit:
    """Produce every row, flush, and fail the task if anything was not delivered."""
    from confluent_kafka import Producer

    config = sink.producer_config
    producer = Producer(config)
    deliveries = _Deliveries()
    count = produce_rows(producer, sink.topic, batches, deliveries)
    remaining = producer.flush(sink.flush_timeout_s)
    if remaining:
        raise RuntimeError(f"tierlog write: {remaining} records still undelivered after "
                           f"{sink.flush_timeout_s:.0f} s (bootstrap.servers={config['bootstrap.servers']})")
    if deliveries.failed:
        raise RuntimeError(f"tierlog write: {deliveries.failed} of {count} records were not delivered: "
                           + "; ".join(deliveries.failures))
    return TierlogCommit(count)


def _write(sink: SinkOptions, prefix: str | None, record_batches: bool,
           batches: Iterator[pa.RecordBatch]) -> TierlogCommit:
    before_task(sink.freeze_worker_gc)
    if not sink.transactional:
        return _write_batches(sink, batches)
    deliveries = _Deliveries()
    count = write_in_transaction(sink.producer_config, prefix,
                                 lambda producer, rows: produce_rows(producer, sink.topic, rows, deliveries),
                                 batches, record_batches)
    return TierlogCommit(count)


@option_errors_in_one_line
class TierlogBatchWriter(DataSourceArrowWriter):
    def __init__(self, options, schema: StructType):
        self.sink = parse_sink_options(options)
        _check_write_schema(schema, self.sink.topic)
        # one prefix per write: a retried task fences its earlier attempt (same partition, same id)
        self.prefix = self.sink.transactional_id_prefix or f"tierlog-spark-{uuid.uuid4()}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TierlogCommit:
        # inside foreachBatch with a prefix of the user's, micro-batches are recorded (exactly once too)
        return _write(self.sink, self.prefix, self.sink.transactional_id_prefix is not None, iterator)

    def commit(self, messages) -> None:
        """Each task flushed (or committed its transaction) before it reported success."""

    def abort(self, messages) -> None:
        """Records already acknowledged stay (at-least-once, as with the Kafka sink); committed
        transactions stay committed."""


@option_errors_in_one_line
class TierlogStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options, schema: StructType):
        self.sink = parse_sink_options(options)
        _check_write_schema(schema, self.sink.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TierlogCommit:
        return _write(self.sink, self.sink.transactional_id_prefix, True, iterator)

    def commit(self, messages, batchId: int) -> None:
        """Each task flushed, or committed its transaction with the batch id, before it reported success."""

    def abort(self, messages, batchId: int) -> None:
        """Records already acknowledged stay (at-least-once); with transactional=true the tasks that
        committed recorded the batch id, so the re-run batch skips them."""
