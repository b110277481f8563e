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


@dataclass(slots=True)
class SessionView:
    session_id: int                  # 0 when no session exists
    incremental: bool
    partitions: list[SessionPartition]

    def should_return(self, sp: SessionPartition, has_records: bool, error: int,
                      hw: int, lso: int, log_start: int) -> bool:
        """A full fetch returns everything; an incremental one only what changed."""
        changed = (sp.sent_hw, sp.sent_lso, sp.sent_log_start) != (hw, lso, log_start)
        sp.sent_hw, sp.sent_lso, sp.sent_log_start = hw, lso, log_start
        return not self.incremental or has_records or error != ErrorCode.NONE or changed


class _Session:
    __slots__ = ("epoch", "id", "partitions")

    def __init__(self, session_id: int, partitions: list[SessionPartition]):
        self.id = session_id
        self.epoch = 1                     # the next epoch the client must send
        self.partitions: OrderedDict = OrderedDict(((p.topic_key, p.partition), p) for p in partitions)


class FetchSessionCache:
    def __init__(self, max_slots: int, rng: random.Random):
        self.max_slots = max_slots
        self._rng = rng
        self._sessions: OrderedDict[int, _Session] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, session_id: int, epoch: int, requested: list[SessionPartition],
             forgotten: list[tuple[object, int]]) -> SessionView:
        """Resolve a fetch request into the partitions to read; raises FetchSessionError."""
        if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
            self._sessions.pop(session_id, None)
            if epoch == FINAL_EPOCH or self.max_slots <= 0:
                return SessionView(0, False, requested)
            return SessionView(self._create(requested).id, False, requested)
        session = self._sessions.get(session_id)
        if session is None:
            raise FetchSessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            raise FetchSessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        self._sessions.move_to_end(session_id)
        session.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        self._update(session, requested, forgotten)
        return SessionView(session_id, True, list(session.partitions.values()))

    def _create(self, partitions: list[SessionPartition]) -> _Session:
        while len(self._sessions) >= self.max_slots:
            self._sessions.popitem(last=False)
        session_id = 0
        while session_id == 0 or session_id in self._sessions:
            session_id = self._rng.randint(1, 2**31 - 1)
        session = _Session(session_id, partitions)
        self._sessions[session_id] = session
        return session

    @staticmethod
    def _update(session: _Session, requested, forgotten) -> None:
        for key in forgotten:
            session.partitions.pop(key, None)
        for p in requested:
            old = session.partitions.get((p.topic_key, p.partition))
            if old is None:
                session.partitions[(p.topic_key, p.partition)] = p
            else:
                old.fetch_offset, old.max_bytes = p.fetch_offset, p.max_bytes
                old.current_leader_epoch, old.last_fetched_epoch = p.current_leader_epoch, p.last_fetched_epoch
