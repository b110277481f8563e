"""The log primitives of the coordinator runtime (``coordinator_runtime``) on a partition of
an internal topic it leads (``__consumer_offsets``, ``__transaction_state``): load it from the
log after becoming its leader, and append records to it with acks=all through
``ReplicaManager.append_records`` (origin coordinator), answering the coordinator errors Kafka's
coordinators answer (NOT_COORDINATOR once leadership moved, COORDINATOR_NOT_AVAILABLE for any
other failure)."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import NamedTuple

from tierlog.protocol.errors import ErrorCode
from tierlog.records import Record, build_batch, decode_batches

from .partition import AppendOrigin, FetchIsolation, Partition

__all__ = ["LOAD_READ_BYTES", "Appended", "append", "committed", "coordinator_moving", "load_log"]

log = logging.getLogger(__name__)

LOAD_READ_BYTES = 1024 * 1024
ACKS_ALL = -1


class Appended(NamedTuple):
    error: ErrorCode
    end_offset: int | None = None                   # exclusive; None: not in the log
    waiter: asyncio.Future | None = None            # the acks=all wait (None: nothing to wait for)


def coordinator_moving(image_leader: int, node_id: int) -> ErrorCode:
    """The answer for a key whose partition this coordinator does not serve: when the newest
    metadata image already makes this broker its leader (FindCoordinator answers from that
    image) the election has not reached the coordinator yet (the image is applied in slices)
    and it is COORDINATOR_LOAD_IN_PROGRESS, which clients retry here; otherwise NOT_COORDINATOR,
    which sends them to FindCoordinator again (librdkafka's committed() gives up on it)."""
    return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if image_leader == node_id else ErrorCode.NOT_COORDINATOR


async def load_log(part: Partition, leading: Callable[[], bool], replay: Callable[[object, list], None]) -> bool:
    """Read the partition's log from its start to the end it has now, handing each batch's
    (header, records) to ``replay``; True when it got to the end while still leading."""
    offset = max(part.log_start_offset, part.local_log_start_offset)
    end = part.log_end_offset
    while offset < end and leading():
        read = part.read(offset, LOAD_READ_BYTES, FetchIsolation.LOG_END)
        if read.error:      # the log moved under the load: it stays unloaded (LOAD_IN_PROGRESS)
            log.warning("%s-%d: cannot load from offset %d: error %d", part.topic, part.index, offset, read.error)
            return False
        data = b"".join(region.read() for region in read.parts)
        if not data:
            break
        for header, records in decode_batches(data):
            offset = header.next_offset
            replay(header, records)
        await asyncio.sleep(0)
    return leading()


def append(replicas, part: Partition, records: list[tuple[bytes, bytes | None]], timeout_ms: int, now_ms: int,
           leading: Callable[[], bool], producer: tuple[int, int] | None = None) -> Appended:
    """Append ``records`` (key, value) as one batch, acks=all, now: (error, the end offset of the
    records in the log, a future of the error once the high watermark passes them); error set:
    refused, not in the log.  ``producer`` (id, epoch): a transactional batch of that producer,
    without sequence (Kafka's TxnOffsetCommit records)."""
    if not leading():
        return Appended(ErrorCode.NOT_COORDINATOR)
    pid, epoch = producer or (-1, -1)
    batch = bytearray(build_batch([Record(i, now_ms, k, v) for i, (k, v) in enumerate(records)],
                                  producer_id=pid, producer_epoch=epoch, transactional=producer is not None))
    outcome, fut = replicas.append_records(part, batch, AppendOrigin.COORDINATOR, ACKS_ALL, timeout_ms)
    if outcome.error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        return Appended(ErrorCode.NOT_COORDINATOR)
    if outcome.error:       # ISR below min.insync.replicas, the disk, ...: not in the log
        return Appended(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return Appended(ErrorCode.NONE, outcome.end_offset, fut)


async def committed(appended: Appended, leading: Callable[[], bool]) -> ErrorCode:
    """Wait for an append's records to be committed (acks=all): NONE, NOT_COORDINATOR once
    leadership moved, COORDINATOR_NOT_AVAILABLE for any other failure (the wait timed out)."""
    code = await appended.waiter if appended.waiter is not None else ErrorCode.NONE
    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER or not leading():
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if code else ErrorCode.NONE
