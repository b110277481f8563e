"""ApplyMetrics: how late this node applies committed metadata batches (Kafka's
``broker-metadata-metrics`` group, in a prometheus-client registry of the node's own).

The node's CommitApplier reports every batch the ``MetadataLoader`` applied
(``batch_applied(last_offset, append_ms, now_ms)``; ``append_ms`` is the batch's
append timestamp, the quorum leader's wall clock, ``now_ms`` this node's wall
clock right after the image was built and published) and every snapshot it loaded
(``snapshot_loaded``). Exposed, Kafka's names with ``-`` as ``_``:

* ``broker_metadata_metrics_last_applied_record_offset``: last offset (inclusive)
  of the last applied batch or loaded snapshot;
* ``broker_metadata_metrics_last_applied_record_timestamp``: its append timestamp (ms);
* ``broker_metadata_metrics_last_applied_record_lag_ms``: ``now_ms - append_ms`` of the
  last applied batch, taken when it was applied (Kafka computes now minus the
  timestamp when the gauge is read, which on an idle broker also grows between
  batches; this is the apply lag itself);
* ``broker_metadata_metrics_metadata_load_error_count``: records the loader could not
  decode or replay (``set_load_errors``);
* ``broker_metadata_metrics_metadata_apply_error_count``: images a subscriber of the
  loader failed to apply (``set_apply_errors``);
* ``broker_metadata_metrics_apply_lag_ms``: a histogram of the lag of *live* batches
  (``LAG_BUCKETS_MS``), from which p99 can be read.

Replay is not lag: a batch appended before ``live_since_ms`` (when the node started
applying) was replayed from the local log or caught up after a restart, and is
left out of the histogram; the gauges still follow it, as Kafka's do. Records
appended after that moment count even while the node is catching up: they were
applied that late. Both clocks are wall clocks, of two machines in general (the
same one under ``tierlog up``); a negative lag (clock skew) counts as 0.
Resolution: 1 ms.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, Histogram

__all__ = ["LAG_BUCKETS_MS", "PREFIX", "ApplyMetrics"]

PREFIX = "broker_metadata_metrics_"
LAG_BUCKETS_MS = (1, 2, 3, 5, 7.5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 250, 500, 1000, 2500, 5000)


class ApplyMetrics:
    def __init__(self, registry: CollectorRegistry, live_since_ms: int):
        self.live_since_ms = live_since_ms
        self.replayed = 0        # applied batches left out of the histogram
        self._offset = _gauge(registry, "last_applied_record_offset",
                              "Last offset of the last metadata batch (or snapshot) applied by this node")
        self._timestamp = _gauge(registry, "last_applied_record_timestamp",
                                 "Append timestamp (ms) of the last metadata batch applied by this node")
        self._lag = _gauge(registry, "last_applied_record_lag_ms",
                           "Apply time minus append time (ms) of the last metadata batch applied by this node")
        self._load_errors = _gauge(registry, "metadata_load_error_count",
                                   "Metadata records this node could not decode or replay")
        self._apply_errors = _gauge(registry, "metadata_apply_error_count",
                                    "Metadata images a part of this node failed to apply")
        self._lag_ms = Histogram(PREFIX + "apply_lag_ms",
                                 "Apply time minus append time (ms) of metadata batches appended after "
                                 "this node started", buckets=LAG_BUCKETS_MS, registry=registry)
        self._offset.set(-1)
        self._timestamp.set(-1)

    def batch_applied(self, last_offset: int, append_ms: int, now_ms: int) -> None:
        """The loader applied a batch ending at ``last_offset`` (inclusive)."""
        lag = max(0, now_ms - append_ms)
        self._offset.set(last_offset)
        self._timestamp.set(append_ms)
        self._lag.set(lag)
        if append_ms >= self.live_since_ms:
            self._lag_ms.observe(lag)
        else:
            self.replayed += 1

    def snapshot_loaded(self, last_offset: int, log_time_ms: int) -> None:
        """The loader rebuilt the image from a snapshot ending at ``last_offset`` (inclusive)."""
        self._offset.set(last_offset)
        self._timestamp.set(log_time_ms)

    def set_load_errors(self, count: int) -> None:
        self._load_errors.set(count)

    def set_apply_errors(self, count: int) -> None:
        self._apply_errors.set(count)


def _gauge(registry: CollectorRegistry, name: str, doc: str) -> Gauge:
    return Gauge(PREFIX + name, doc, registry=registry)
