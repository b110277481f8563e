"""RequestMetrics: Kafka's ``kafka.network:type=RequestMetrics`` per request type, in a node's registry.

The dispatcher reports every answered request once (``on_response``, a dispatcher
observer: the request's header and body, and the monotonic times in ns when its
frame was complete and when its handler started; the response is ready now). Exposed under the JMX exporter's Kafka names
(``kafka_<domain>_<type>_<name>``, lower case, ``PerSec`` meters as ``_total`` counters):

* ``kafka_network_requestmetrics_requests_total{request,version}``: RequestsPerSec;
* ``kafka_network_requestmetrics_totaltimems{request}``: TotalTimeMs, a histogram (ms)
  from the whole frame read to the response encoded (waits in purgatory included; the
  send is not);
* ``kafka_network_requestmetrics_requestqueuetimems{request}``: RequestQueueTimeMs, a
  histogram (ms) of the time a complete frame waited behind the connection's earlier
  requests before its handler started.

``request`` is Kafka's request name (``Produce``, ``Metadata``, ...; a Fetch is
``FetchConsumer`` or ``FetchFollower`` as in Kafka). Cost per request, never per record:
one dict lookup and a few plain list and float updates on the event loop's thread
(issue 36: prometheus_client's locked counter and two locked histograms were 5 % of a
single-record Produce's broker CPU); the families are built from them when scraped. The
label sets are bounded by the registered APIs and their versions.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from tierlog.clock import monotonic_ns
from tierlog.protocol.api import ApiKey

__all__ = ["TIME_BUCKETS_MS", "RequestMetrics", "fetch_replica_id", "request_name"]

TIME_BUCKETS_MS = (0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)
_NS_PER_MS = 1_000_000


def request_name(api_key: int, from_follower: bool = False) -> str:
    """Kafka's name of a request type: ``ListOffsets`` for LIST_OFFSETS; a Fetch by who sent it."""
    if api_key == ApiKey.FETCH:
        return "FetchFollower" if from_follower else "FetchConsumer"
    try:
        return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return str(api_key)


def fetch_replica_id(request: dict, version: int) -> int:
    """The sender of a Fetch: a broker's id (a follower), else -1 (a consumer)."""
    if version >= 15:
        return (request.get("ReplicaState") or {}).get("ReplicaId", -1)
    return request.get("ReplicaId", -1)


class _Times:
    """One histogram's counts per bucket (``TIME_BUCKETS_MS``, then +Inf) and its sum, in ms."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(TIME_BUCKETS_MS) + 1)
        self.sum = 0.0

    def add(self, ms: float) -> None:
        self.counts[bisect_left(TIME_BUCKETS_MS, ms)] += 1     # a value on a bound counts in its bucket (le)
        self.sum += ms

    def buckets(self) -> tuple[list[tuple[str, int]], float]:
        """Cumulative (le, count) pairs as Prometheus exposes them, and the sum."""
        counts, total = list(self.counts), self.sum       # a copy: the loop may add while a scrape reads
        out, running = [], 0
        for bound, n in zip((*TIME_BUCKETS_MS, float("inf")), counts):
            running += n
            out.append((floatToGoString(bound), running))
        return out, total


class RequestMetrics:
    """Registered in ``registry`` as a collector: the families are made when it is scraped."""

    def __init__(self, registry: CollectorRegistry):
        self._children: dict[tuple[int, int, bool], tuple[list[int], _Times, _Times]] = {}
        self._requests: dict[tuple[str, str], list[int]] = {}        # (request, version) -> [count]
        self._total: dict[str, _Times] = {}
        self._queue: dict[str, _Times] = {}
        registry.register(self)

    def on_response(self, header, request: dict, response, received_ns: int, started_ns: int) -> None:
        follower = header.api_key == ApiKey.FETCH and fetch_replica_id(request, header.api_version) >= 0
        self.observe(header.api_key, header.api_version, follower, received_ns, started_ns, monotonic_ns())

    def observe(self, api_key: int, version: int, from_follower: bool,
                received_ns: int, started_ns: int, done_ns: int) -> None:
        key = (api_key, version, from_follower)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = self._children_for(*key)
        count, total, queue = children
        count[0] += 1
        total.add((done_ns - received_ns) / _NS_PER_MS)
        queue.add(max(0, started_ns - received_ns) / _NS_PER_MS)

    def _children_for(self, api_key: int, version: int, from_follower: bool) -> tuple[list[int], _Times, _Times]:
        name = request_name(api_key, from_follower)
        return (self._requests.setdefault((name, str(version)), [0]), self._total.setdefault(name, _Times()),
                self._queue.setdefault(name, _Times()))

    def describe(self) -> list[Metric]:
        return list(self._families({}, {}, {}))

    def collect(self) -> Iterator[Metric]:
        return self._families(dict(self._requests), dict(self._total), dict(self._queue))

    @staticmethod
    def _families(requests: dict[tuple[str, str], list[int]], total: dict[str, _Times],
                  queue: dict[str, _Times]) -> Iterator[Metric]:
        counter = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests answered (RequestsPerSec)",
                                      labels=["request", "version"])
        for (name, version), count in sorted(requests.items()):
            counter.add_metric([name, version], count[0])
        yield counter
        for metric, doc, times in (
                ("kafka_network_requestmetrics_totaltimems",
                 "Time from the request read to its response ready, ms (TotalTimeMs)", total),
                ("kafka_network_requestmetrics_requestqueuetimems",
                 "Time a read request waited for its handler, ms (RequestQueueTimeMs)", queue)):
            family = HistogramMetricFamily(metric, doc, labels=["request"])
            for name, t in sorted(times.items()):
                buckets, sum_ms = t.buckets()
                family.add_metric([name], buckets, sum_ms)
            yield family
