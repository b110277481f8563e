"""Election state persistence (Kafka's ``quorum-state`` file).

The node writes the new ElectionState through the store, which makes it durable
before returning; only then does the in-memory state change.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ElectionState", "FileQuorumStateStore", "MemoryQuorumStateStore", "QuorumStateStore"]

QUORUM_STATE_FILE = "quorum-state"


@dataclass(frozen=True)
class ElectionState:
    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None


class QuorumStateStore(ABC):
    @abstractmethod
    def read(self) -> ElectionState | None: ...

    @abstractmethod
    def write(self, state: ElectionState) -> None:
        """Durable on return."""


class MemoryQuorumStateStore(QuorumStateStore):
    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1


class FileQuorumStateStore(QuorumStateStore):
    """JSON in ``<dir>/quorum-state``, written to a temp file, fsynced, renamed.

    Layout (Kafka's field names): {"leaderId": int, "leaderEpoch": int,
    "votedId": int, "appliedOffset": 0, "currentVoters": [{"voterId": n}...],
    "data_version": 0}; -1 means none.
    """

    def __init__(self, directory: Path | str, voters: frozenset[int] = frozenset()):
        self.path = Path(directory) / QUORUM_STATE_FILE
        self._voters = sorted(voters)

    def read(self) -> ElectionState | None:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        leader = raw.get("leaderId", -1)
        voted = raw.get("votedId", -1)
        return ElectionState(int(raw["leaderEpoch"]), None if leader < 0 else leader, None if voted < 0 else voted)

    def write(self, state: ElectionState) -> None:
        doc = {
            "leaderId": -1 if state.leader_id is None else state.leader_id,
            "leaderEpoch": state.epoch,
            "votedId": -1 if state.voted_id is None else state.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": v} for v in self._voters],
            "data_version": 0,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(QUORUM_STATE_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
