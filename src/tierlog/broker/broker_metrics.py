"""BrokerMetricsCollector: a broker's Kafka metrics, computed when Prometheus scrapes.

A prometheus-client custom collector: nothing is maintained per record or per
partition between scrapes. Counters are plain integers their owners keep
(``BrokerTopicStats`` per topic, ``AlterPartitionSender.isr_changes``, the remote
reader's chunk cache); gauges over partitions and groups are computed from the
broker's state in one pass over its hosted partitions and its loaded group shards.

Two phases, so the event loop does only the reading: ``prepare()``, called by the
metrics endpoint on the event loop (where that state changes) before each scrape,
copies the numbers into a ``BrokerSnapshot`` of plain tuples; ``collect()``, which
the endpoint runs with the encoding and compression on a worker thread, builds the
metric families from the last snapshot (from a fresh one when nothing prepared one).
A scrape costs O(hosted partitions + committed group offsets), and an idle broker
nothing. Names follow the Prometheus JMX exporter's Kafka rules (Kafka's MBean
``kafka.<domain>:type=<Type>,name=<Name>`` as ``kafka_<domain>_<type>_<name>`` in
lower case, a ``...PerSec`` meter as a ``_total`` counter, MBean keys as labels);
the table is in docs/metrics.md. Consumer group lag uses kafka_exporter's names.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from tierlog.broker.remote.remote_log_manager import tip_of
from tierlog.broker.topic_stats import COUNTERS, BrokerTopicStats
from tierlog.storage import KafkaStorageError
from tierlog.storage.table_config import OFF, TABLE_MODE

__all__ = ["TOPIC_COUNTERS", "BrokerMetricsCollector", "BrokerSnapshot"]

_BTM = "kafka_server_brokertopicmetrics_"
_RM = "kafka_server_replicamanager_"

# BrokerTopicStats counter -> (Prometheus name without _total, Kafka's meter)
TOPIC_COUNTERS = {
    "bytes_in": ("bytesin", "BytesInPerSec"),
    "bytes_out": ("bytesout", "BytesOutPerSec"),
    "messages_in": ("messagesin", "MessagesInPerSec"),
    "produce_requests": ("totalproducerequests", "TotalProduceRequestsPerSec"),
    "failed_produce_requests": ("failedproducerequests", "FailedProduceRequestsPerSec"),
    "fetch_requests": ("totalfetchrequests", "TotalFetchRequestsPerSec"),
    "failed_fetch_requests": ("failedfetchrequests", "FailedFetchRequestsPerSec"),
    "remote_copy_bytes": ("remotecopybytes", "RemoteCopyBytesPerSec"),
    "remote_copy_requests": ("remotecopyrequests", "RemoteCopyRequestsPerSec"),
    "remote_copy_errors": ("remotecopyerrors", "RemoteCopyErrorsPerSec"),
    "remote_fetch_bytes": ("remotefetchbytes", "RemoteFetchBytesPerSec"),
    "remote_fetch_requests": ("remotefetchrequests", "RemoteFetchRequestsPerSec"),
    "remote_fetch_errors": ("remotefetcherrors", "RemoteFetchErrorsPerSec"),
}
assert set(TOPIC_COUNTERS) == set(COUNTERS)


class PartitionRow(NamedTuple):
    topic: str
    partition: int
    size: int
    log_end: int
    log_start: int
    segments: int
    isr: int            # -1: not the leader
    replicas: int
    min_isr: int


class BrokerSnapshot(NamedTuple):
    topics: list[tuple[str, tuple[int, ...]]]          # (topic, its COUNTERS in order)
    partitions: list[PartitionRow]
    isr_shrinks: int
    isr_expands: int
    remote: tuple[dict[str, int], dict[str, int], dict[str, int]] | None   # log size, copy lag, chunk cache
    group_offsets: list[tuple[str, str, int, int, int | None]]   # group, topic, partition, offset, hw or None
    tables: TableNumbers | None = None
    share_groups: tuple[dict[str, int], int] = ({}, 0)     # share groups by state, target assignments computed


class TableNumbers(NamedTuple):
    """This broker's table commits (docs/tables.md): counters per topic, lag per led partition."""

    commits: dict[str, int]
    bytes_written: dict[str, int]
    dead_letters: dict[str, int]
    lag: list[tuple[str, int, int]]     # topic, partition, offsets the table is behind the tiered offset


class BrokerMetricsCollector:
    def __init__(self, replicas, stats: BrokerTopicStats, groups, remote, image_fn: Callable):
        """``replicas``: the ReplicaManager; ``groups``: the GroupCoordinator; ``remote``: the
        RemoteTier or None; ``image_fn()``: the broker's current metadata image."""
        self._replicas = replicas
        self._stats = stats
        self._groups = groups
        self._remote = remote
        self._image_fn = image_fn
        self._prepared: BrokerSnapshot | None = None

    def describe(self) -> list[Metric]:
        """The families (their names, for the registry's duplicate check and ``name[]`` filtering)."""
        return list(_families(self.snapshot()))

    def prepare(self) -> None:
        """On the event loop, before a scrape: the numbers ``collect`` will report."""
        self._prepared = self.snapshot()

    def collect(self) -> Iterator[Metric]:
        snapshot = self._prepared
        yield from _families(snapshot if snapshot is not None else self.snapshot())

    def snapshot(self) -> BrokerSnapshot:
        """The broker's numbers as plain values (on the event loop)."""
        self._stats.retain(self._image_fn().topics)
        topics = [(name, tuple(getattr(c, attr) for attr in COUNTERS)) for name, c in self._stats.items()]
        partitions = list(self._replicas.partitions.values())
        changes = self._replicas.alter_partitions.isr_changes
        return BrokerSnapshot(topics, [_row(p) for p in partitions], changes["shrink"], changes["expand"],
                              self._remote_numbers(partitions), self._group_offsets(), self._table_numbers(partitions),
                              self._share_groups())

    def _table_numbers(self, partitions) -> TableNumbers | None:
        stats = None if self._remote is None else self._remote.tables.stats
        if stats is None:
            return None
        covered = dict(stats.covered)      # copier threads add to it: copied in one step
        lag = []
        for p in partitions:
            last = covered.get((p.topic, p.index))
            if p.is_leader and last is not None and p.config.values[TABLE_MODE] != OFF:
                lag.append((p.topic, p.index, max(0, p.highest_offset_in_remote_storage - last)))
        return TableNumbers(dict(stats.commits), dict(stats.bytes_written), dict(stats.dead_letters), lag)

    def _remote_numbers(self, partitions):
        if self._remote is None:
            return None
        remote_size: dict[str, int] = {}
        copy_lag: dict[str, int] = {}
        for p in partitions:
            if not p.is_leader or not p.tiered:
                continue
            cache = self._remote.metadata.cache(tip_of(p))
            remote_size[p.topic] = remote_size.get(p.topic, 0) + (cache.remote_size_bytes() if cache else 0)
            copy_lag[p.topic] = copy_lag.get(p.topic, 0) + _copy_lag_bytes(p)
        return remote_size, copy_lag, self._remote.reader.chunks.stats()

    def _group_offsets(self) -> list[tuple[str, str, int, int, int | None]]:
        out = []
        shards, _loading = self._groups.loaded_shards()
        for shard in shards:
            for group in shard.offsets.group_ids():
                for (topic, index), committed in shard.offsets.all(group).items():
                    part = self._replicas.get(topic, index)
                    out.append((group, topic, index, committed.offset,
                                None if part is None else part.high_watermark))
        return out


    def _share_groups(self) -> tuple[dict[str, int], int]:
        """The share groups (KIP-932) of the shards loaded here, by state, and the target
        assignments those shards computed since they loaded."""
        states: dict[str, int] = {}
        rebalances = 0
        for shard in self._groups.loaded_shards()[0]:
            rebalances += shard.share_rebalances
            for group in shard.share_groups.values():
                states[group.state.lower()] = states.get(group.state.lower(), 0) + 1
        return states, rebalances


def _row(p) -> PartitionRow:
    sizes = p.isr_sizes()
    isr, replicas, min_isr = (-1, 0, 0) if sizes is None else sizes
    return PartitionRow(p.topic, p.index, p.size_in_bytes, p.log_end_offset, p.log_start_offset,
                        p.segment_count, isr, replicas, min_isr)


def _copy_lag_bytes(part) -> int:
    """Rolled segments with offsets above the highest one in remote storage (what the next copy
    passes upload; a segment partly there counts whole); 0 for an offline log."""
    highest = part.highest_offset_in_remote_storage
    try:
        return sum(s.size for s in part.rolled_segments() if s.next_offset - 1 > highest)
    except KafkaStorageError:
        return 0


# --- the families, from a snapshot (on the scrape's worker thread) --------------------------------

def _families(s: BrokerSnapshot) -> Iterator[Metric]:
    yield from _topic_counters(s.topics)
    yield from _replica_manager(s)
    yield from _logs(s.partitions)
    if s.remote is not None:
        yield from _remote(*s.remote)
    yield from _groups(s.group_offsets)
    yield from _share_groups(*s.share_groups)
    if s.tables is not None:
        yield from _tables(s.tables)


def _tables(t: TableNumbers) -> Iterator[Metric]:
    for name, doc, values in (("commits", "Iceberg commits of uploaded segments", t.commits),
                              ("bytes_written", "Parquet bytes written to remote storage", t.bytes_written),
                              ("dead_letters", "value_json records sent to the dead-letter table", t.dead_letters)):
        family = CounterMetricFamily(f"tierlog_table_{name}", f"{doc}, per topic (docs/tables.md)", labels=["topic"])
        for topic, n in values.items():
            family.add_metric([topic], n)
        yield family
    lag = GaugeMetricFamily("tierlog_table_lag_offsets", "Offsets the topic's table is behind its highest tiered "
                            "offset (0 by construction once a segment is uploaded)", labels=["topic", "partition"])
    for topic, partition, n in t.lag:
        lag.add_metric([topic, str(partition)], n)
    yield lag


def _topic_counters(topics) -> Iterator[Metric]:
    for i, (name, meter) in enumerate(TOPIC_COUNTERS[attr] for attr in COUNTERS):
        family = CounterMetricFamily(_BTM + name, f"Kafka's BrokerTopicMetrics {meter}, per topic", labels=["topic"])
        for topic, values in topics:
            family.add_metric([topic], values[i])
        yield family


def _replica_manager(s: BrokerSnapshot) -> Iterator[Metric]:
    led = [r for r in s.partitions if r.isr >= 0]
    yield _gauge(_RM + "partitioncount", "Partitions hosted on this broker (PartitionCount)", len(s.partitions))
    yield _gauge(_RM + "leadercount", "Partitions this broker leads (LeaderCount)", len(led))
    yield _gauge(_RM + "underreplicatedpartitions", "Led partitions whose ISR is smaller than their "
                 "replica set (UnderReplicatedPartitions)", sum(r.isr < r.replicas for r in led))
    yield _gauge(_RM + "underminisrpartitioncount", "Led partitions whose ISR is below min.insync.replicas "
                 "(UnderMinIsrPartitionCount)", sum(r.isr < r.min_isr for r in led))
    yield _gauge(_RM + "atminisrpartitioncount", "Led partitions whose ISR is at min.insync.replicas "
                 "(AtMinIsrPartitionCount)", sum(r.isr == r.min_isr for r in led))
    under = GaugeMetricFamily("kafka_cluster_partition_underreplicated", "1 when a led partition's ISR is "
                              "smaller than its replica set (Partition UnderReplicated)", labels=["topic", "partition"])
    for r in led:
        under.add_metric([r.topic, str(r.partition)], int(r.isr < r.replicas))
    yield under
    yield CounterMetricFamily(_RM + "isrshrinks", "ISR shrinks the controller accepted (IsrShrinksPerSec)",
                              value=s.isr_shrinks)
    yield CounterMetricFamily(_RM + "isrexpands", "ISR expansions the controller accepted (IsrExpandsPerSec)",
                              value=s.isr_expands)


def _logs(rows: list[PartitionRow]) -> Iterator[Metric]:
    labels = ["topic", "partition"]
    size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the local log (Log Size)", labels=labels)
    end = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset, exclusive (Log LogEndOffset)",
                            labels=labels)
    start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset (Log LogStartOffset)", labels=labels)
    segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Local segments (Log NumLogSegments)", labels=labels)
    for r in rows:
        key = [r.topic, str(r.partition)]
        size.add_metric(key, r.size)
        end.add_metric(key, r.log_end)
        start.add_metric(key, r.log_start)
        segments.add_metric(key, r.segments)
    yield from (size, end, start, segments)


def _remote(remote_size: dict[str, int], copy_lag: dict[str, int], chunks: dict[str, int]) -> Iterator[Metric]:
    yield _per_topic(_BTM + "remotelogsizebytes", "Bytes in remote storage of the partitions this broker "
                     "leads (RemoteLogSizeBytes)", remote_size)
    yield _per_topic(_BTM + "remotecopylagbytes", "Bytes of rolled local segments not in remote storage yet, "
                     "of the partitions this broker leads (RemoteCopyLagBytes)", copy_lag)
    for key, value in sorted(chunks.items()):
        yield CounterMetricFamily(f"tierlog_remote_chunk_cache_{key}",
                                  f"Remote read chunk cache: {key.replace('_', ' ')}", value=value)


def _groups(rows) -> Iterator[Metric]:
    labels = ["consumergroup", "topic", "partition"]
    current = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset of a group "
                                "coordinated by this broker", labels=labels)
    lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus committed offset, for the "
                            "partitions this broker also hosts", labels=labels)
    for group, topic, index, offset, hw in rows:
        key = [group, topic, str(index)]
        current.add_metric(key, offset)
        if hw is not None:
            lag.add_metric(key, max(0, hw - offset))
    yield current
    yield lag


_GCM = "kafka_server_group_coordinator_metrics_"    # kafka.server:type=group-coordinator-metrics


def _share_groups(states: dict[str, int], rebalances: int) -> Iterator[Metric]:
    """Kafka's group coordinator metrics of share groups (KIP-932): group-count{protocol=share},
    share-group-count{state}, share-group-rebalance-count."""
    total = GaugeMetricFamily(_GCM + "group_count", "Groups coordinated by this broker, by protocol",
                              labels=["protocol"])
    total.add_metric(["share"], sum(states.values()))
    yield total
    by_state = GaugeMetricFamily(_GCM + "share_group_count", "Share groups coordinated by this broker, by state",
                                 labels=["state"])
    for state in ("empty", "stable"):
        by_state.add_metric([state], states.get(state, 0))
    yield by_state
    yield CounterMetricFamily(_GCM + "share_group_rebalance", "Share-group target assignments computed by the "
                              "group shards loaded here (since they loaded)", value=rebalances)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _per_topic(name: str, doc: str, values: dict[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=["topic"])
    for topic, value in sorted(values.items()):
        family.add_metric([topic], value)
    return family
