"""Planning a read's tasks on the driver: broker ranges, read directly from remote storage where
it holds them (``remote_planning``, grouped by ``remote_grouping``), through the brokers elsewhere.

Used by batch reads and by each streaming micro-batch alike, so a streaming query that starts
at ``earliest`` reads the tiered part directly and the tail through the brokers: the switch is
only where each micro-batch's ranges cut, every offset of ``[start, end)`` in one task
(``cover_range``), whatever the checkpoint replays.

Which store: ``remoteStorage=DIR|s3://...`` names it; ``auto`` asks the cluster
(``remote_auto.detect``, once per set of topics: a streaming query does not ask every trigger);
``off`` reads everything through the brokers. A range starting above its partition's highest
tiered offset (ListOffsets -5) never lists the store: a caught-up stream costs one ListOffsets.
"""

from __future__ import annotations

import logging

from tierlog.client import Cluster, DataLossError, KafkaError
from tierlog.spark.options import REMOTE_AUTO, REMOTE_OFF, SourceOptions
from tierlog.spark.partition import TierlogPartition, broker_partitions
from tierlog.spark.planning import OffsetRange
from tierlog.spark.remote_auto import detect, list_reachable
from tierlog.spark.remote_grouping import RemotePiece, group_pieces
from tierlog.spark.remote_planning import cover_range
from tierlog.spark.remote_store import StoreSpec, StoreView, store_ranges
from tierlog.tiered import list_partitions
from tierlog.tiered.read_rules import LATEST_TIERED

__all__ = ["StoreFinder", "plan_from_store", "plan_partitions"]

log = logging.getLogger(__name__)


class StoreFinder:
    """The store a read's topics are read from directly (None: through the brokers), decided once
    per set of topics; the listing is fresh each time."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._decided: dict[tuple[str, ...], StoreSpec | None] = {}

    def find(self, cluster: Cluster, topics: list[str]) -> tuple[StoreSpec, StoreView] | None:
        key = tuple(topics)
        if key not in self._decided:
            found = self._first(cluster, topics)
            self._decided[key] = None if found is None else found[0]
            return found
        spec = self._decided[key]
        if spec is None:
            return None
        view = list_reachable(spec, topics) if self.opts.remote_storage == REMOTE_AUTO else _listing(spec, topics)
        return None if view is None else (spec, view)

    def _first(self, cluster: Cluster, topics: list[str]) -> tuple[StoreSpec, StoreView] | None:
        if self.opts.remote_storage == REMOTE_AUTO:
            return detect(cluster, topics, self.opts)
        spec = StoreSpec.of(self.opts)
        return spec, _listing(spec, topics)


def _listing(spec: StoreSpec, topics: list[str]) -> StoreView:
    return StoreView.of_topics(spec.open(), topics, spec.encryption())


def plan_partitions(opts: SourceOptions, cluster: Cluster, ranges: list[OffsetRange],
                    finder: StoreFinder) -> list[TierlogPartition]:
    """The tasks reading ``ranges``, with the brokers answering."""
    ranges = [r for r in ranges if r.size > 0]
    if opts.remote_storage == REMOTE_OFF or not ranges:
        return broker_partitions(opts, ranges)
    highest = _highest_tiered(opts, cluster, ranges)
    if highest is None:
        return broker_partitions(opts, ranges)
    below = sorted({r.topic for r in ranges if r.start <= highest[(r.topic, r.partition)]})
    found = finder.find(cluster, below) if below else None
    if found is None:
        return broker_partitions(opts, ranges)
    topic_ids = {r.topic: cluster.topic_ids.get(r.topic) for r in ranges}
    return direct_partitions(opts, *found, ranges, highest, topic_ids)


def _highest_tiered(opts: SourceOptions, cluster: Cluster, ranges: list[OffsetRange]) -> dict | None:
    """ListOffsets -5 of each range's partition; with ``auto``, None when the brokers cannot answer it
    (a broker older than ListOffsets v9: nothing to read directly)."""
    try:
        return cluster.list_offsets([(r.topic, r.partition) for r in ranges], LATEST_TIERED)
    except KafkaError as exc:
        if opts.remote_storage != REMOTE_AUTO:
            raise
        log.info("tierlog: remoteStorage=auto reads through the brokers: no highest tiered offset (%s)", exc)
        return None


def plan_from_store(opts: SourceOptions) -> list[TierlogPartition]:
    """The tasks of a batch read planned from the named store alone (no broker answers)."""
    spec = StoreSpec.of(opts)
    store = spec.open()
    topics = _store_topics(opts, store)
    view = StoreView.of_topics(store, topics, spec.encryption())
    return direct_partitions(opts, spec, view, store_ranges(view, opts), None, {})


def direct_partitions(opts: SourceOptions, spec: StoreSpec, view: StoreView, ranges: list[OffsetRange],
                      highest: dict | None, topic_ids: dict) -> list[TierlogPartition]:
    """Remote pieces grouped into tasks of about ``remotePartitionBytes``, the rest through the brokers
    (``highest`` None: no broker answers, so a piece no segment holds is data loss)."""
    pieces, brokers, txn_segments = [], [], {}
    for r in ranges:
        tp = (r.topic, r.partition)
        bound = None if highest is None else highest.get(tp, -1)
        segments, tiered = view.readable(tp, topic_ids.get(r.topic), bound)
        if opts.isolation_level:        # read_committed: only where every marker is uploaded (remote_txn)
            tiered = min(tiered, view.stable_end(segments) - 1)
            txn_segments[tp] = view.transaction_indexed(tp, topic_ids.get(r.topic), segments)
        cover = cover_range(r, segments, tiered)
        pieces += [RemotePiece(piece, segment) for piece, segment in cover.remote]
        brokers += cover.brokers
    if highest is None and any(r.size for r in brokers):
        missing = ", ".join(f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in brokers if r.size)
        raise DataLossError(f"no broker answers and remote storage does not hold {missing}" +
                            (" (at read_committed, with every transaction in it decided)" if opts.isolation_level else ""))
    tasks = group_pieces(pieces, opts.remote_partition_bytes, opts.max_records_per_partition, opts.min_partitions)
    return [TierlogPartition.remote(task, spec, _txn_segments_of(task, txn_segments)) for task in tasks] + \
        broker_partitions(opts, brokers)


def _txn_segments_of(task: list[RemotePiece], txn_segments: dict) -> tuple | None:
    """The segments with a ``.txnindex`` a read_committed task looks in (None: read_uncommitted)."""
    first = task[0].range
    found = txn_segments.get((first.topic, first.partition))
    return None if found is None else tuple(s for s in found if s.end_offset >= first.start)


def _store_topics(opts: SourceOptions, store) -> list[str]:
    if opts.subscribe is not None:
        return list(opts.subscribe)
    if opts.assign is not None:
        return sorted({t for t, _ in opts.assign})
    return sorted({p.topic_id_partition.topic for p in list_partitions(store)})
