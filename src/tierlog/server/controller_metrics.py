"""ControllerMetricsCollector: Kafka's ``kafka.controller:type=KafkaController`` gauges, at scrape time.

From the controller role's QuorumController and its committed metadata image, as
Kafka's controllers report them (JMX exporter names, docs/metrics.md):

* ``kafka_controller_kafkacontroller_activecontrollercount``: 1 on the active
  controller, 0 on the others (a sum over the quorum is 1 when it has a leader);
* ``..._offlinepartitionscount``: partitions without a leader; ``..._globaltopiccount``,
  ``..._globalpartitioncount``, ``..._activebrokercount``, ``..._fencedbrokercount``:
  reported by the active controller only, 0 elsewhere, as in Kafka, so a sum over the
  quorum counts each once.

One pass over the image's partitions per scrape, on the scrape's worker thread (the
image is immutable, ``active`` and ``committed_image`` are single attribute reads);
nothing between scrapes.
"""
from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

__all__ = ["ControllerMetricsCollector"]

_KC = "kafka_controller_kafkacontroller_"


class ControllerMetricsCollector:
    def __init__(self, quorum_controller):
        self._qc = quorum_controller

    def describe(self) -> list[Metric]:
        return list(self.collect())

    def collect(self) -> Iterator[Metric]:
        active = self._qc.active
        image = self._qc.committed_image
        yield _gauge("activecontrollercount", "1 on the active controller (ActiveControllerCount)", int(active))
        topics = image.topics.values() if active else ()
        partitions = [p for t in topics for p in t.partitions]
        brokers = list(image.brokers.values()) if active else []
        yield _gauge("offlinepartitionscount", "Partitions without a leader (OfflinePartitionsCount)",
                     sum(p.leader < 0 for p in partitions))
        yield _gauge("globaltopiccount", "Topics (GlobalTopicCount)", len(topics))
        yield _gauge("globalpartitioncount", "Partitions (GlobalPartitionCount)", len(partitions))
        yield _gauge("activebrokercount", "Registered, unfenced brokers (ActiveBrokerCount)",
                     sum(not b.fenced for b in brokers))
        yield _gauge("fencedbrokercount", "Registered, fenced brokers (FencedBrokerCount)",
                     sum(b.fenced for b in brokers))


def _gauge(name: str, doc: str, value: int) -> GaugeMetricFamily:
    return GaugeMetricFamily(_KC + name, doc, value=value)
