"""A broker that may be behind on metadata catches up before it answers "not the leader".

When partition leadership moves, the brokers apply the change a few milliseconds
apart. A client redirected by the old leader (KIP-951's CurrentLeader hint, or
metadata from a faster broker) can reach the new leader before the new leader
knows it leads; a follower can fetch at the new epoch from a leader still at the
old one; a producer can reach a freshly created topic's leader before it has the
topic. Kafka answers NOT_LEADER_OR_FOLLOWER / UNKNOWN_LEADER_EPOCH /
UNKNOWN_TOPIC_OR_PARTITION at once, and the client or follower backs off
(librdkafka's retry.backoff.ms, 100 ms; a follower's replica.fetch.backoff.ms,
1 s): most of a leadership move's cost.

Rule: a Produce or Fetch that would get one of ``STALE_ERRORS`` first waits until
this broker's image has reached the quorum's high watermark (one DescribeQuorum
round trip to the active controller, ``forward.catch_up``), at most
``CATCH_UP_TIMEOUT_S``, and is then evaluated again. Concurrent requests share
one catch-up; a broker whose image is current answers as before, a few
milliseconds later. Errors that say the *client* is behind (FENCED_LEADER_EPOCH)
never wait, and neither does a NOT_LEADER_OR_FOLLOWER from a broker that saw its own
leadership of the partition end at the current epoch (``Partition.moved_away``): that
is the old leader, which most requests reach right after a move, and its image
already names the new leader.
"""
from __future__ import annotations

import asyncio
import weakref

from tierlog.protocol.errors import ErrorCode

from .forward import catch_up

__all__ = ["CATCH_UP_TIMEOUT_S", "STALE_ERRORS", "catch_up_once", "may_be_stale"]

STALE_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH,
                          ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID})
CATCH_UP_TIMEOUT_S = 0.5

_in_flight: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # broker -> its running catch-up


async def catch_up_once(broker) -> None:
    """``forward.catch_up`` for this broker, shared by every request that asks meanwhile."""
    task = _in_flight.get(broker)
    if task is None or task.done():
        task = asyncio.ensure_future(catch_up(broker, CATCH_UP_TIMEOUT_S, CATCH_UP_TIMEOUT_S))
        _in_flight[broker] = task
    await asyncio.shield(task)


def may_be_stale(part, error: int) -> bool:
    """Whether ``error`` for ``part`` (None: not hosted here) may come from this broker's image being
    behind. Not when this broker saw its own leadership of the partition move away at the current
    epoch: the old leader, the one most requests reach right after a move, answers at once."""
    if error not in STALE_ERRORS:
        return False
    return not (error == ErrorCode.NOT_LEADER_OR_FOLLOWER and part is not None and part.moved_away)
