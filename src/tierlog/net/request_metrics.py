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
``FetchConsumer`` or ``FetchFollower`` as in Kafka). Cost: one dict lookup and two
histogram observations per request, never per record; the label sets are bounded by
the registered APIs and their versions.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

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


class RequestMetrics:
    def __init__(self, registry: CollectorRegistry):
        self._requests = Counter("kafka_network_requestmetrics_requests", "Requests answered (RequestsPerSec)",
                                 ["request", "version"], registry=registry)
        self._total = Histogram("kafka_network_requestmetrics_totaltimems",
                                "Time from the request read to its response ready, ms (TotalTimeMs)",
                                ["request"], buckets=TIME_BUCKETS_MS, registry=registry)
        self._queue = Histogram("kafka_network_requestmetrics_requestqueuetimems",
                                "Time a read request waited for its handler, ms (RequestQueueTimeMs)",
                                ["request"], buckets=TIME_BUCKETS_MS, registry=registry)
        self._children: dict[tuple[int, int, bool], tuple] = {}

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
        count.inc()
        total.observe((done_ns - received_ns) / _NS_PER_MS)
        queue.observe(max(0, started_ns - received_ns) / _NS_PER_MS)

    def _children_for(self, api_key: int, version: int, from_follower: bool) -> tuple:
        name = request_name(api_key, from_follower)
        return (self._requests.labels(name, str(version)), self._total.labels(name), self._queue.labels(name))
