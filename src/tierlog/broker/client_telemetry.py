"""KIP-714 client telemetry on one broker: the client instances it has seen and Kafka's rules for
GetTelemetrySubscriptions (71) and PushTelemetry (72) (Kafka's ClientMetricsManager and
ClientMetricsInstance). Sans-IO: every call takes ``now_ms``; the pushed metrics go to a
``TelemetrySeries`` (``broker.telemetry_series``) for the node's /metrics.

A client instance is a uuid the broker hands out (GetTelemetrySubscriptions with the zero
uuid); its subscription (``metadata.client_metrics_rules.client_subscription``: what every
matching CLIENT_METRICS resource asks for, the smallest interval, a subscription id) is
computed when the instance is first seen and again whenever the image's subscriptions change,
which changes the id, so the client's next push is UNKNOWN_SUBSCRIPTION_ID and it asks again.

GetTelemetrySubscriptions: at most one per push interval (counting pushes too), unless the
previous request failed with UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE; earlier
is THROTTLING_QUOTA_EXCEEDED. The answer: the instance id, the subscription id, the accepted
compression types (zstd, lz4, gzip, snappy; none is always accepted), the push interval,
``telemetry.max.bytes``, delta temporality, the requested metric prefixes ([""]: all).

PushTelemetry, checked in Kafka's order: the zero uuid is INVALID_REQUEST; a push after the
instance's terminating push is INVALID_REQUEST; another subscription id is
UNKNOWN_SUBSCRIPTION_ID; an unknown codec UNSUPPORTED_COMPRESSION_TYPE; a push sooner than the
interval after the previous one (the first push after a GetTelemetrySubscriptions may come
early: clients add jitter) is THROTTLING_QUOTA_EXCEEDED unless it is the terminating one;
metrics over ``telemetry.max.bytes``, compressed or decompressed, TELEMETRY_TOO_LARGE; a payload
that does not decompress or parse is INVALID_RECORD. A terminating push's metrics are taken and
the instance's series are dropped (the client is gone).

Bounds: at most ``CLIENT_INSTANCES_MAX`` instances, the least recently seen evicted first (with
their series); an instance not heard from for ``INSTANCE_EXPIRY_INTERVALS`` push intervals (at
least ``INSTANCE_EXPIRY_MIN_MS``) is forgotten at the next request or scrape.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tierlog.metadata.client_metrics_rules import ClientSubscription, client_subscription
from tierlog.protocol.errors import ErrorCode
from tierlog.records.compression import CompressionType, DecompressedTooLarge, decompress
from tierlog.records.errors import InvalidRecordError

from .telemetry_series import TelemetrySeries

__all__ = ["ACCEPTED_COMPRESSION_TYPES", "CLIENT_INSTANCES_MAX", "ClientTelemetry"]

ZERO_UUID = bytes(16)
#: what the broker decompresses, in the order clients should prefer (Kafka's)
ACCEPTED_COMPRESSION_TYPES = (CompressionType.ZSTD, CompressionType.LZ4, CompressionType.GZIP, CompressionType.SNAPPY)
CLIENT_INSTANCES_MAX = 16384
INSTANCE_EXPIRY_INTERVALS = 3
INSTANCE_EXPIRY_MIN_MS = 60_000


@dataclass
class _Instance:
    subscription: ClientSubscription
    subscriptions_seen: object                  # the image's subscriptions it was computed from
    labels: dict[str, str]
    last_get_ms: int = -1
    last_push_ms: int = -1
    last_seen_ms: int = 0
    terminating: bool = False
    last_error: int = ErrorCode.NONE

    def expired(self, now_ms: int) -> bool:
        life = max(INSTANCE_EXPIRY_MIN_MS, INSTANCE_EXPIRY_INTERVALS * self.subscription.push_interval_ms)
        return now_ms - self.last_seen_ms > life

    def may_get(self, now_ms: int) -> bool:
        """Kafka's maybeUpdateGetRequestTimestamp: one GetTelemetrySubscriptions per interval."""
        last = max(self.last_get_ms, self.last_push_ms)
        if last < 0 or now_ms - last >= self.subscription.push_interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms: int) -> bool:
        """Kafka's maybeUpdatePushRequestTimestamp: the first push after a get at once, then one per interval."""
        ok = self.last_get_ms > self.last_push_ms or \
            now_ms - max(self.last_get_ms, self.last_push_ms) >= self.subscription.push_interval_ms
        if ok:
            self.last_push_ms = now_ms
        return ok


class ClientTelemetry:
    """``subscriptions()``: the image's CLIENT_METRICS resources (name -> configs);
    ``max_bytes``: ``telemetry.max.bytes``; ``series``: where pushed metrics go."""

    def __init__(self, subscriptions: Callable[[], Mapping[str, Mapping[str, str]]], max_bytes: int,
                 series: TelemetrySeries, new_id: Callable[[], bytes] = lambda: uuid.uuid4().bytes):
        self._subscriptions = subscriptions
        self.max_bytes = max_bytes
        self.series = series
        self._new_id = new_id
        self._instances: OrderedDict[bytes, _Instance] = OrderedDict()

    @property
    def instance_count(self) -> int:
        return len(self._instances)

    def get_subscriptions(self, instance_id: bytes, client: Mapping[str, str], now_ms: int) -> dict:
        """The GetTelemetrySubscriptions answer; ``client``: client_id, principal, client_source_address."""
        if instance_id == ZERO_UUID:
            instance_id = self._new_id()
        instance = self._instance(instance_id, client, now_ms)
        if not instance.may_get(now_ms) and instance.last_error not in (ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
                                                                       ErrorCode.UNSUPPORTED_COMPRESSION_TYPE):
            instance.last_error = ErrorCode.THROTTLING_QUOTA_EXCEEDED
            return _get_answer(ErrorCode.THROTTLING_QUOTA_EXCEEDED, ZERO_UUID, None, 0)
        instance.last_error = ErrorCode.NONE
        return _get_answer(ErrorCode.NONE, instance_id, instance.subscription, self.max_bytes)

    def push(self, request: Mapping, client: Mapping[str, str], now_ms: int) -> int:
        """A PushTelemetry's error code (NONE: its metrics were taken)."""
        instance_id = bytes(request["ClientInstanceId"])
        if instance_id == ZERO_UUID:
            return ErrorCode.INVALID_REQUEST
        instance = self._instance(instance_id, client, now_ms)
        error = self._check_push(instance, request, now_ms)
        if error == ErrorCode.NONE:
            error = self._take(instance_id, instance, request, now_ms)
        instance.last_error = error
        if request["Terminating"] and error == ErrorCode.NONE:
            instance.terminating = True
            self.series.forget(instance_id)
        return error

    def _check_push(self, instance: _Instance, request: Mapping, now_ms: int) -> int:
        if instance.terminating:
            return ErrorCode.INVALID_REQUEST
        if request["SubscriptionId"] != instance.subscription.subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        codec = request["CompressionType"]
        if codec != CompressionType.NONE and codec not in ACCEPTED_COMPRESSION_TYPES:
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        if not instance.may_push(now_ms) and not request["Terminating"]:
            return ErrorCode.THROTTLING_QUOTA_EXCEEDED
        if len(request["Metrics"] or b"") > self.max_bytes:
            return ErrorCode.TELEMETRY_TOO_LARGE
        return ErrorCode.NONE

    def _take(self, instance_id: bytes, instance: _Instance, request: Mapping, now_ms: int) -> int:
        payload = request["Metrics"] or b""
        try:
            data = decompress(request["CompressionType"], payload, self.max_bytes)
        except DecompressedTooLarge:
            return ErrorCode.TELEMETRY_TOO_LARGE
        except InvalidRecordError:
            return ErrorCode.INVALID_RECORD
        if not self.series.take(instance_id, instance.labels, data, now_ms):
            return ErrorCode.INVALID_RECORD
        return ErrorCode.NONE

    def _instance(self, instance_id: bytes, client: Mapping[str, str], now_ms: int) -> _Instance:
        """The instance, (re)computing its subscription when new or when the subscriptions changed."""
        self.expire(now_ms)
        subscriptions = self._subscriptions()
        instance = self._instances.get(instance_id)
        if instance is None or instance.subscriptions_seen is not subscriptions:
            labels = {"client_instance_id": str(uuid.UUID(bytes=instance_id)), **client}
            subscription = client_subscription(subscriptions, labels)
            if instance is None:
                instance = _Instance(subscription, subscriptions, labels)
                self._instances[instance_id] = instance
                self._evict()
            else:
                instance.subscription, instance.subscriptions_seen = subscription, subscriptions
        instance.last_seen_ms = now_ms
        self._instances.move_to_end(instance_id)
        return instance

    def _evict(self) -> None:
        while len(self._instances) > CLIENT_INSTANCES_MAX:
            gone, _ = self._instances.popitem(last=False)
            self.series.forget(gone)

    def prepare_scrape(self, now_ms: int) -> None:
        """On the event loop before a scrape: forget the silent instances, then copy the series."""
        self.expire(now_ms)
        self.series.prepare()

    def expire(self, now_ms: int) -> None:
        """Forget the instances not heard from for a while (the least recently seen come first)."""
        while self._instances:
            instance_id, instance = next(iter(self._instances.items()))
            if not instance.expired(now_ms):
                return
            del self._instances[instance_id]
            self.series.forget(instance_id)


def _get_answer(error: int, instance_id: bytes, subscription: ClientSubscription | None, max_bytes: int) -> dict:
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "ClientInstanceId": instance_id,
            "SubscriptionId": subscription.subscription_id if subscription else 0,
            "AcceptedCompressionTypes": [int(c) for c in ACCEPTED_COMPRESSION_TYPES] if subscription else [],
            "PushIntervalMs": subscription.push_interval_ms if subscription else 0,
            "TelemetryMaxBytes": max_bytes, "DeltaTemporality": subscription is not None,
            "RequestedMetrics": list(subscription.metrics) if subscription else []}
