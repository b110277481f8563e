"""The ``tierlog`` PySpark data source: batch and streaming, read and write.

Reads plan offset ranges on the driver (Metadata + ListOffsets through our own
client, at ``kafka.isolation.level``: read_committed ranges end at the last
stable offset) and fetch them in tasks (read_committed leaves out aborted
transactions; markers are never rows), yielding Arrow record batches decoded straight
from whole fetched record batches. Writes are `spark.sink`'s. Clients are always opened inside the method that uses them:
readers and writers are pickled to the executors with options only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
)
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
    DataLossError,
    read_range,
    receive_message_max_bytes_for,
)
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.spark.fetch_offset import with_offset_retries
from tierlog.spark.options import (
    REMOTE_AUTO,
    REMOTE_OFF,
    OptionError,
    SourceOptions,
    parse_source_options,
)
from tierlog.spark.planning import (
    OffsetRange,
    TriggerClock,
    discover,
    from_json,
    rate_limit,
    resolve,
    split_ranges,
    to_json,
)
from tierlog.spark.remote_planning import cover_range
from tierlog.spark.remote_read import read_segment_range
from tierlog.spark.remote_store import (
    StoreView,
    open_encryption,
    open_store,
    store_ranges,
)
from tierlog.spark.sink import TierlogBatchWriter, TierlogStreamWriter
from tierlog.tiered import RemoteLogSegmentMetadata, list_partitions
from tierlog.tiered.read_rules import LATEST_TIERED

__all__ = ["SCHEMA", "SCHEMA_WITH_HEADERS", "TierlogDataSource", "TierlogPartition"]

log = logging.getLogger(__name__)

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
          "timestamp timestamp, timestampType int")
SCHEMA_WITH_HEADERS = SCHEMA + ", headers array<struct<key: string, value: binary>>"


class TierlogPartition(InputPartition):
    """One task's work: ``[start, end)`` of one topic partition, through the brokers or, when
    ``segment`` is set, straight from that remote segment."""

    def __init__(self, topic: str, partition: int, start: int, end: int,
                 segment: RemoteLogSegmentMetadata | None = None):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.segment = segment

    def __repr__(self) -> str:
        where = f" remote segment {self.segment.start_offset}" if self.segment is not None else ""
        return f"TierlogPartition({self.topic}-{self.partition} [{self.start}, {self.end}){where})"


class TierlogDataSource(DataSource):
    """``spark.read.format("tierlog")``: Spark's Kafka source options, no JVM connector."""

    @classmethod
    def name(cls) -> str:
        return "tierlog"

    def schema(self) -> str:
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return SCHEMA_WITH_HEADERS if include else SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return TierlogBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TierlogStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        if overwrite:       # Spark's Kafka sink refuses it too: records cannot be replaced
            raise OptionError("mode: save mode Overwrite is not allowed for tierlog; allowed save modes are "
                              "Append and ErrorIfExists (the default)")
        return TierlogBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        return TierlogStreamWriter(self.options, schema)


# -- reading -------------------------------------------------------------------------


def _read_partition(opts: SourceOptions, part: InputPartition) -> Iterator[pa.RecordBatch]:
    if not isinstance(part, TierlogPartition):
        return      # nothing to read: PySpark stands one default partition in for an empty plan
    if part.segment is not None:
        yield from read_segment_range(open_store(opts), part.segment, part.start, part.end,
                                      include_headers=opts.include_headers, fail_on_data_loss=opts.fail_on_data_loss,
                                      encryption=open_encryption(opts))
        return
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


def _direct_to_partitions(opts: SourceOptions, view: StoreView, ranges: list[OffsetRange],
                          highest: dict | None, topic_ids: dict) -> list[TierlogPartition]:
    """Remote pieces one task per segment (split by maxRecordsPerPartition), the rest as usual."""
    parts, brokers = [], []
    for r in ranges:
        tp = (r.topic, r.partition)
        bound = None if highest is None else highest[tp]
        segments, tiered = view.readable(tp, topic_ids.get(r.topic), bound)
        cover = cover_range(r, segments, tiered)
        for piece, segment in cover.remote:
            parts += [TierlogPartition(p.topic, p.partition, p.start, p.end, segment)
                      for p in split_ranges([piece], None, opts.max_records_per_partition)]
        brokers += cover.brokers
    if highest is None and any(r.size for r in brokers):
        missing = ", ".join(f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in brokers if r.size)
        raise DataLossError(f"no broker answers and remote storage does not hold {missing}")
    return parts + _to_partitions(opts, brokers)


def _store_topics(opts: SourceOptions, store) -> list[str]:
    if opts.subscribe is not None:
        return list(opts.subscribe)
    if opts.assign is not None:
        return sorted({t for t, _ in opts.assign})
    return sorted({p.topic_id_partition.topic for p in list_partitions(store)})


def _to_partitions(opts: SourceOptions, ranges: list[OffsetRange]) -> list[TierlogPartition]:
    ranges = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
    return [TierlogPartition(r.topic, r.partition, r.start, r.end) for r in ranges]


class _ClusterOnDriver:
    """A driver-side client opened on first use and never pickled."""

    _cluster: Cluster | None = None

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


class TierlogBatchReader(_ClusterOnDriver, DataSourceReader):
    def __init__(self, opts: SourceOptions):
        self.opts = opts

    def partitions(self) -> list[TierlogPartition]:
        if self.opts.remote_storage in (REMOTE_OFF, REMOTE_AUTO):     # auto: detection not done yet
            try:
                return _to_partitions(self.opts, self._broker_ranges(self._client()))
            finally:
                self._close()
        return self._direct_partitions()

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

    def _direct_partitions(self) -> list[TierlogPartition]:
        """Ranges from the brokers (or from the store when none answers), read directly where
        remote segments hold them (``remote_planning``)."""
        store, encryption = open_store(self.opts), open_encryption(self.opts)
        try:
            cluster = self._client()
            ranges = self._broker_ranges(cluster)
            highest = cluster.list_offsets([(r.topic, r.partition) for r in ranges], LATEST_TIERED)
            topic_ids = {r.topic: cluster.topic_ids.get(r.topic) for r in ranges}
            view = StoreView.of_topics(store, sorted(topic_ids), encryption)
        except PeerUnavailable as exc:
            log.warning("tierlog: no broker answers (%s); planning the read from %s alone", exc, store.describe())
            view = StoreView.of_topics(store, _store_topics(self.opts, store), encryption)
            ranges, highest, topic_ids = store_ranges(view, self.opts), None, {}
        finally:
            self._close()
        return _direct_to_partitions(self.opts, view, ranges, highest, topic_ids)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.opts, partition)


class TierlogStreamReader(_ClusterOnDriver, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets per partition in the checkpoint (the Kafka source's JSON form)."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._target: dict | None = None       # Trigger.AvailableNow: do not read past these
        self._latest: dict | None = None
        self._clock = TriggerClock()

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

    def partitions(self, start: dict, end: dict) -> list[TierlogPartition]:
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
        return _to_partitions(self.opts, ranges)

    def read(self, partition: TierlogPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.opts, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint."""

    def stop(self) -> None:
        self._close()
