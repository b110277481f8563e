"""Broker heartbeat sessions on the active controller (in memory only).

The facts Kafka's BrokerHeartbeatManager keeps, in our own shape: for every
registered broker, when the active controller last heard from it and the
metadata offset it last reported.  Nothing here is in the metadata log: a newly
active controller starts every session afresh (``start_all``), so a broker is
never fenced for silence that happened under the previous controller.

A session expires ``broker.session.timeout.ms`` after the last contact; the
controller then writes a FenceBrokerRecord (``ClusterControlManager``).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["BrokerSession", "HeartbeatTracker"]


@dataclass(slots=True)
class BrokerSession:
    last_contact_ms: int
    metadata_offset: int = -1          # last CurrentMetadataOffset the broker reported


class HeartbeatTracker:
    def __init__(self, session_timeout_ms: int):
        assert session_timeout_ms > 0
        self.session_timeout_ms = session_timeout_ms
        self._sessions: dict[int, BrokerSession] = {}

    def touch(self, broker_id: int, now_ms: int, metadata_offset: int | None = None) -> None:
        s = self._sessions.get(broker_id)
        if s is None:
            s = self._sessions[broker_id] = BrokerSession(now_ms)
        s.last_contact_ms = max(s.last_contact_ms, now_ms)
        if metadata_offset is not None:
            s.metadata_offset = max(s.metadata_offset, metadata_offset)

    def reset(self, broker_id: int, now_ms: int) -> None:
        """A new registration: a fresh session, no offset known yet."""
        self._sessions[broker_id] = BrokerSession(now_ms)

    def remove(self, broker_id: int) -> None:
        self._sessions.pop(broker_id, None)

    def clear(self) -> None:
        self._sessions.clear()

    def has_session(self, broker_id: int) -> bool:
        return broker_id in self._sessions

    def is_alive(self, broker_id: int, now_ms: int) -> bool:
        s = self._sessions.get(broker_id)
        return s is not None and now_ms < s.last_contact_ms + self.session_timeout_ms

    def metadata_offset(self, broker_id: int) -> int:
        s = self._sessions.get(broker_id)
        return -1 if s is None else s.metadata_offset

    def expired(self, broker_ids: Iterable[int], now_ms: int) -> list[int]:
        """Those of ``broker_ids`` whose session has run out (sorted)."""
        return sorted(b for b in broker_ids
                      if b in self._sessions and not self.is_alive(b, now_ms))

    def next_expiry_ms(self, broker_ids: Iterable[int]) -> int | None:
        """When the first of ``broker_ids`` expires if no one heartbeats, or None."""
        times = [self._sessions[b].last_contact_ms + self.session_timeout_ms
                 for b in broker_ids if b in self._sessions]
        return min(times) if times else None
