"""BrokerMetricsCollector: a broker's Kafka metrics, computed when Prometheus scrapes.

A prometheus-client custom collector: nothing is maintained per record or per
partition between scrapes. Counters are plain integers their owners keep
(``BrokerTopicStats`` per topic, ``ReplicaManager.isr_changes``, the remote
reader's chunk cache); gauges over partitions and groups are computed from the
broker's state in one pass over its hosted partitions and its loaded group
shards, on the node's event loop (the endpoint collects there), so a scrape
costs O(hosted partitions + committed group offsets) and an idle broker
nothing. Names follow the Prometheus JMX exporter's Kafka rules (Kafka's MBean
``kafka.<domain>:type=<Type>,name=<Name>`` as ``kafka_<domain>_<type>_<name>`` in
lower case, a ``...PerSec`` meter as a ``_total`` counter, MBean keys as labels);
the table is in docs/metrics.md. Consumer group lag uses kafka_exporter's names.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from tierlog.broker.remote.log_manager import tip_of
from tierlog.broker.topic_stats import BrokerTopicStats

__all__ = ["TOPIC_COUNTERS", "BrokerMetricsCollector"]

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


class BrokerMetricsCollector:
    def __init__(self, replicas, stats: BrokerTopicStats, groups, remote, image_fn: Callable):
        """``replicas``: the ReplicaManager; ``groups``: the GroupCoordinator; ``remote``: the
        RemoteTier or None; ``image_fn()``: the broker's current metadata image."""
        self._replicas = replicas
        self._stats = stats
        self._groups = groups
        self._remote = remote
        self._image_fn = image_fn

    def describe(self) -> list[Metric]:
        """The families (their names, for the registry's duplicate check and ``name[]`` filtering)."""
        return list(self.collect())

    def collect(self) -> Iterator[Metric]:
        self._stats.retain(self._image_fn().topics)
        yield from self._topic_counters()
        partitions = list(self._replicas.partitions.values())
        yield from self._replica_manager(partitions)
        yield from self._logs(partitions)
        yield from self._remote_gauges(partitions)
        yield from self._group_offsets()

    def _topic_counters(self) -> Iterator[Metric]:
        items = self._stats.items()
        for attr, (name, meter) in TOPIC_COUNTERS.items():
            family = CounterMetricFamily(_BTM + name, f"Kafka's BrokerTopicMetrics {meter}, per topic",
                                         labels=["topic"])
            for topic, counters in items:
                family.add_metric([topic], getattr(counters, attr))
            yield family

    def _replica_manager(self, partitions) -> Iterator[Metric]:
        leaders = [p.leader_state for p in partitions if p.leader_state is not None]
        yield _gauge(_RM + "partitioncount", "Partitions hosted on this broker (PartitionCount)", len(partitions))
        yield _gauge(_RM + "leadercount", "Partitions this broker leads (LeaderCount)", len(leaders))
        yield _gauge(_RM + "underreplicatedpartitions", "Led partitions whose ISR is smaller than their "
                     "replica set (UnderReplicatedPartitions)", sum(len(ls.isr) < len(ls.replicas) for ls in leaders))
        yield _gauge(_RM + "underminisrpartitioncount", "Led partitions whose ISR is below min.insync.replicas "
                     "(UnderMinIsrPartitionCount)", sum(ls.under_min_isr for ls in leaders))
        yield _gauge(_RM + "atminisrpartitioncount", "Led partitions whose ISR is at min.insync.replicas "
                     "(AtMinIsrPartitionCount)", sum(len(ls.isr) == ls.effective_min_isr for ls in leaders))
        under = GaugeMetricFamily("kafka_cluster_partition_underreplicated", "1 when a led partition's ISR is "
                                  "smaller than its replica set (Partition UnderReplicated)", labels=["topic", "partition"])
        for p in partitions:
            if p.leader_state is not None:
                under.add_metric([p.topic, str(p.index)], int(len(p.leader_state.isr) < len(p.leader_state.replicas)))
        yield under
        changes = self._replicas.isr_changes
        yield CounterMetricFamily(_RM + "isrshrinks", "ISR shrinks the controller accepted (IsrShrinksPerSec)",
                                  value=changes["shrink"])
        yield CounterMetricFamily(_RM + "isrexpands", "ISR expansions the controller accepted (IsrExpandsPerSec)",
                                  value=changes["expand"])

    def _logs(self, partitions) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the local log (Log Size)", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset, exclusive (Log LogEndOffset)",
                                labels=labels)
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset (Log LogStartOffset)",
                                  labels=labels)
        segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Local segments (Log NumLogSegments)",
                                     labels=labels)
        for p in partitions:
            key = [p.topic, str(p.index)]
            size.add_metric(key, p.log.size_in_bytes)
            end.add_metric(key, p.log.log_end_offset)
            start.add_metric(key, p.log.log_start_offset)
            segments.add_metric(key, p.log.segment_count)
        yield from (size, end, start, segments)

    def _remote_gauges(self, partitions) -> Iterator[Metric]:
        if self._remote is None:
            return
        remote_size: dict[str, int] = {}
        copy_lag: dict[str, int] = {}
        for p in partitions:
            if p.leader_state is None or not p.log.config.remote_storage_enable:
                continue
            cache = self._remote.metadata.cache(tip_of(p))
            remote_size[p.topic] = remote_size.get(p.topic, 0) + (cache.remote_size_bytes() if cache else 0)
            copy_lag[p.topic] = copy_lag.get(p.topic, 0) + _copy_lag_bytes(p)
        yield _per_topic(_BTM + "remotelogsizebytes", "Bytes in remote storage of the partitions this broker "
                         "leads (RemoteLogSizeBytes)", remote_size)
        yield _per_topic(_BTM + "remotecopylagbytes", "Bytes of rolled local segments not in remote storage yet, "
                         "of the partitions this broker leads (RemoteCopyLagBytes)", copy_lag)
        for key, value in sorted(self._remote.reader.chunks.stats().items()):
            yield CounterMetricFamily(f"tierlog_remote_chunk_cache_{key}",
                                      f"Remote read chunk cache: {key.replace('_', ' ')}", value=value)

    def _group_offsets(self) -> Iterator[Metric]:
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset of a group "
                                    "coordinated by this broker", labels=labels)
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus committed offset, for the "
                                "partitions this broker also hosts", labels=labels)
        shards, _loading = self._groups.loaded_shards()
        for shard in shards:
            for group in shard.offsets.group_ids():
                for (topic, index), committed in shard.offsets.all(group).items():
                    key = [group, topic, str(index)]
                    current.add_metric(key, committed.offset)
                    part = self._replicas.get(topic, index)
                    if part is not None:
                        lag.add_metric(key, max(0, part.high_watermark - committed.offset))
        yield current
        yield lag


def _copy_lag_bytes(part) -> int:
    """Rolled segments with offsets above the highest one in remote storage (what the next copy
    passes upload; a segment partly there counts whole)."""
    highest = part.log.highest_offset_in_remote_storage
    return sum(s.size for s in part.log.rolled_segments() if s.next_offset - 1 > highest)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _per_topic(name: str, doc: str, values: dict[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=["topic"])
    for topic, value in sorted(values.items()):
        family.add_metric([topic], value)
    return family
