"""When connections of a listener are closed for lingering, sans-IO.

Two deadlines, each kept in an insertion-ordered map so that ``expired`` looks
only at the connections that are due (the oldest first), never at all of them:

- idle: a connection with no request in progress and no bytes received or
  response sent for ``connections.max.idle.ms`` (Kafka's, default 10 minutes);
- read: a request frame whose first byte arrived ``socket.request.read.timeout.ms``
  ago and is still incomplete (slow senders holding request memory; Kafka has
  no such bound and relies on the idle timeout, which a byte a minute defeats).
  The clock stops while the server itself does not read the connection (its
  request queue or the request memory is full): a client pipelining large
  requests to a busy broker is not a slow sender, and was closed as one.

The shell reports ``received`` (bytes in, ``frame_open`` whether a frame is
incomplete after them), ``request_started`` / ``request_done`` (a request being
handled is never idle), ``paused`` / ``resumed`` (reading stopped and started
again by the server) and ``forget``; it polls ``expired(now_ms)`` every
``poll_interval_ms``.
"""
from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["IDLE", "READ", "ConnectionDeadlines"]

IDLE = "connections.max.idle.ms"
READ = "socket.request.read.timeout.ms"
MIN_POLL_MS, MAX_POLL_MS = 10, 1000


C = TypeVar("C", bound=Hashable)      # a connection, as the shell knows it


class ConnectionDeadlines(Generic[C]):
    def __init__(self, idle_ms: int, read_ms: int):
        self.idle_ms = idle_ms
        self.read_ms = read_ms
        self._idle_since: dict[C, int] = {}     # not busy: conn -> last activity, oldest first
        self._frame_since: dict[C, int] = {}    # conn -> first byte of its incomplete frame
        self._busy: set[C] = set()
        self._paused: set[C] = set()             # not read by the server for now
        self._paused_in_frame: set[C] = set()    # ... with a frame incomplete

    @property
    def poll_interval_ms(self) -> int:
        return max(MIN_POLL_MS, min(MAX_POLL_MS, self.idle_ms // 4, self.read_ms // 4))

    def opened(self, conn: C, now_ms: int) -> None:
        self._idle_since[conn] = now_ms

    def received(self, conn: C, now_ms: int, frame_open: bool) -> None:
        if conn not in self._busy:
            self._touch(conn, now_ms)
        if not frame_open:
            self._frame_since.pop(conn, None)
            self._paused_in_frame.discard(conn)
        elif conn in self._paused:          # bytes read just before the pause took effect
            self._paused_in_frame.add(conn)
        elif conn not in self._frame_since:
            self._frame_since[conn] = now_ms

    def request_started(self, conn: C) -> None:
        self._busy.add(conn)
        self._idle_since.pop(conn, None)

    def request_done(self, conn: C, now_ms: int) -> None:
        self._busy.discard(conn)
        self._touch(conn, now_ms)

    def paused(self, conn: C) -> None:
        """The server stopped reading ``conn``: its incomplete frame's clock stops."""
        self._paused.add(conn)
        if self._frame_since.pop(conn, None) is not None:
            self._paused_in_frame.add(conn)

    def resumed(self, conn: C, now_ms: int) -> None:
        """Reading again: an incomplete frame gets the whole ``read_ms`` from now."""
        self._paused.discard(conn)
        if conn in self._paused_in_frame:
            self._paused_in_frame.discard(conn)
            self._frame_since[conn] = now_ms

    def forget(self, conn: C) -> None:
        self._idle_since.pop(conn, None)
        self._frame_since.pop(conn, None)
        self._busy.discard(conn)
        self._paused.discard(conn)
        self._paused_in_frame.discard(conn)

    def expired(self, now_ms: int) -> list[tuple[C, str]]:
        """Connections past a deadline, each with the config that closes it; forgotten here."""
        slow = _due(self._frame_since, now_ms - self.read_ms)
        out = [(c, READ) for c in slow]
        closing = set(slow)
        out += [(c, IDLE) for c in _due(self._idle_since, now_ms - self.idle_ms) if c not in closing]
        for conn, _ in out:
            self.forget(conn)
        return out

    def _touch(self, conn: C, now_ms: int) -> None:
        self._idle_since.pop(conn, None)
        self._idle_since[conn] = now_ms


def _due(since: dict[C, int], cutoff_ms: int) -> list[C]:
    due = []
    for conn, at in since.items():       # oldest first
        if at > cutoff_ms:
            break
        due.append(conn)
    return due
