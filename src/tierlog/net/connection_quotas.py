"""Connection counts of a node (Kafka's ``max.connections``, ``max.connections.per.ip``
and ``max.connections.per.ip.overrides``), sans-IO.

``admit(ip)`` counts a new connection or names the config that refuses it; the
listener then closes it at once (Kafka closes a connection over the per-IP
limit as soon as it is accepted).  ``release(ip)`` when a counted connection
closes.  The overrides map an IP address to its own limit (0 refuses it).
"""
from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ConnectionQuotas"]


class ConnectionQuotas:
    def __init__(self, max_connections: int, max_per_ip: int, per_ip_overrides: Mapping[str, int] | None = None):
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.per_ip_overrides = dict(per_ip_overrides or {})
        self.total = 0
        self._per_ip: dict[str, int] = {}

    def admit(self, ip: str) -> str | None:
        """Count a connection from ``ip``; None, or the name of the config that refuses it."""
        if self.total >= self.max_connections:
            return "max.connections"
        limit = self.per_ip_overrides.get(ip, self.max_per_ip)
        if self._per_ip.get(ip, 0) >= limit:
            return "max.connections.per.ip.overrides" if ip in self.per_ip_overrides else "max.connections.per.ip"
        self.total += 1
        self._per_ip[ip] = self._per_ip.get(ip, 0) + 1
        return None

    def release(self, ip: str) -> None:
        count = self._per_ip[ip] - 1
        if count:
            self._per_ip[ip] = count
        else:
            del self._per_ip[ip]
        self.total -= 1

    def count(self, ip: str) -> int:
        return self._per_ip.get(ip, 0)
