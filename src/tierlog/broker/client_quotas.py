"""The broker's client quota manager (Kafka's ClientQuotaManager and ClientRequestQuotaManager).

The request dispatcher asks it, once per answered request, how long to throttle the
client (``throttle``): the usage is recorded in the client's sensors and, when a rate is
over its quota, the answer carries ``throttle_time_ms`` and the connection is muted that
long (KIP-219, ``net.server.Throttled``).

- ``producer_byte_rate``: the Produce request's bytes (Kafka counts the request size);
- ``consumer_byte_rate``: a consumer Fetch answer's bytes (follower fetches are not counted);
- ``request_percentage``: the time the handler and the encoding took on the event loop,
  as a percentage of a second (KIP-124: 100 = one thread busy all the time). An awaiting
  handler counts its synchronous part only (the wait in purgatory is not work);
- ``controller_mutation_rate`` (KIP-599): partitions created or deleted by CreateTopics,
  CreatePartitions and DeleteTopics, in a token bucket (``net.token_bucket``, burst
  ``controller.quota.window.num`` x ``controller.quota.window.size.seconds``); the handlers
  ask ``admit_mutations`` before forwarding, and the throttle time they answer mutes the
  connection as the others do.

Rates use Kafka's windows (``quota.window.num`` samples of ``quota.window.size.seconds``,
``net.sampled_rate``). Cost: the dispatcher reads ``active`` and calls nothing while no quota
is set (``follow`` is told of every new image's quotas); else one dict lookup per request for
the client's sensors, (principal, client id) -> resolved once per quota change (KIP-55
precedence, ``metadata.client_quotas``), at most
``QUOTA_CLIENTS_MAX`` clients remembered. A sensor is shared as Kafka's metric tags say
(a quota on a user alone is shared by its client ids). Sensors are kept only for
quota'd clients; their metrics (Kafka's ``kafka.server:type=Produce|Fetch|Request``
``byte-rate``, ``request-time``, ``throttle-time`` per user and client id) are
computed at scrape time (``collect``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from tierlog.metadata.client_quotas import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotasImage,
)
from tierlog.net.request_metrics import fetch_replica_id
from tierlog.net.sampled_rate import SampledRate, throttle_ms
from tierlog.net.token_bucket import TokenBucket
from tierlog.protocol.api import ApiKey

__all__ = ["QUOTA_CLIENTS_MAX", "ClientQuotaManager", "Sensor"]

QUOTA_CLIENTS_MAX = 10_000          # (principal, client id) pairs remembered; more: forgotten and resolved again
_NS_TO_PERCENT = 100 / 1e9          # ns of handler time -> percent of one second
_USER_PREFIX = "User:"
# quota kind -> (Kafka's metric type, the usage metric's name)
_KINDS = {PRODUCER_BYTE_RATE: ("produce", "byte_rate"), CONSUMER_BYTE_RATE: ("fetch", "byte_rate"),
          REQUEST_PERCENTAGE: ("request", "request_time")}
#: the requests whose own ThrottleTimeMs (a controller mutation quota's) mutes the connection too
_MUTATIONS = frozenset({ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS})


class Sensor:
    """One quota entity's usage of one kind, its quota, and the throttle times it caused."""

    __slots__ = ("quota", "throttles", "usage")

    def __init__(self, quota: float, samples: int, window_ms: int, now_ms: int):
        self.quota = quota
        self.usage = SampledRate(samples, window_ms, now_ms)
        self.throttles = SampledRate(samples, window_ms, now_ms)

    def record(self, value: float, now_ms: int) -> int:
        """Count ``value``; the throttle time it earns (0: within the quota)."""
        self.usage.record(value, now_ms)
        delay = throttle_ms(self.usage, self.quota, now_ms)
        self.throttles.record(delay, now_ms)
        return delay


class _Client:
    """A (principal, client id)'s sensors; None where no quota applies."""

    __slots__ = ("fetch", "mutation", "produce", "request")

    def __init__(self, produce: Sensor | None, fetch: Sensor | None, request: Sensor | None,
                 mutation: TokenBucket | None):
        self.produce, self.fetch, self.request, self.mutation = produce, fetch, request, mutation


class ClientQuotaManager:
    def __init__(self, samples: int, window_s: int, clock_ms: Callable[[], int], mutation_burst_s: float = 11.0):
        self.active = False               # whether any quota is set (the dispatcher asks nothing while not)
        self.samples, self.window_ms = samples, window_s * 1000
        self.mutation_burst_s = mutation_burst_s
        self._clock_ms = clock_ms
        self._quotas: ClientQuotasImage | None = None
        self._clients: dict[tuple[str, str], _Client] = {}
        self._sensors: dict[tuple[str, str, str], Sensor] = {}     # (kind, user tag, client-id tag)
        self._buckets: dict[tuple[str, str], TokenBucket] = {}      # controller mutations: (user tag, client-id tag)

    def _client(self, header) -> _Client | None:
        """The sensors of the request's client; None while no quota is set at all."""
        if not self.active:
            return None
        key = (header.principal, header.client_id or "")
        client = self._clients.get(key)
        return client if client is not None else self._resolve(key)

    def throttle(self, header, request: Any, response: Any, request_bytes: int, response_bytes: Callable[[], int],
                 handler_ns: int) -> int:
        """Record this request's usage; the throttle time (ms) its client earned, 0 for none."""
        client = self._client(header)
        if client is None:
            return 0
        now_ms = self._clock_ms()
        delay = 0
        api_key = header.api_key
        if api_key == ApiKey.PRODUCE and client.produce is not None:
            delay = client.produce.record(request_bytes, now_ms)
        elif api_key == ApiKey.FETCH and client.fetch is not None \
                and fetch_replica_id(request, header.api_version) < 0:
            delay = client.fetch.record(response_bytes(), now_ms)
        elif api_key in _MUTATIONS:
            delay = response.get("ThrottleTimeMs", 0)
        if client.request is not None:
            delay = max(delay, client.request.record(handler_ns * _NS_TO_PERCENT, now_ms))
        return delay

    def admit_mutations(self, header, permits: list[int], strict: bool) -> tuple[list[bool], int]:
        """KIP-599: per mutation (its partitions), whether it may go to the controller, and the
        throttle time to answer. Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+):
        a mutation is refused while the bucket is below zero, else counted (it may take the bucket
        below); permissive (older versions): every one is counted and admitted."""
        client = self._client(header)
        bucket = client.mutation if client is not None else None
        if bucket is None:
            return [True] * len(permits), 0
        now_ms = self._clock_ms()
        verdicts = []
        for n in permits:
            ok = not (strict and bucket.exceeded(now_ms))
            if ok:
                bucket.record(n, now_ms)
            verdicts.append(ok)
        return verdicts, bucket.throttle_ms(now_ms)

    def follow(self, quotas: ClientQuotasImage) -> None:
        """The quotas of a new metadata image: when they changed, every client is resolved again
        and the sensors whose quota is gone go too."""
        if quotas is self._quotas:
            return
        self._quotas = quotas
        self.active = len(quotas) > 0
        self._clients.clear()
        self._sensors = {k: s for k, s in self._sensors.items() if self._still(k, s, quotas)}
        self._buckets = {k: b for k, b in self._buckets.items()
                         if self._still((CONTROLLER_MUTATION_RATE, *k), b, quotas)}

    @staticmethod
    def _still(key: tuple[str, str, str], sensor: Sensor | TokenBucket, quotas: ClientQuotasImage) -> bool:
        kind, user, client_id = key
        found = quotas.resolve(user, client_id, kind) if len(quotas) else None
        if found is None or (found[1], found[2]) != (user, client_id):
            return False
        sensor.quota = found[0]
        return True

    def _resolve(self, key: tuple[str, str]) -> _Client:
        if len(self._clients) >= QUOTA_CLIENTS_MAX:
            self._clients.clear()
        principal, client_id = key
        user = principal[len(_USER_PREFIX):] if principal.startswith(_USER_PREFIX) else principal
        client = self._clients[key] = _Client(self._sensor(PRODUCER_BYTE_RATE, user, client_id),
                                              self._sensor(CONSUMER_BYTE_RATE, user, client_id),
                                              self._sensor(REQUEST_PERCENTAGE, user, client_id),
                                              self._bucket(user, client_id))
        return client

    def _bucket(self, user: str, client_id: str) -> TokenBucket | None:
        assert self._quotas is not None
        found = self._quotas.resolve(user, client_id, CONTROLLER_MUTATION_RATE)
        if found is None:
            return None
        quota, user_tag, client_tag = found
        bucket = self._buckets.get((user_tag, client_tag))
        if bucket is None:
            bucket = self._buckets[(user_tag, client_tag)] = TokenBucket(quota, self.mutation_burst_s,
                                                                         self._clock_ms())
        return bucket

    def _sensor(self, kind: str, user: str, client_id: str) -> Sensor | None:
        assert self._quotas is not None
        found = self._quotas.resolve(user, client_id, kind)
        if found is None:
            return None
        quota, user_tag, client_tag = found
        sensor = self._sensors.get((kind, user_tag, client_tag))
        if sensor is None:
            sensor = self._sensors[(kind, user_tag, client_tag)] = Sensor(quota, self.samples, self.window_ms,
                                                                          self._clock_ms())
        return sensor

    # -- metrics (a prometheus-client collector) --------------------------------------
    def collect(self) -> Iterator[Metric]:
        now_ms = self._clock_ms()
        families: dict[str, GaugeMetricFamily] = {}

        def family(name: str, text: str) -> GaugeMetricFamily:
            if name not in families:
                families[name] = GaugeMetricFamily(name, text, labels=["user", "client_id"])
            return families[name]
        for (kind, user, client_id), sensor in list(self._sensors.items()):
            kafka_type, usage = _KINDS[kind]
            family(f"kafka_server_{kafka_type}_{usage}", f"{kafka_type} {usage} per quota entity (per second)") \
                .add_metric([user, client_id], sensor.usage.rate(now_ms))
            family(f"kafka_server_{kafka_type}_throttle_time", f"{kafka_type} throttle time, average ms per request") \
                .add_metric([user, client_id], sensor.throttles.average(now_ms))
        yield from families.values()
