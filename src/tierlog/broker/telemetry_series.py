"""Pushed client metrics (KIP-714) as Prometheus series on the broker's /metrics.

``TelemetrySeries.take`` decodes one push, OpenTelemetry ``MetricsData`` v1 protobuf (the
``opentelemetry-proto`` package's classes, as the clients encode it), and keeps the latest value
of each series: the metric name with every character Prometheus does not allow turned into
``_`` (``org.apache.kafka.producer.node.request.latency.avg`` ->
``org_apache_kafka_producer_node_request_latency_avg``), labelled with the client's
(``client_instance_id``, ``client_id``, ``principal``, ``client_source_address``), the OTLP
resource's attributes and the data point's (a ``node_id``, a ``topic``, ...). Gauges and
non-monotonic sums are gauges; monotonic sums are counters (``<name>_total``, not ``_total_total``
for a name that ends so): a delta
(the temporality brokers ask for) is added to the series' total, a cumulative value replaces it.
Histograms give ``<name>_count`` and ``<name>_sum`` counters the same way.

Bounds: at most ``SERIES_MAX`` series on the node; a new series past it is dropped and counted
in ``tierlog_client_telemetry_series_dropped_total``; a client's series go when it terminates or
is forgotten (``forget``). ``tierlog_client_telemetry_series`` and
``kafka_server_client_metrics_instance_count`` tell how many there are.

``collect`` runs in the metrics endpoint's thread: it reads what ``prepare`` (on the event loop,
before each scrape) copied.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from google.protobuf.message import DecodeError
from opentelemetry.proto.metrics.v1 import metrics_pb2
from prometheus_client.core import Metric

__all__ = ["SERIES_MAX", "TelemetrySeries"]

SERIES_MAX = 10_000
_AGGREGATION_DELTA = 1          # OTLP AggregationTemporality
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_:]")
_LABEL_BAD = re.compile(r"[^a-zA-Z0-9_]")
GAUGE, COUNTER = "gauge", "counter"

_Key = tuple[str, tuple[tuple[str, str], ...]]      # (family, sorted labels)


def prometheus_name(name: str) -> str:
    out = _NAME_BAD.sub("_", name)
    return out if out[:1] and not out[0].isdigit() else "_" + out


def _label(name: str) -> str:
    out = _LABEL_BAD.sub("_", name)
    return out if out[:1] and not out[0].isdigit() else "_" + out


def _attributes(attributes) -> dict[str, str]:
    out = {}
    for kv in attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        out[_label(kv.key)] = "" if kind is None else str(getattr(value, kind))
    return out


def _number(point) -> float:
    return float(point.as_double if point.WhichOneof("value") == "as_double" else point.as_int)


class TelemetrySeries:
    """The latest value of each pushed series, per client instance; ``instances()``: how many
    client instances the broker knows (for ``kafka_server_client_metrics_instance_count``)."""

    def __init__(self, instances: Callable[[], int] = lambda: 0, series_max: int = SERIES_MAX):
        self._series_max = series_max
        self._instances = instances
        self._values: dict[bytes, dict[_Key, float]] = {}       # client instance -> series -> value
        self._kinds: dict[str, tuple[str, str]] = {}            # family -> (type, help)
        self._count = 0
        self.dropped = 0
        self._prepared: tuple[list[Metric], ...] | None = None

    def take(self, instance_id: bytes, client: Mapping[str, str], payload: bytes, now_ms: int) -> bool:
        """One push's metrics (False: not a MetricsData message)."""
        try:
            data = metrics_pb2.MetricsData.FromString(payload)
        except (DecodeError, ValueError):
            return False
        values = self._values.setdefault(instance_id, {})
        for resource_metrics in data.resource_metrics:
            base = {**_attributes(resource_metrics.resource.attributes), **client}
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    self._metric(values, base, metric)
        return True

    def _metric(self, values: dict[_Key, float], base: Mapping[str, str], metric) -> None:
        name, kind = prometheus_name(metric.name), metric.WhichOneof("data")
        if kind == "gauge":
            for p in metric.gauge.data_points:
                self._set(values, name, GAUGE, metric.description, base, p.attributes, _number(p), replace=True)
        elif kind == "sum":
            monotonic, delta = metric.sum.is_monotonic, metric.sum.aggregation_temporality == _AGGREGATION_DELTA
            for p in metric.sum.data_points:
                self._set(values, name, COUNTER if monotonic else GAUGE, metric.description, base, p.attributes,
                          _number(p), replace=not (monotonic and delta))
        elif kind == "histogram":
            delta = metric.histogram.aggregation_temporality == _AGGREGATION_DELTA
            for p in metric.histogram.data_points:
                self._set(values, name + "_count", COUNTER, metric.description, base, p.attributes, float(p.count),
                          replace=not delta)
                self._set(values, name + "_sum", COUNTER, metric.description, base, p.attributes, p.sum,
                          replace=not delta)

    def _set(self, values: dict[_Key, float], family: str, kind: str, doc: str, base: Mapping[str, str],
             attributes, value: float, replace: bool) -> None:
        if kind == COUNTER and family.endswith("_total"):
            family = family[:-len("_total")]        # exposed as <family>_total, once
        known = self._kinds.setdefault(family, (kind, doc or family))
        if known[0] != kind:
            return                                  # a name pushed as two types: the first one stays
        key = (family, tuple(sorted({**_attributes(attributes), **base}.items())))
        if key not in values:
            if self._count >= self._series_max:
                self.dropped += 1
                return
            self._count += 1
            values[key] = 0.0
        values[key] = value if replace else values[key] + value

    def forget(self, instance_id: bytes) -> None:
        gone = self._values.pop(instance_id, None)
        if gone:
            self._count -= len(gone)

    @property
    def series_count(self) -> int:
        return self._count

    # -- exposition -------------------------------------------------------------------------------
    def prepare(self) -> None:
        """On the event loop, before a scrape: the families ``collect`` reports."""
        self._prepared = (list(self._families()),)

    def describe(self) -> list[Metric]:
        return []           # families come and go with the clients: no duplicate check at registration

    def collect(self) -> Iterator[Metric]:
        prepared = self._prepared
        yield from prepared[0] if prepared is not None else self._families()

    def _families(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for values in list(self._values.values()):
            for (family, labels), value in list(values.items()):
                kind, doc = self._kinds[family]
                m = families.get(family)
                if m is None:
                    m = families[family] = Metric(family, doc, kind)
                m.add_sample(family + "_total" if kind == COUNTER else family, dict(labels), value)
        yield from families.values()
        own = (("tierlog_client_telemetry_series", "gauge", "Client telemetry series on this broker's /metrics",
                self._count),
               ("tierlog_client_telemetry_series_dropped", "counter",
                f"Client telemetry series not kept: past the limit of {self._series_max}", self.dropped),
               ("kafka_server_client_metrics_instance_count", "gauge",
                "Client instances this broker keeps telemetry state for", self._instances()))
        for name, kind, doc, value in own:
            m = Metric(name, doc, kind)
            m.add_sample(name + "_total" if kind == COUNTER else name, {}, float(value))
            yield m
