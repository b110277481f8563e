"""The ``tierlog`` PySpark data source: batch and streaming, read and write.

Reads plan offset ranges on the driver (Metadata + ListOffsets through our own
client, at ``kafka.isolation.level``: read_committed ranges end at the last
stable offset) and fetch them in tasks, through the brokers or straight from remote
segments (read_committed leaves out aborted transactions either way; markers are never
rows), yielding Arrow record batches decoded straight from whole fetched record batches. Writes are `spark.sink`'s. Clients are
always opened inside the method that uses them: readers and writers are pickled to the executors with options only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from tierlog.client import (
    EARLIEST,
    LATEST,
    Cluster,
    read_range,
    receive_message_max_bytes_for,
)
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.spark.columns import chosen_columns, default_ddl
from tierlog.spark.direct_plan import StoreFinder, plan_from_store
from tierlog.spark.fetch_offset import with_offset_retries
from tierlog.spark.option_errors import option_errors_in_one_line
from tierlog.spark.options import (
    REMOTE_AUTO,
    REMOTE_OFF,
    REMOTE_TABLE,
    OptionError,
    SourceOptions,
    parse_source_options,
)
from tierlog.spark.partition import TierlogPartition
from tierlog.spark.planning import (
    OffsetRange,
    TriggerClock,
    discover,
    from_json,
    rate_limit,
    resolve,
    to_json,
)
from tierlog.spark.read_ahead import in_background
from tierlog.spark.remote_read import read_segment_range
from tierlog.spark.remote_store import shared_store
from tierlog.spark.runner_exit import quiet_runner_exit
from tierlog.spark.sink import TierlogBatchWriter, TierlogStreamWriter
from tierlog.spark.table_read import (
    TierlogTableReader,
    arrow_schema,
    chosen_table_columns,
    load_table,
    table_read_options,
)
from tierlog.spark.table_topic import TableRangePartition, plan_with_tables, read_table_range, segment_options
from tierlog.spark.worker_gc import before_task

__all__ = ["SCHEMA", "SCHEMA_WITH_HEADERS", "TierlogDataSource", "TierlogPartition"]

log = logging.getLogger(__name__)

SCHEMA = default_ddl(include_headers=False)
SCHEMA_WITH_HEADERS = default_ddl(include_headers=True)


@option_errors_in_one_line
class TierlogDataSource(DataSource):
    """``spark.read.format("tierlog")``: Spark's Kafka source options, no JVM connector."""

    @classmethod
    def name(cls) -> str:
        return "tierlog"

    def schema(self) -> str | StructType:
        if "table" in self.options:        # a topic's Iceberg table (spark/table_read.py, docs/tables.md)
            return from_arrow_schema(arrow_schema(load_table(table_read_options(self.options))))
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return SCHEMA_WITH_HEADERS if include else SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        if "table" in self.options:
            opts = table_read_options(self.options)
            return TierlogTableReader(opts, chosen_table_columns(schema, arrow_schema(load_table(opts))))
        return TierlogBatchReader(_with_columns(parse_source_options(self.options, streaming=False), schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        if "table" in self.options:
            raise OptionError("table: a table is read in batches only (spark.read, not spark.readStream)")
        return TierlogStreamReader(_with_columns(parse_source_options(self.options, streaming=True), schema))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        if overwrite:       # Spark's Kafka sink refuses it too: records cannot be replaced
            raise OptionError("mode: save mode Overwrite is not allowed for tierlog; allowed save modes are "
                              "Append and ErrorIfExists (the default)")
        return TierlogBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        return TierlogStreamWriter(self.options, schema)


def _with_columns(opts: SourceOptions, schema: StructType | str) -> SourceOptions:
    """The options with the columns a user schema picked (and headers decoded when it names them)."""
    columns = chosen_columns(schema, opts.include_headers)
    if columns is None:
        return opts
    return replace(opts, columns=columns, include_headers="headers" in columns)


# -- reading -------------------------------------------------------------------------


def _read_partition(opts: SourceOptions, part: InputPartition) -> Iterator[pa.RecordBatch]:
    before_task(opts.freeze_worker_gc)
    if isinstance(part, TableRangePartition):
        read: Iterator[pa.RecordBatch] = read_table_range(part, opts.include_headers, opts.columns)
    elif isinstance(part, TierlogPartition):
        read = _read_remote(opts, part) if part.pieces else _read_brokers(opts, part)
    else:
        return      # nothing to read: PySpark stands one default partition in for an empty plan
    columns = opts.columns

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in read:
            yield batch if columns is None else batch.select(columns)
    yield from in_background(batches, opts.read_ahead_batches)


def _read_remote(opts: SourceOptions, part: TierlogPartition) -> Iterator[pa.RecordBatch]:
    assert part.store is not None, "a partition with remote pieces names their store"
    store, encryption = shared_store(part.store), part.store.encryption()
    for start, end, segment in part.pieces:
        yield from read_segment_range(store, segment, start, end, include_headers=opts.include_headers,
                                      fail_on_data_loss=opts.fail_on_data_loss, encryption=encryption,
                                      txn_segments=part.txn_segments,
                                      read_ahead_chunks=opts.remote_read_ahead_chunks)


def _read_brokers(opts: SourceOptions, part: TierlogPartition) -> Iterator[pa.RecordBatch]:
    cluster = Cluster(opts.bootstrap_servers, client_id=opts.client_id, retry_timeout_s=opts.retry_timeout_s,
                      receive_message_max_bytes=receive_message_max_bytes_for(opts.fetch_max_bytes),
                      security=opts.security, isolation_level=opts.isolation_level)
    try:
        yield from read_range(cluster, part.topic, part.partition, part.start, part.end,
                              include_headers=opts.include_headers, fail_on_data_loss=opts.fail_on_data_loss,
                              max_bytes=opts.fetch_max_bytes, retry_timeout_s=opts.poll_timeout_s)
    except PeerUnavailable as exc:
        exc.add_note(f"tierlog: no answer for {opts.poll_timeout_s * 1000:.0f} ms "
                     "(kafkaConsumer.pollTimeoutMs)")
        raise
    finally:
        cluster.close()


class _ClusterOnDriver:
    """A driver-side client opened on first use and never pickled."""

    _cluster: Cluster | None = None
    opts: SourceOptions             # the reader's, set by its constructor

    def _client(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster(self.opts.bootstrap_servers, client_id=self.opts.client_id,
                                    retry_timeout_s=self.opts.retry_timeout_s, security=self.opts.security,
                                    isolation_level=self.opts.isolation_level)
        return self._cluster

    def _close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_cluster", None)
        return state


@option_errors_in_one_line
class TierlogBatchReader(_ClusterOnDriver, DataSourceReader):
    def __init__(self, opts: SourceOptions):
        self.opts = opts

    def partitions(self) -> list[InputPartition]:
        try:
            cluster = self._client()
            return plan_with_tables(self.opts, cluster, self._broker_ranges(cluster),
                                    StoreFinder(segment_options(self.opts)))
        except PeerUnavailable as exc:
            if self.opts.remote_storage in (REMOTE_OFF, REMOTE_AUTO, REMOTE_TABLE):
                raise
            log.warning("tierlog: no broker answers (%s); planning the read from %s alone", exc,
                        self.opts.remote_storage)
            return [*plan_from_store(self.opts)]
        finally:
            self._close()

    def _broker_ranges(self, cluster: Cluster) -> list[OffsetRange]:
        def query():
            tps = discover(cluster, self.opts)
            return (tps, resolve(cluster, self.opts.starting, tps, self.opts.timestamp_strategy),
                    resolve(cluster, self.opts.ending, tps, "latest"))
        tps, starts, ends = with_offset_retries(self.opts, "planning the read's offsets", query)
        ranges = []
        for tp in tps:
            if starts[tp] > ends[tp]:
                raise OptionError(f"{self.opts.starting.option}: starting offset {starts[tp]} of "
                                  f"{tp[0]}-{tp[1]} is after its ending offset {ends[tp]}")
            ranges.append(OffsetRange(tp[0], tp[1], starts[tp], ends[tp]))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.opts, partition)


@option_errors_in_one_line
class TierlogStreamReader(_ClusterOnDriver, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets per partition in the checkpoint (the Kafka source's JSON form)."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._target: dict | None = None       # Trigger.AvailableNow: do not read past these
        self._latest: dict | None = None
        self._clock = TriggerClock()
        self._finder = StoreFinder(segment_options(opts))

    def initialOffset(self) -> dict:
        cluster = self._client()

        def query():
            return resolve(cluster, self.opts.starting, discover(cluster, self.opts), self.opts.timestamp_strategy)
        return to_json(with_offset_retries(self.opts, "the starting offsets", query))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        cluster = self._client()
        self._target = cluster.list_offsets(discover(cluster, self.opts), LATEST)

    def reportLatestOffset(self) -> dict | None:
        return to_json(self._latest) if self._latest is not None else None

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        cluster = self._client()
        begin = from_json(start)
        latest = with_offset_retries(self.opts, "the latest offsets",
                                     lambda: cluster.list_offsets(discover(cluster, self.opts), LATEST))
        self._latest = dict(latest)
        if self._target is not None:
            latest = {tp: min(off, self._target[tp]) for tp, off in latest.items() if tp in self._target}
        new = [tp for tp in latest if tp not in begin]
        if new:        # new partitions are read from their beginning, as the Kafka source does
            log.info("tierlog: new partitions %s", new)
            begin.update(cluster.list_offsets(new, EARLIEST))
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        elif self.opts.max_offsets_per_trigger and not isinstance(limit, ReadAllAvailable):
            latest = rate_limit(begin, latest, self.opts.max_offsets_per_trigger)
        if isinstance(limit, ReadMinRows) and self._target is None:
            available = sum(max(0, off - begin.get(tp, off)) for tp, off in latest.items())
            if available < limit.min_rows and not self._clock.due(self.opts.max_trigger_delay_ms):
                return start
        self._clock.reset()
        end = dict(begin)              # partitions that disappeared keep their offsets
        end.update(latest)
        return to_json(end)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin, stop = from_json(start), from_json(end)
        new = [tp for tp in stop if tp not in begin]
        if new:
            begin.update(self._client().list_offsets(new, EARLIEST))
        ranges = []
        for tp, end_offset in stop.items():
            start_offset = begin[tp]
            if end_offset < start_offset:
                message = (f"{tp[0]}-{tp[1]}: offset went back from {start_offset} to {end_offset} "
                           "(topic deleted and recreated, or data lost)")
                if self.opts.fail_on_data_loss:
                    raise RuntimeError(message + "; set failOnDataLoss=false to go on")
                log.warning("tierlog: %s; reading from %s", message, end_offset)
                continue
            ranges.append(OffsetRange(tp[0], tp[1], start_offset, end_offset))
        return plan_with_tables(self.opts, self._client(), ranges, self._finder)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.opts, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint."""

    def stop(self) -> None:
        self._close()
        quiet_runner_exit()         # the runner's own report to a JVM that has gone: no traceback
