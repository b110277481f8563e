"""The follower's half of a KIP-227 fetch session with one leader (Kafka's FetchSessionHandler), sans IO.

The leader keeps, per session, what each partition's fetch position is; a
follower then sends only the partitions whose fetch fields changed and the
ones it stops fetching (``ForgottenTopicsData``), and the leader answers only
partitions with news.  That makes a replication round cost in proportion to
the partitions that changed, not to every partition the two brokers share
(DESIGN principle 13).

State: ``session_id`` (0: none) and ``epoch`` of the next request (KIP-227
"Fetch Session Epoch": 0 asks for a new session with a full partition list,
1, 2, ... are incremental, wrapping from 2^31-1 to 1), and ``members``: the
fetch fields the leader holds for each partition, i.e. what was last sent.

Transitions (``on_response`` / ``on_error``):

- a response with a non-zero SessionId to a full request: the session exists,
  the next request is incremental at epoch 1;
- a response with SessionId 0: the leader keeps no session (cache full, or
  sessions off); the next request is full again;
- a response to an incremental request: the next epoch;
- FETCH_SESSION_ID_NOT_FOUND: the leader forgot the session: a new one (id 0);
- INVALID_FETCH_SESSION_EPOCH, any other error, a lost request: a full request
  that closes the current session (its id, epoch 0), since what the leader
  holds is no longer known.

A full request starts ``members`` afresh.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from tierlog.protocol.errors import ErrorCode

from .fetch_actions import PartitionKey

__all__ = ["FetchFields", "FollowerSession"]

INITIAL_EPOCH = 0
MAX_EPOCH = 2**31 - 1


class FetchFields(NamedTuple):
    """One partition's entry of a Fetch v19 request (compared to decide whether to send it again)."""
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int
    local_log_start_timestamp: int          # KIP-1303
    local_log_size_bytes: int               # KIP-1303

    def request_entry(self, partition: int) -> dict[str, Any]:
        return {"Partition": partition, "CurrentLeaderEpoch": self.current_leader_epoch,
                "FetchOffset": self.fetch_offset, "LastFetchedEpoch": self.last_fetched_epoch,
                "LogStartOffset": self.log_start_offset, "PartitionMaxBytes": self.partition_max_bytes,
                "LocalLogStartTimestamp": self.local_log_start_timestamp,
                "LocalLogSizeBytes": self.local_log_size_bytes}


class FollowerSession:
    def __init__(self) -> None:
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self.members: dict[PartitionKey, FetchFields] = {}
        self._sent_epoch = INITIAL_EPOCH

    @property
    def full(self) -> bool:
        """The next request lists every partition (and starts ``members`` afresh)."""
        return self.epoch == INITIAL_EPOCH

    def begin_request(self) -> tuple[int, int]:
        """(SessionId, SessionEpoch) of the request being built; a full one clears ``members``."""
        if self.full:
            self.members = {}
        self._sent_epoch = self.epoch
        return self.session_id, self.epoch

    def on_response(self, session_id: int) -> None:
        """A response without a top-level error to the request last begun."""
        if self._sent_epoch == INITIAL_EPOCH:
            self.session_id = session_id
            self.epoch = INITIAL_EPOCH if session_id == 0 else 1
        else:
            self.epoch = self._sent_epoch + 1 if self._sent_epoch < MAX_EPOCH else 1

    def on_error(self, error: int) -> None:
        """A top-level error or a lost request: the next request is full."""
        if error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
            self.session_id = 0
        self.epoch = INITIAL_EPOCH

    def reset(self) -> None:
        """Nothing left to fetch: the next request (when there is one) starts a session again."""
        self.epoch = INITIAL_EPOCH
        self.members = {}
