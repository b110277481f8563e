"""Fetches parked until there is news (Kafka's fetch purgatory, ``DelayedFetch``).

A Fetch that cannot answer yet (fewer than MinBytes ready) waits here for at most its
MaxWaitMs.  It is woken by what can change its answer:

- a fetch in a session (KIP-227) parks on the session (``SessionView.park``): the session
  cache wakes it when a partition it holds is marked changed (``changed``);
- a sessionless fetch parks on each partition it reads (``changed`` wakes them);
- a follower's fetch also parks on its replica id (``wake_replica``): a partition it follows
  moved here, which its parked fetch does not name (``replication.leader_moves``).

``changed`` is the one way news reaches fetches: it wakes the sessionless ones on the
partition and marks the partition in every session holding it (by topic id and by name).
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterable

from tierlog.net.tasks import expire_after

from .fetch_session import FetchSessionCache

__all__ = ["FetchPurgatory"]


class FetchPurgatory:
    def __init__(self, sessions: FetchSessionCache):
        self.sessions = sessions
        self._watchers: dict[object, set[asyncio.Future]] = {}     # sessionless fetches and followers

    def __len__(self) -> int:
        """Fetches parked without a session, counted once per key they watch."""
        return sum(len(s) for s in self._watchers.values())

    def changed(self, key: tuple[str, int], id_key: tuple[bytes, int], records: bool = True) -> None:
        """Partition ``key`` (``id_key``: its topic id and index) has news for fetchers: records, its
        high watermark or log start moved, or leadership was lost.  Without ``records`` (a watermark
        or log start move) followers' sessions are marked but not woken."""
        self.wake(key)
        self.sessions.mark_changed((id_key, key), records=records)

    def changed_all(self, keys: list[tuple[tuple[str, int], tuple[bytes, int]]], records: bool = True,
                    answered: int = 0) -> None:
        """``changed`` for several partitions (key, id key) at once: the sessions are marked in one
        pass, but for session ``answered`` (the fetch answered on it carries the news already)."""
        for key, _ in keys:
            self.wake(key)
        self.sessions.mark_changed([k for pair in keys for k in (pair[1], pair[0])], records=records,
                                   answered=answered)

    def mark_only(self, key: tuple[str, int], id_key: tuple[bytes, int]) -> None:
        """Mark ``key`` in the sessions holding it without waking them (read with their next fetch)."""
        self.sessions.mark_changed((id_key, key), wake=False)

    def wake(self, key: object) -> None:
        """Wake every sessionless fetch parked on ``key`` (a partition, or ``("replica", id)``)."""
        for fut in self._watchers.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def wake_replica(self, replica_id: int) -> None:
        """A partition that follower ``replica_id`` follows moved here: its parked fetch answers."""
        self.wake(("replica", replica_id))

    async def wait(self, keys: Iterable[tuple[str, int]], timeout_s: float, replica_id: int = -1,
                   view=None) -> None:
        """Return when a partition of the fetch session ``view`` (without one: any of ``keys``) has
        news, a partition ``replica_id`` follows moves here, or after ``timeout_s``."""
        fut = asyncio.get_running_loop().create_future()
        watched: list[object] = [] if view is not None and view.park(fut) else list(keys)
        if replica_id >= 0:
            watched.append(("replica", replica_id))
        for k in watched:
            self._watchers.setdefault(k, set()).add(fut)
        timer = expire_after(fut, timeout_s)
        try:
            await fut
        finally:
            timer.cancel()
            for k in watched:
                s = self._watchers.get(k)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._watchers[k]
