"""Fetch sessions (KIP-227), sans-IO: which partitions a fetch reads and which it returns.

A client opens a session with SessionId=0, SessionEpoch=0 and the full
partition list; later fetches (epoch 1, 2, ...) name only partitions whose
fetch position changed plus ``ForgottenTopicsData``, and the response carries
only partitions with news (records, an error, a moved high watermark, last
stable offset or log start offset).  SessionEpoch=-1 is a sessionless full
fetch (and closes the named session).  Sessions are bounded by
``max.incremental.fetch.session.cache.slots``; when full, the least recently
used session is evicted, as a client recovers from FETCH_SESSION_ID_NOT_FOUND
with a new full fetch.

Cost in proportion to what changed (DESIGN principle 13): an incremental fetch
reads only the partitions it names and the ones marked changed since its
session's last fetch.  The replica manager calls ``mark_changed`` when a
partition gets an append, its high watermark or log start moves, or this
broker stops leading it; the cache finds the sessions holding the partition
through an index (partition -> sessions) and adds it to their ``dirty`` set,
waking a fetch parked on the session (``SessionView.park``). A follower's session
is woken by new records (or a leadership change) only: a move of the high
watermark, last stable offset or log start alone marks it, and the follower
learns it with its next answer, as Kafka's DelayedFetch completes a follower's
fetch on new bytes and never on a high-watermark move. Waking it there would
double the replication round trips: each append's fetch by a follower moves the
high watermark, which would answer the fetch it parks next at once.  A partition read
but not answered with records it has (the response's byte budget ran out, a
remote read came back late) is marked again (``SessionView.keep``), so it is
read by the next fetch without being named.
"""
from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass

from tierlog.protocol.errors import ErrorCode

__all__ = ["FetchSessionCache", "FetchSessionError", "SessionPartition", "SessionView"]

FINAL_EPOCH = -1
INITIAL_EPOCH = 0


class FetchSessionError(Exception):
    def __init__(self, error_code: int):
        super().__init__(error_code)
        self.error_code = error_code


@dataclass(slots=True)
class SessionPartition:
    """What the client wants of one partition, plus what it was last told."""
    topic_key: object                # topic name (v<13) or topic id bytes (v13+)
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    sent_hw: int = -1
    sent_lso: int = -1
    sent_log_start: int = -1
    # a follower's state as its request last named it (LogStartOffset; KIP-1303's local log): -1 unknown
    log_start_offset: int = -1
    local_log_start_timestamp: int = -1
    local_log_size_bytes: int = -1


class SessionView:
    """One fetch's view of its session: the partitions to read now and what the client was told."""

    def __init__(self, session_id: int, incremental: bool, partitions: list[SessionPartition],
                 named: frozenset = frozenset(), session: _Session | None = None):
        self.session_id = session_id            # 0 when no session exists
        self.incremental = incremental
        self.partitions = partitions            # to read now
        self.named = named                      # (topic key, partition) named by the request
        self._session = session

    def should_return(self, sp: SessionPartition, has_records: bool, error: int,
                      hw: int, lso: int, log_start: int) -> bool:
        """A full fetch returns everything; an incremental one only what changed."""
        changed = (sp.sent_hw, sp.sent_lso, sp.sent_log_start) != (hw, lso, log_start)
        sp.sent_hw, sp.sent_lso, sp.sent_log_start = hw, lso, log_start
        return not self.incremental or has_records or error != ErrorCode.NONE or changed

    def tracks_changes(self) -> bool:
        """Whether partitions that change while the fetch is parked are marked (a session holds them)."""
        return self._session is not None

    def keep(self, sp: SessionPartition) -> None:
        """``sp`` has records the response did not carry: the next fetch of the session reads it."""
        if self._session is not None:
            self._session.dirty.add((sp.topic_key, sp.partition))

    def contains(self, key: tuple[object, int]) -> bool:
        """Whether the session (or, without one, this fetch) holds partition ``key``."""
        if self._session is not None:
            return key in self._session.partitions
        return any((sp.topic_key, sp.partition) == key for sp in self.partitions)

    def park(self, waiter) -> bool:
        """Wake ``waiter`` (``.done()``, ``.set_result(None)``) when a partition of the session changes;
        False when there is no session to watch (the caller watches the partitions itself)."""
        if self._session is None:
            return False
        self._session.waiter = waiter
        if self._session.dirty:
            waiter.set_result(None)
        return True

    def take_changed(self) -> list[SessionPartition]:
        """The session's partitions marked changed since this fetch began reading (clears the marks)."""
        if self._session is None:
            return []
        return self._session.take_dirty()


class _Session:
    __slots__ = ("dirty", "epoch", "id", "partitions", "replica", "waiter")

    def __init__(self, session_id: int, partitions: list[SessionPartition], replica: bool = False):
        self.id = session_id
        self.replica = replica             # a follower's session (the fetch named a replica id)
        self.epoch = 1                     # the next epoch the client must send
        self.partitions: OrderedDict = OrderedDict(((p.topic_key, p.partition), p) for p in partitions)
        self.dirty: set[tuple[object, int]] = set()
        self.waiter = None

    def take_dirty(self) -> list[SessionPartition]:
        out = [self.partitions[k] for k in self.dirty if k in self.partitions]
        self.dirty = set()
        return out

    def wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class FetchSessionCache:
    def __init__(self, max_slots: int, rng: random.Random):
        self.max_slots = max_slots
        self._rng = rng
        self._sessions: OrderedDict[int, _Session] = OrderedDict()
        self._holders: dict[tuple[object, int], set[int]] = {}     # partition -> ids of sessions holding it

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, session_id: int, epoch: int, requested: list[SessionPartition],
             forgotten: list[tuple[object, int]], replica: bool = False) -> SessionView:
        """Resolve a fetch request into the partitions to read; raises FetchSessionError.
        ``replica``: the fetch is a follower's (a new session is one)."""
        named = frozenset((p.topic_key, p.partition) for p in requested)
        if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
            self._remove(session_id)
            if epoch == FINAL_EPOCH or self.max_slots <= 0:
                return SessionView(0, False, requested, named)
            created = self._create(requested, replica)
            return SessionView(created.id, False, list(created.partitions.values()), named, created)
        session = self._sessions.get(session_id)
        if session is None:
            raise FetchSessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            raise FetchSessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        self._sessions.move_to_end(session_id)
        session.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        self._update(session, requested, forgotten)
        session.dirty.update(named)
        return SessionView(session_id, True, session.take_dirty(), named, session)

    def mark_changed(self, keys, wake: bool = True, records: bool = True, answered: int = 0) -> None:
        """Partitions (topic key, partition) with news: every session holding one reads it next
        (at once when ``wake``, else with the session's next fetch). Without ``records`` (only a
        watermark or the log start moved) followers' sessions are not woken. Session ``answered``
        is left out: the fetch being answered on it carries the news already."""
        for key in keys:
            for sid in self._holders.get(key, ()):
                if sid == answered:
                    continue
                session = self._sessions[sid]
                session.dirty.add(key)
                if wake and (records or not session.replica):
                    session.wake()

    def _create(self, partitions: list[SessionPartition], replica: bool) -> _Session:
        while len(self._sessions) >= self.max_slots:
            self._remove(next(iter(self._sessions)))
        session_id = 0
        while session_id == 0 or session_id in self._sessions:
            session_id = self._rng.randint(1, 2**31 - 1)
        session = _Session(session_id, partitions, replica)
        self._sessions[session_id] = session
        for key in session.partitions:
            self._holders.setdefault(key, set()).add(session_id)
        return session

    def _remove(self, session_id: int) -> None:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        for key in session.partitions:
            self._unhold(key, session_id)
        session.wake()

    def _unhold(self, key, session_id: int) -> None:
        holders = self._holders.get(key)
        if holders is not None:
            holders.discard(session_id)
            if not holders:
                del self._holders[key]

    def _update(self, session: _Session, requested, forgotten) -> None:
        for key in forgotten:
            if session.partitions.pop(key, None) is not None:
                self._unhold(key, session.id)
            session.dirty.discard(key)
        for p in requested:
            key = (p.topic_key, p.partition)
            old = session.partitions.get(key)
            if old is None:
                session.partitions[key] = p
                self._holders.setdefault(key, set()).add(session.id)
            else:
                old.fetch_offset, old.max_bytes = p.fetch_offset, p.max_bytes
                old.current_leader_epoch, old.last_fetched_epoch = p.current_leader_epoch, p.last_fetched_epoch
                old.log_start_offset = p.log_start_offset
                old.local_log_start_timestamp = p.local_log_start_timestamp
                old.local_log_size_bytes = p.local_log_size_bytes
