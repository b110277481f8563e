"""KIP-405's and KIP-1023's follower paths (Kafka's ReplicaFetcherTierStateMachine), the IO.

A follower whose fetch offset the leader has only in remote storage
(OFFSET_MOVED_TO_TIERED_STORAGE) does not copy that data. It asks the leader
(ListOffsets as a replica) for its local log start L (-4) and log start (-2),
finds the finished remote segment holding L - 1 in its own copy of the remote
log metadata (``tiered.rebuild_rules``), reads that segment's leader-epoch checkpoint and producer
snapshot from remote storage (on a thread), and restarts its log empty at L
with log start = the leader's, those epochs and that producer state
(``Log.rebuild_from_remote``); it then fetches from L.

Kafka finds the epoch of L - 1 with an OffsetForLeaderEpoch request to the
leader and looks the segment up by (epoch, offset); tierlog's remote segments of
a partition never overlap (``copy_task``), so the segment holding L - 1 is found
by offset alone. Any step that cannot be done yet (metadata not caught up, the
segment not known yet, remote storage unreachable) answers a retriable error:
the fetcher backs off and the next fetch starts over.

KIP-1023 (``replication.tiered_start``; the leader's offsets come from
``tiered_start_probe``): when the rule says "rebuild at T",
``build_remote_log_aux_state`` is given T and the leader's log
start S and does the same with T instead of L: the epochs and producer state
come from the remote segment holding T - 1 (KIP-1023 "Follower builds the
remote log auxiliary states for the leader offsets in the range
[Log-Start-Offset, Earliest-Pending-Upload-Offset)"), log start = S, local log
start = log end = T.
"""

from __future__ import annotations

import asyncio
import logging

from tierlog.net.client import PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.tiered import (
    IndexType,
    RemoteResourceNotFoundError,
    RemoteStorageError,
    TopicIdPartition,
)
from tierlog.tiered.rebuild_rules import plan_rebuild, rebuilt_log_start
from tierlog.tiered.upload_epochs import (
    EpochCheckpointError,
    parse_leader_epoch_checkpoint,
)

__all__ = ["build_remote_log_aux_state"]

log = logging.getLogger(__name__)
LIST_OFFSETS_VERSION = 9
TIMEOUT_S = 10.0
EARLIEST, EARLIEST_LOCAL = -2, -4


async def build_remote_log_aux_state(remote, conn, node_id: int, part, leader_epoch: int,
                                     start_offset: int = -1, log_start_offset: int = -1) -> int:
    """Rebuild ``part``'s log from remote storage; the error code (NONE when done).

    ``start_offset`` -1 (KIP-405): start at the leader's local log start, asked now; else
    (KIP-1023) start at ``start_offset`` with log start ``log_start_offset``."""
    if remote is None:
        return ErrorCode.KAFKA_STORAGE_ERROR           # tiering is off here: nothing to rebuild from
    tip = TopicIdPartition(part.topic_id, part.topic, part.index)
    remote.metadata.assign(tip)
    if not remote.metadata.is_ready(tip):
        return ErrorCode.REPLICA_NOT_AVAILABLE
    if start_offset >= 0:
        error: int
        error, local_start, log_start = ErrorCode.NONE, start_offset, log_start_offset
    else:
        error, local_start = await _leader_offset(conn, node_id, part, leader_epoch, EARLIEST_LOCAL)
        if not error:
            error, log_start = await _leader_offset(conn, node_id, part, leader_epoch, EARLIEST)
    if error:
        return error
    plan = plan_rebuild(remote.metadata.cache(tip).finished_segments(), log_start, local_start)
    if plan is None:
        log.info("%s-%d: no remote segment holds offset %d yet", part.topic, part.index, local_start - 1)
        return ErrorCode.REPLICA_NOT_AVAILABLE
    segment = plan.segment
    try:
        epochs, snapshot = await asyncio.get_running_loop().run_in_executor(
            remote.follower_pool, _read_aux_state, remote.segments, segment)
    except (RemoteStorageError, EpochCheckpointError) as e:
        log.warning("%s-%d: cannot read the remote state of segment [%d, %d]: %s", part.topic, part.index,
                    segment.start_offset, segment.end_offset, e)
        return ErrorCode.KAFKA_STORAGE_ERROR
    log_start = rebuilt_log_start(plan, epochs)
    part.rebuild_from_remote(log_start, plan.local_log_start_offset, epochs, snapshot)
    log.info("%s-%d: rebuilt from remote segment [%d, %d]: log start %d, fetching from %d", part.topic,
             part.index, segment.start_offset, segment.end_offset, log_start, local_start)
    return ErrorCode.NONE


def _read_aux_state(segments, segment) -> tuple[list[tuple[int, int]], bytes | None]:
    epochs = parse_leader_epoch_checkpoint(segments.fetch_index(segment, IndexType.LEADER_EPOCH))
    try:
        snapshot = segments.fetch_index(segment, IndexType.PRODUCER_SNAPSHOT)
    except RemoteResourceNotFoundError:
        snapshot = None                 # uploaded without one: no producer state, as in Kafka
    return epochs, snapshot


async def _leader_offset(conn, node_id: int, part, leader_epoch: int, target: int) -> tuple[int, int]:
    body = {"ReplicaId": node_id, "IsolationLevel": 0, "Topics": [{"Name": part.topic, "Partitions": [
        {"PartitionIndex": part.index, "CurrentLeaderEpoch": leader_epoch, "Timestamp": target}]}]}
    try:
        answer = await conn.request(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body, TIMEOUT_S)
    except (TimeoutError, PeerUnavailable, OSError):
        return ErrorCode.REQUEST_TIMED_OUT, -1
    found = [p for t in answer.get("Topics", ()) for p in t["Partitions"] if p["PartitionIndex"] == part.index]
    if not found:
        return ErrorCode.UNKNOWN_SERVER_ERROR, -1
    return found[0]["ErrorCode"], found[0]["Offset"]
