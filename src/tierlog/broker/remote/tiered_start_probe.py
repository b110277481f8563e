"""KIP-1023's probe, the IO: the leader's offsets for empty replicas of tiered topics.

``probe_tiered_starts`` asks the leader, as replica ``node_id`` with ListOffsets
v11 (-6 needs v11), for every probed partition at once: first its log end
(-1, LATEST asked as a replica), then, only for partitions whose leader log is
not empty, its log start (-2), local log start (-4) and earliest pending upload
offset (-6) -- KIP-1023 "Fetch the leader's log-start-offset ... Fetch the
leader's Earliest-Pending-Upload-Offset ... another call to the leader to fetch
the EarliestLocal offset".  So a new topic's followers (the leader's log is
empty too) cost one request for all their partitions and never wait on -6,
which a leader answers REPLICA_NOT_AVAILABLE until its remote log metadata is
caught up.  One request per target carries every partition; each partition's
answer is (error code, ``LeaderOffsets`` or None); a partition's first error
stops its probe (the fetcher backs off and asks again).
"""
from __future__ import annotations

from typing import Protocol

from tierlog.net.client import PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import LeaderOffsets

__all__ = ["probe_tiered_starts"]


class _Probed(Protocol):
    """What a probe names a partition by (a ``replica_manager.Partition``)."""
    @property
    def topic(self) -> str: ...
    @property
    def index(self) -> int: ...

LIST_OFFSETS_VERSION = 11
TIMEOUT_S = 10.0
LATEST, EARLIEST, EARLIEST_LOCAL, EARLIEST_PENDING_UPLOAD = -1, -2, -4, -6
FOLLOW_UP_TARGETS = (EARLIEST, EARLIEST_LOCAL, EARLIEST_PENDING_UPLOAD)


async def probe_tiered_starts(conn, node_id: int, probes: list[tuple[_Probed, int]]
                              ) -> list[tuple[int, LeaderOffsets | None]]:
    """For each (partition, leader epoch) in ``probes``: (error code, the leader's offsets)."""
    errors: list[int] = [ErrorCode.NONE] * len(probes)
    answers: list[dict[int, int]] = [{} for _ in probes]
    for target in (LATEST, *FOLLOW_UP_TARGETS):
        asked = [i for i in range(len(probes)) if not errors[i] and (target == LATEST or answers[i][LATEST] != 0)]
        if not asked:
            break
        for i, (error, offset) in zip(asked, await _ask(conn, node_id, [probes[i] for i in asked], target),
                                      strict=True):
            errors[i] = error
            answers[i][target] = offset
    out: list[tuple[int, LeaderOffsets | None]] = []
    for error, a in zip(errors, answers, strict=True):
        if error:
            out.append((error, None))
        elif a[LATEST] == 0:                            # the leader's log is empty: nothing to skip
            out.append((ErrorCode.NONE, LeaderOffsets(0, 0, 0, 0)))
        else:
            out.append((ErrorCode.NONE, LeaderOffsets(a[LATEST], a[EARLIEST], a[EARLIEST_LOCAL],
                                                      a[EARLIEST_PENDING_UPLOAD])))
    return out


async def _ask(conn, node_id: int, probes: list[tuple[_Probed, int]], target: int) -> list[tuple[int, int]]:
    """One ListOffsets for ``target`` over every partition of ``probes``: (error, offset) each."""
    topics: dict[str, list[dict]] = {}
    for part, leader_epoch in probes:
        topics.setdefault(part.topic, []).append(
            {"PartitionIndex": part.index, "CurrentLeaderEpoch": leader_epoch, "Timestamp": target})
    body = {"ReplicaId": node_id, "IsolationLevel": 0,
            "Topics": [{"Name": name, "Partitions": parts} for name, parts in topics.items()]}
    try:
        answer = await conn.request(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body, TIMEOUT_S)
    except (TimeoutError, PeerUnavailable, OSError):
        return [(ErrorCode.REQUEST_TIMED_OUT, -1)] * len(probes)
    found = {(t["Name"], p["PartitionIndex"]): (p["ErrorCode"], p["Offset"])
             for t in answer.get("Topics", ()) for p in t.get("Partitions", ())}
    return [found.get((part.topic, part.index), (ErrorCode.UNKNOWN_SERVER_ERROR, -1)) for part, _ in probes]
