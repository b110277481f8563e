"""Connection creation rates (KIP-612), sans-IO.

Two limits on how fast new connections may come, measured over Kafka's quota windows
(``quota.window.num`` x ``quota.window.size.seconds``, ``net.sampled_rate``):

- ``max.connection.creation.rate`` of the broker (every broker listener but the
  inter-broker one together) and of each listener
  (``listener.name.<l>.max.connection.creation.rate``): a connection over either is held,
  reading nothing, until the rate is back within it (Kafka's acceptor waits before it
  accepts more);
- ``connection_creation_rate`` of the connecting IP (client quotas, entity type ``ip``: the
  IP's own, else the default IP's; read from the metadata image through ``ip_quota``): a
  connection over it is closed once its throttle time has passed, reading nothing
  meanwhile (so a client does not reconnect at once). At most ``IP_SENSORS_MAX`` IPs are
  measured at a time (more: the measurements start over).

``accept(listener, ip, now_ms)`` counts a new connection and says (ms to hold it, ms after
which to close it; 0 and 0: serve it now).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from .sampled_rate import SampledRate, throttle_ms

__all__ = ["IP_SENSORS_MAX", "ConnectionRates"]

IP_SENSORS_MAX = 10_000


class ConnectionRates:
    def __init__(self, samples: int, window_ms: int, broker_rate: float | None, listener_rates: Mapping[str, float],
                 exempt_listener: str | None, ip_quota: Callable[[str], float | None], now_ms: int):
        self.samples, self.window_ms = samples, window_ms
        self._broker = (broker_rate, SampledRate(samples, window_ms, now_ms)) if broker_rate else None
        self._listeners = {name: (rate, SampledRate(samples, window_ms, now_ms)) for name, rate in listener_rates.items()}
        self._exempt = exempt_listener
        self._ip_quota = ip_quota
        self._ips: dict[str, SampledRate] = {}

    def accept(self, listener: str, ip: str, now_ms: int) -> tuple[int, int]:
        hold = 0
        limits = [self._listeners.get(listener)]
        if listener != self._exempt:
            limits.append(self._broker)
        for limit in limits:
            if limit is not None:
                quota, rate = limit
                rate.record(1, now_ms)
                hold = max(hold, throttle_ms(rate, quota, now_ms))
        return hold, self._ip_close_ms(ip, now_ms)

    def _ip_close_ms(self, ip: str, now_ms: int) -> int:
        quota = self._ip_quota(ip)
        if quota is None:
            self._ips.pop(ip, None)
            return 0
        rate = self._ips.get(ip)
        if rate is None:
            if len(self._ips) >= IP_SENSORS_MAX:
                self._ips.clear()
            rate = self._ips[ip] = SampledRate(self.samples, self.window_ms, now_ms)
        rate.record(1, now_ms)
        return throttle_ms(rate, quota, now_ms)
