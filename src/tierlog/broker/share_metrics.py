"""Share-group metrics of a partition leader (KIP-932), per group, read when Prometheus scrapes.

Kafka's SharePartitionMetrics where Kafka has them, in the JMX exporter's form (docs/metrics.md):
``kafka_server_sharepartitionmetrics_inflightmessagecount`` (offsets in flight: acquired or
waiting for redelivery) and ``kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total``
(records released because their acquisition lock expired), labelled by group (not by partition:
bounded by the groups read here).  Kafka has no meter for these two, so tierlog's names:
``tierlog_share_redeliveries_total`` (records delivered again, delivery count above 1) and
``tierlog_share_dead_letters_total`` (archived records copied to the group's dead-letter topic).
Counters are plain integers the shell bumps once per request; nothing is kept per record.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from tierlog.group.share_partition import Acquired

__all__ = ["ShareMetrics", "ShareMetricsCollector"]

_SPM = "kafka_server_sharepartitionmetrics_"


class ShareMetrics:
    def __init__(self) -> None:
        self.lock_timeout_counts: dict[str, int] = {}
        self.redelivery_counts: dict[str, int] = {}
        self.dead_letter_counts: dict[str, int] = {}

    def lock_timeouts(self, group: str, n: int) -> None:
        self.lock_timeout_counts[group] = self.lock_timeout_counts.get(group, 0) + n

    def acquired(self, runs: Iterable[Acquired], group: str = "") -> None:
        again = sum(r.last_offset - r.first_offset + 1 for r in runs if r.delivery_count > 1)
        if again:
            self.redelivery_counts[group] = self.redelivery_counts.get(group, 0) + again

    def dead_letters(self, group: str, n: int) -> None:
        self.dead_letter_counts[group] = self.dead_letter_counts.get(group, 0) + n


class ShareMetricsCollector:
    """A prometheus-client collector over ``metrics`` and the in-flight counts ``in_flight`` gives by
    group: ``prepare`` (on the event loop, before a scrape) copies them, ``collect`` (on the
    metrics endpoint's worker thread) reads the copy."""

    def __init__(self, metrics: ShareMetrics, in_flight: Callable[[], Mapping[str, int]]):
        self._metrics = metrics
        self._in_flight = in_flight
        self._snapshot: tuple[dict[str, int], ...] = ({}, {}, {}, {})

    def prepare(self) -> None:
        m = self._metrics
        self._snapshot = (dict(self._in_flight()), dict(m.lock_timeout_counts), dict(m.redelivery_counts),
                          dict(m.dead_letter_counts))

    def collect(self) -> Iterator[Metric]:
        in_flight, timeouts, redeliveries, dead = self._snapshot
        gauge = GaugeMetricFamily(_SPM + "inflightmessagecount", "Share-group offsets in flight on this leader",
                                  labels=["group"])
        for group, n in sorted(in_flight.items()):
            gauge.add_metric([group], n)
        yield gauge
        for name, doc, counts in (
                (_SPM + "acquisitionlocktimeout", "Share-group records released at acquisition lock expiry", timeouts),
                ("tierlog_share_redeliveries", "Share-group records delivered again", redeliveries),
                ("tierlog_share_dead_letters", "Share-group records copied to the dead-letter topic", dead)):
            counter = CounterMetricFamily(name, doc, labels=["group"])
            for group, n in sorted(counts.items()):
                counter.add_metric([group], n)
            yield counter
