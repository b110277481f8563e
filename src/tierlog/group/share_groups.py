"""The share groups (KIP-932) of a group shard, sans-IO: the ``GroupShard`` methods of share groups
(``ShareGroup`` in ``share_group.py``; their records in ``share_group_records.py``), mixed into it.

Share groups are held apart from classic and consumer groups (``share_groups``); the types do
not mix, as in Kafka: a share heartbeat or describe of a classic or consumer group's id is
GROUP_ID_NOT_FOUND ("not a share group").  A group's settings are its dynamic share.* configs
(``GroupShard.group_config``), applied at each heartbeat.  Each change writes the records of
what changed (``ShareGroup.take_records``); loading replays them.  The admin calls
(DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets) read which
share-partitions have state and record what the share coordinator was told.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tierlog.protocol.errors import ErrorCode

from . import classic
from .consumer_group import ConsumerGroup, TopicsView
from .group import ClassicGroup
from .group_config import GroupConfig
from .output import Output, with_error
from .share_group import ShareGroup
from .share_group_records import (
    GROUP_METADATA as SHARE_GROUP_METADATA,
)
from .share_group_records import (
    ShareGroupKey,
    decode_share_key,
    decode_share_value,
    encode_share_record,
)

__all__ = ["ShareGroups", "not_consumer", "share_heartbeat_error", "share_records"]


class ShareGroups:
    """Mixed into ``GroupShard``: the state it declares here is the shard's."""

    groups: dict[str, ClassicGroup | ConsumerGroup]
    share_groups: dict[str, ShareGroup]
    share_rebalances: int
    _ctx: Callable[..., classic.Ctx]
    group_config: Callable[[str], GroupConfig]

    def _replay_share(self, version: int, key: bytes, value: bytes | None) -> None:
        k = decode_share_key(version, key)
        if k is None:
            return
        fields = decode_share_value(k, value)
        if k.type == SHARE_GROUP_METADATA and fields is None:
            self.share_groups.pop(k.group, None)
            return
        group = self.share_groups.get(k.group)
        if group is None:
            if fields is None:
                return
            group = self.share_groups[k.group] = self._new_share_group(k.group)
        group.replay(k, fields)

    def _new_share_group(self, group_id: str) -> ShareGroup:
        cfg = self.group_config(group_id)
        return ShareGroup(group_id, session_timeout_ms=cfg.share_session_timeout_ms,
                          heartbeat_interval_ms=cfg.share_heartbeat_interval_ms, max_size=cfg.share_max_size)

    # -- share groups (KIP-932) -----------------------------------------------------------------
    def share_heartbeat(self, req: dict[str, Any], token: object, now_ms: int, view: TopicsView) -> Output:
        """``req``: ShareGroupHeartbeat fields plus ``client_id``, ``client_host``."""
        c, group_id = self._ctx(now_ms), req["GroupId"]
        if group_id in self.groups:
            c.out.answer(token, share_heartbeat_error(ErrorCode.GROUP_ID_NOT_FOUND,
                                                       f"Group {group_id} is not a share group."))
            return c.out
        group = self.share_groups.get(group_id)
        created = group is None
        if group is None:
            group = self.share_groups[group_id] = self._new_share_group(group_id)
        cfg = self.group_config(group_id)           # the group's share.* configs may have changed
        group.session_timeout_ms, group.heartbeat_interval_ms = cfg.share_session_timeout_ms, cfg.share_heartbeat_interval_ms
        epoch = group.assignment_epoch
        beat = group.heartbeat(req["MemberId"], req["MemberEpoch"], req.get("SubscribedTopicNames"), view, now_ms,
                               rack_id=req.get("RackId"), client_id=req.get("client_id", ""),
                               client_host=req.get("client_host", ""))
        self.share_rebalances += group.assignment_epoch != epoch
        if created and not group.members:
            del self.share_groups[group_id]           # refused before it had a member: never written
        else:
            c.out.records += share_records(group.take_records(beat.member_id))
        if beat.error != ErrorCode.NONE:
            c.out.answer(token, share_heartbeat_error(beat.error, None))
            return c.out
        assignment = None if beat.assignment is None else {"TopicPartitions": [
            {"TopicId": tid, "Partitions": sorted(ps)} for tid, ps in sorted(beat.assignment.items())]}
        c.out.answer(token, {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "MemberId": beat.member_id,
                             "MemberEpoch": beat.member_epoch, "HeartbeatIntervalMs": group.heartbeat_interval_ms,
                             "Assignment": assignment})
        return c.out

    def share_describe(self, group_id: str, view: TopicsView) -> dict[str, Any]:
        """ShareGroupDescribe's DescribedGroup (without AuthorizedOperations)."""
        group = self.share_groups.get(group_id)
        if group is None:
            message = f"Group {group_id} is not a share group." if group_id in self.groups \
                else f"Group {group_id} not found."
            return {"ErrorCode": ErrorCode.GROUP_ID_NOT_FOUND, "ErrorMessage": message, "GroupId": group_id,
                    "GroupState": "", "GroupEpoch": -1, "AssignmentEpoch": -1, "AssignorName": "", "Members": []}
        names = {tid: name for name, (tid, _count) in view.topics.items()}
        return {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None, **group.describe(names)}

    def share_state_topics(self, group_id: str) -> tuple[int, bool | None, dict[bytes, tuple[str, frozenset[int]]]]:
        """(error, has members -- None when there is no such group --, topic id -> (name, partitions)
        that may have share state) of a share group; GROUP_ID_NOT_FOUND for another type's id."""
        group = self.share_groups.get(group_id)
        if group is None:
            return (ErrorCode.GROUP_ID_NOT_FOUND if group_id in self.groups else ErrorCode.NONE), None, {}
        return ErrorCode.NONE, bool(group.members), dict(group.state_topics)

    def share_offsets_altered(self, group_id: str, topics: list[tuple[bytes, str, frozenset[int]]],
                              answer: dict[str, Any], token: object, now_ms: int) -> Output:
        """AlterShareGroupOffsets wrote the share state of ``topics``: the group (created when it is
        new, as Kafka does) records them; ``answer`` leaves once that is written.  A group that
        gained members meanwhile or is another type's id answers NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND."""
        c = self._ctx(now_ms)
        error, busy, _known = self.share_state_topics(group_id)
        if error or busy:
            c.out.answer(token, with_error(answer, error or ErrorCode.NON_EMPTY_GROUP))
            return c.out
        group = self.share_groups.get(group_id) or self.share_groups.setdefault(group_id, self._new_share_group(group_id))
        for topic_id, name, partitions in topics:
            group.add_state(topic_id, name, partitions)
        c.out.records += share_records(group.take_records())
        c.out.answer(token, answer)
        return c.out

    def share_offsets_deleted(self, group_id: str, topic_ids: list[bytes], answer: dict[str, Any], token: object,
                              now_ms: int) -> Output:
        """DeleteShareGroupOffsets deleted the share state of ``topic_ids``: the group forgets them."""
        c = self._ctx(now_ms)
        group = self.share_groups.get(group_id)
        if group is not None:
            for topic_id in topic_ids:
                group.remove_state(topic_id)
            c.out.records += share_records(group.take_records())
        c.out.answer(token, answer)
        return c.out


def share_records(records: list[tuple[ShareGroupKey, dict[str, Any] | None]]) -> list[tuple[bytes, bytes | None]]:
    return [encode_share_record(k, v) for k, v in records]


def not_consumer(group_id: str) -> str:
    return f"Group {group_id} is not a consumer group."


def share_heartbeat_error(code: int, message: str | None) -> dict[str, Any]:
    return {"ErrorCode": code, "ErrorMessage": message, "MemberId": None, "MemberEpoch": 0,
            "HeartbeatIntervalMs": 0, "Assignment": None}


