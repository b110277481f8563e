"""The share-group offset admin APIs' common steps (KIP-932: DescribeShareGroupOffsets,
AlterShareGroupOffsets, DeleteShareGroupOffsets, and DeleteGroups of a share group).

On the group's coordinator: the shard says whether the id is a share group, whether it has
members and which share-partitions may have state (``GroupShard.share_state_topics``); the
share-partitions' state is read, initialized or deleted through the share persister (the share
coordinator in process or over InitializeShareGroupState / ReadShareGroupStateSummary /
DeleteShareGroupState), one call per share-partition, all at once; the shard then records what
changed.  Kafka's rule for changing offsets: only while the group has no members.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from tierlog.group.share_state_records import SharePartitionKey
from tierlog.metadata import TopicInfo
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

__all__ = ["NO_TOPIC_ID", "UNINITIALIZED", "delete_states", "partition_results", "read_summaries", "reset_states",
           "state_topics", "topic_ids", "topic_of"]

UNINITIALIZED = -1              # Kafka's start offset of a share-partition that has no state yet
NO_TOPIC_ID = bytes(16)         # the topic id of a topic that is not there (or not visible)
StateTopics = dict[bytes, tuple[str, frozenset[int]]]


def state_topics(broker: HandlerContext, group_id: str) -> tuple[int, bool | None, StateTopics]:
    """(error, has members -- None: no such group --, share-partitions with state) of the group,
    from its coordinator shard (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS elsewhere)."""
    return broker.groups.read(group_id, lambda shard: {"v": shard.share_state_topics(group_id)},
                              lambda code: {"v": (code, None, {})})["v"]


def topic_ids(broker: HandlerContext) -> dict[bytes, str]:
    """Topic id -> name, of the broker's metadata image."""
    return {t.topic_id: name for name, t in broker.image.topics.items()}


async def read_summaries(broker: HandlerContext, group_id: str, topic_id: bytes,
                         partitions: Iterable[int]) -> list[tuple[int, int, int, int]]:
    """(partition, error, start offset, leader epoch) of each; never initialized: no error, start -1."""
    async def one(p: int) -> tuple[int, int, int, int]:
        error, summary = await broker.share_persister.read_summary(SharePartitionKey(group_id, topic_id, p))
        if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or (not error and summary is None):
            return p, ErrorCode.NONE, UNINITIALIZED, -1
        if error or summary is None:
            return p, error, UNINITIALIZED, -1
        return p, ErrorCode.NONE, summary["StartOffset"], summary["LeaderEpoch"]
    return list(await asyncio.gather(*(one(p) for p in sorted(partitions))))


async def reset_states(broker: HandlerContext, group_id: str, topic_id: bytes,
                       offsets: dict[int, int]) -> dict[int, int]:
    """Each partition's share state starts again at its offset, at the next state epoch (what a
    leader still holds of the old epoch is fenced): partition -> error."""
    async def one(p: int, offset: int) -> tuple[int, int]:
        spk = SharePartitionKey(group_id, topic_id, p)
        error, summary = await broker.share_persister.read_summary(spk)
        if error and error != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return p, error
        epoch = summary["StateEpoch"] + 1 if summary else 0
        return p, await broker.share_persister.initialize(spk, epoch, offset)
    return dict(await asyncio.gather(*(one(p, o) for p, o in offsets.items())))


async def delete_states(broker: HandlerContext, group_id: str, topic_id: bytes,
                        partitions: Iterable[int]) -> dict[int, int]:
    """DeleteShareGroupState of each partition: partition -> error."""
    async def one(p: int) -> tuple[int, int]:
        return p, await broker.share_persister.delete(SharePartitionKey(group_id, topic_id, p))
    return dict(await asyncio.gather(*(one(p) for p in sorted(partitions))))


def topic_of(broker: HandlerContext, header: RequestHeader, op: int, name: str) -> tuple[int, TopicInfo | None]:
    """The topic named, if ``op`` on it is allowed (else TOPIC_AUTHORIZATION_FAILED) and it exists
    (else UNKNOWN_TOPIC_OR_PARTITION)."""
    if not authz.topic(broker, header, op, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    topic = broker.image.topics.get(name)
    return (ErrorCode.NONE, topic) if topic is not None else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)


def partition_results(errors: Mapping[int, int]) -> list[Any]:
    return [{"PartitionIndex": p, "ErrorCode": e, "ErrorMessage": None} for p, e in sorted(errors.items())]
