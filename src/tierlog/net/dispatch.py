"""Turns one request frame into one response: header, version check, handler, encoding.

A dispatcher serves one registry of API modules (``API_KEY``, ``MIN_VERSION``,
``MAX_VERSION``, ``handle(context, header, request)``): the broker listeners
serve ``tierlog.broker.apis``, the controller listeners the controller's.

Kafka's rules: an unknown API key, a version we do not support (but for
ApiVersions) or a body that does not decode is a protocol violation that closes
the connection; an ApiVersions request at an unsupported version is answered at
v0 with UNSUPPORTED_VERSION and our list, so the client can retry.

Every answered request (acks=0 Produce included: its answer is None) goes to the
dispatcher's ``observers`` once its response is ready:
``observer.on_response(header, request, response, received_ns, started_ns)``
(``RequestMetrics``, the broker's ``BrokerTopicStats``); a request that closes the
connection is not observed.

Client quotas (KIP-219): a dispatcher given ``quotas`` (the broker's
``ClientQuotaManager``) asks it per answered request for a throttle time
(``quotas.throttle(header, request, response, request bytes, response bytes (a callable), handler ns)``);
a throttled answer is re-encoded with that ``ThrottleTimeMs`` (the larger of it and the
handler's) and returned as ``server.Throttled``, so the connection is muted that long
once it is sent. While no quota is set (``quotas.active`` false) nothing is asked.
"""
from __future__ import annotations

import inspect
import logging

from tierlog.clock import monotonic_ns
from tierlog.protocol import (
    ProtocolError,
    decode_request,
    decode_request_header,
    encode_response,
)
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

from .pipelining import Released
from .server import CloseConnection, Throttled

__all__ = ["ANONYMOUS", "RequestDispatcher", "api_versions_list"]

log = logging.getLogger(__name__)
ANONYMOUS = "User:ANONYMOUS"        # Kafka's KafkaPrincipal.ANONYMOUS


def api_versions_list(registry: dict) -> list[dict]:
    return [{"ApiKey": k, "MinVersion": m.MIN_VERSION, "MaxVersion": m.MAX_VERSION}
            for k, m in sorted(registry.items())]


class RequestDispatcher:
    """``context`` is what handlers get (a Broker or a controller server); it has ``api_versions``.
    ``listener`` names the listener this dispatcher serves: handlers see it as ``header.listener``
    (Kafka's request context listener name: Metadata and KIP-951 endpoints are given on it),
    the client's address as ``header.client_host`` (a group member's host) and who sent it as
    ``header.principal`` (Kafka's KafkaPrincipal: given by the SASL gate or the TLS listener's
    principal builder, ``User:ANONYMOUS`` otherwise; the ACL checks use it)."""

    def __init__(self, context, registry: dict, listener: str | None = None, observers: tuple = (),
                 quotas=None):
        self.context = context
        self.registry = registry
        self.listener = listener
        self.observers = observers
        self.quotas = quotas

    def __call__(self, frame: bytearray, client_host: str = "", received_ns: int | None = None,
                 principal: str = ANONYMOUS):
        started_ns = monotonic_ns()
        try:
            header, offset = decode_request_header(frame, self.listener, client_host, principal)
        except ProtocolError as e:
            raise CloseConnection(f"bad request header: {e}") from None
        api = self.registry.get(header.api_key)
        if api is None:
            raise CloseConnection(f"unknown api key {header.api_key}")
        if not api.MIN_VERSION <= header.api_version <= api.MAX_VERSION:
            if header.api_key == ApiKey.API_VERSIONS:
                return encode_response(ApiKey.API_VERSIONS, 0, header.correlation_id,
                                       {"ErrorCode": ErrorCode.UNSUPPORTED_VERSION,
                                        "ApiKeys": self.context.api_versions})
            raise CloseConnection(f"api key {header.api_key} version {header.api_version} is not supported")
        try:
            body = decode_request(header.api_key, header.api_version, frame, offset)
        except ProtocolError as e:
            raise CloseConnection(f"malformed api key {header.api_key} v{header.api_version} request: {e}") \
                from None
        result = api.handle(self.context, header, body)
        timing = (started_ns if received_ns is None else received_ns, started_ns)
        if type(result) is not dict and result is not None and inspect.isawaitable(result):  # most answer at once
            finish = self._finish(header, body, result, timing, len(frame), monotonic_ns() - started_ns)
            return Released(finish) if type(result) is Released else finish
        self._observe(header, body, result, timing)
        if self.quotas is None or not self.quotas.active:
            return self._encode(header, result)
        return self._answer_within_quota(header, body, result, len(frame), started_ns)

    async def _finish(self, header, body, pending, timing, request_bytes: int, sync_ns: int):
        result = await pending
        self._observe(header, body, result, timing)
        if self.quotas is None or not self.quotas.active:
            return self._encode(header, result)
        return self._answer_within_quota(header, body, result, request_bytes, monotonic_ns() - sync_ns)

    def _answer_within_quota(self, header, body, result, request_bytes: int, started_ns: int):
        """Encode; when the client's quotas throttle it, again with the throttle time, as ``Throttled``."""
        parts = self._encode(header, result)
        if parts is None:
            return None
        delay = self.quotas.throttle(header, body, result, request_bytes, lambda: sum(len(p) for p in parts),
                                     monotonic_ns() - started_ns)
        if delay <= 0:
            return parts
        if isinstance(result, dict) and "ThrottleTimeMs" in result and result["ThrottleTimeMs"] != delay:
            delay = max(delay, result["ThrottleTimeMs"])
            result["ThrottleTimeMs"] = delay
            parts = self._encode(header, result)
        return Throttled(parts, delay)

    def _observe(self, header, request, response, timing) -> None:
        for observer in self.observers:
            observer.on_response(header, request, response, *timing)

    @staticmethod
    def _encode(header, body):
        if body is None:
            return None
        return encode_response(header.api_key, header.api_version, header.correlation_id, body)
