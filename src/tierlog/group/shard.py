"""The group coordinator of one ``__consumer_offsets`` partition (a "shard"), sans-IO.

It holds the groups that hash to its partition and their committed offsets.
Its shell loads it by :meth:`GroupShard.replay` -ing the partition's records from
the start, then :meth:`GroupShard.loaded`; afterwards every request method takes
the caller's token and ``now_ms`` and returns an :class:`~.output.Output` (the
records to append, the answers to send once they are committed, offsets to
:meth:`GroupShard.apply_committed` then).  :meth:`GroupShard.tick` runs the
timeouts and offset expiry.  Offsets committed in a transaction (TxnOffsetCommit,
KIP-98 / KIP-447) wait per producer id until that transaction's marker reaches the
partition (``complete_txn``: a commit applies them, an abort drops them); on load
they come from the transactional batches and the markers of the log
(``replay_txn``).  Groups are keyed by id; each has a ``type``:
``classic`` (``ClassicGroup``, rules in ``classic.py``) or ``consumer``
(KIP-848, ``ConsumerGroup``, rules in ``consumer.py``).  Groups known only
from offsets (simple consumers, generation -1 commits) are Empty classic
groups with protocol type "".  An empty group of one type becomes the other
when a member of the other protocol joins it; a non-empty one refuses
(INCONSISTENT_GROUP_PROTOCOL for a classic join, GROUP_ID_NOT_FOUND for a
consumer heartbeat).  A consumer group's session timeout and heartbeat interval are
its dynamic group configs (``group_configs``, KIP-848) where it has them.
Share groups (KIP-932, ``ShareGroup`` in ``share_group.py``; the shard's methods of them in
``share_groups.py``) are held apart in ``share_groups`` and written to ``__consumer_offsets`` as Kafka's share-group records
(``share_group_records``), so a coordinator failover keeps their members; an empty one stays
until DeleteGroups.  The types do not mix, as in Kafka: a share heartbeat for a group id a
classic or consumer group holds is GROUP_ID_NOT_FOUND, and on a share group's id a JoinGroup is
INCONSISTENT_GROUP_PROTOCOL, a ConsumerGroupHeartbeat, OffsetCommit, TxnOffsetCommit,
OffsetFetch or OffsetDelete GROUP_ID_NOT_FOUND.
"""
from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from tierlog.protocol.errors import ErrorCode

from . import classic, consumer
from .consumer_group import CONSUMER, ConsumerGroup, TopicsView
from .consumer_records import (
    CONSUMER_KEY_VERSIONS,
    decode_consumer_key,
    decode_consumer_value,
)
from .group import ClassicGroup, GroupState, Member
from .group_config import GroupConfig
from .log_records import (
    GroupKey,
    OffsetKey,
    decode_key,
    decode_value,
    group_metadata_record,
)
from .offsets import OffsetStore
from .output import Output
from .share_group import ShareGroup
from .share_group_records import SHARE_KEY_VERSIONS
from .share_groups import ShareGroups, not_consumer, share_heartbeat_error, share_records

__all__ = ["GroupShard"]
INT64_MAX = 2**63 - 1
SHARE = "share"             # a share group's type and protocol type in ListGroups (KIP-932)

_S = GroupState


class GroupShard(ShareGroups):
    def __init__(self, partition: int, config: GroupConfig, rng: random.Random,
                 group_configs: Callable[[str], Mapping[str, str]] = lambda group_id: {}):
        self.partition = partition
        self.config = config
        self._rng = rng
        self._group_configs = group_configs         # group id -> its dynamic configs (KIP-848, from the image)
        self.groups: dict[str, ClassicGroup | ConsumerGroup] = {}
        self.share_groups: dict[str, ShareGroup] = {}   # KIP-932 (see above)
        self.share_rebalances = 0                       # share-group target assignments computed (a metric)
        self.offsets = OffsetStore()
        self._next_retention_check_ms: int | None = None
        # producer id -> offsets awaiting its marker
        self._txn_offsets: dict[int, list[tuple[OffsetKey, dict[str, Any] | None]]] = {}

    # -- loading ------------------------------------------------------------------------
    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one record of the partition (load).  Raises ValueError on a malformed one."""
        version = int.from_bytes(key[:2], "big", signed=True) if len(key) >= 2 else -1
        if version in CONSUMER_KEY_VERSIONS:
            return self._replay_consumer(version, key, value)
        if version in SHARE_KEY_VERSIONS:
            return self._replay_share(version, key, value)
        k = decode_key(key)
        if isinstance(k, OffsetKey):
            self.offsets.apply(k, decode_value(k, value))
            if value is not None:
                self.groups.setdefault(k.group, ClassicGroup(k.group))
        elif isinstance(k, GroupKey):
            fields = decode_value(k, value)
            if fields is None:
                self.groups.pop(k.group, None)
            else:
                self.groups[k.group] = _group_from_record(k.group, fields)

    def _replay_consumer(self, version: int, key: bytes, value: bytes | None) -> None:
        k = decode_consumer_key(version, key)
        fields = decode_consumer_value(k, value)
        group = self.groups.get(k.group)
        if not isinstance(group, ConsumerGroup):
            if fields is None:
                return
            group = self.groups[k.group] = ConsumerGroup(k.group)
        if version == 3 and fields is None:         # the group was deleted (its offsets first)
            del self.groups[k.group]
            if self.offsets.has_offsets(k.group):
                self.groups[k.group] = ClassicGroup(k.group)
            return
        group.replay(k, fields)

    def loaded(self, now_ms: int) -> None:
        """Loading is over: loaded members' sessions start now."""
        for share in self.share_groups.values():
            share.loaded(now_ms)
        for group in self.groups.values():
            if isinstance(group, ConsumerGroup):
                group.loaded(now_ms, self.group_config(group.group_id).consumer_session_timeout_ms)
                continue
            for m in group.members.values():
                m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms
        self._next_retention_check_ms = now_ms + self.config.retention_check_interval_ms

    def apply_committed(self, applies: list[tuple[OffsetKey, dict[str, Any] | None]], producer_id: int = -1) -> None:
        """Offsets whose records are committed take effect; those of a transaction
        (``producer_id`` >= 0) once its marker commits it."""
        if producer_id >= 0:
            self._txn_offsets.setdefault(producer_id, []).extend(applies)
            return
        for key, value in applies:
            self.offsets.apply(key, value)

    def replay_txn(self, producer_id: int, key: bytes, value: bytes | None) -> None:
        """A record of a transactional batch (load): an offset that waits for its marker."""
        k = decode_key(key)
        if isinstance(k, OffsetKey):
            self.apply_committed([(k, decode_value(k, value))], producer_id)
            self.groups.setdefault(k.group, ClassicGroup(k.group))

    def complete_txn(self, producer_id: int, commit: bool) -> None:
        """The producer's transaction marker is committed: its offsets apply or are dropped."""
        for key, value in self._txn_offsets.pop(producer_id, ()) if commit else ():
            self.offsets.apply(key, value)
        self._txn_offsets.pop(producer_id, None)


    def write_failed(self, lost: list[tuple[str, int]], now_ms: int) -> Output:
        """A write with ``Output.on_failure`` items failed: take those assignments back."""
        c = self._ctx(now_ms)
        for group_id, generation in lost:
            group = self.groups.get(group_id)
            if isinstance(group, ClassicGroup):
                classic.assignment_lost(group, generation, c)
        return c.out

    def _ctx(self, now_ms: int, config: GroupConfig | None = None) -> classic.Ctx:
        return classic.Ctx(config or self.config, now_ms, Output(), self._new_member_id)

    def group_config(self, group_id: str) -> GroupConfig:
        """The settings a group runs with: the broker's, with the group's own dynamic configs."""
        return self.config.for_group(self._group_configs(group_id))

    def _new_member_id(self, client_id: str) -> str:
        return f"{client_id}-{uuid.UUID(int=self._rng.getrandbits(128), version=4)}"

    # -- membership ---------------------------------------------------------------------
    def join(self, req: dict[str, Any], token: object, now_ms: int) -> Output:
        c = self._ctx(now_ms)
        group_id = req["GroupId"]
        group = self.groups.get(group_id)
        if group_id in self.share_groups:
            c.out.answer(token, classic.join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req["MemberId"]))
            return c.out
        if isinstance(group, ConsumerGroup):
            if not group.is_empty():
                c.out.answer(token, classic.join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req["MemberId"]))
                return c.out
            c.out.records += group.delete_records()     # an empty consumer group becomes a classic one
            group = None
            del self.groups[group_id]
        if not group_id:
            c.out.answer(token, classic.join_error(ErrorCode.INVALID_GROUP_ID, req["MemberId"]))
        elif group is None and req["MemberId"] != classic.UNKNOWN_MEMBER:
            c.out.answer(token, classic.join_error(ErrorCode.UNKNOWN_MEMBER_ID, req["MemberId"]))
        else:
            created = group is None
            group = group or self.groups.setdefault(group_id, ClassicGroup(group_id, state_timestamp_ms=now_ms))
            assert isinstance(group, ClassicGroup)      # a consumer group was answered or replaced above
            classic.join(group, req, token, c)
            if created and group.state is _S.EMPTY and not group.pending:
                del self.groups[group_id]       # refused before it had a member
        return c.out

    def sync(self, req: dict[str, Any], token: object, now_ms: int) -> Output:
        c = self._ctx(now_ms)
        classic.sync(self._classic(req["GroupId"]), req, token, c)
        return c.out

    def heartbeat(self, req: dict[str, Any], token: object, now_ms: int) -> Output:
        c = self._ctx(now_ms)
        c.out.answer(token, {"ErrorCode": classic.heartbeat(self._classic(req["GroupId"]), req, c)})
        return c.out

    def leave(self, group_id: str, members: list[tuple[str, str | None]], token: object, now_ms: int) -> Output:
        """``members``: (member id, group instance id) pairs; the answer: ErrorCode and per-member codes."""
        c = self._ctx(now_ms)
        group = self._classic(group_id)
        if group is None:
            c.out.answer(token, {"ErrorCode": ErrorCode.UNKNOWN_MEMBER_ID, "Members": []})
            return c.out
        results = [{"MemberId": m, "GroupInstanceId": i, "ErrorCode": classic.leave(group, m, i, c)}
                   for m, i in members]
        c.out.answer(token, {"ErrorCode": ErrorCode.NONE, "Members": results})
        return c.out

    def _classic(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    # -- the consumer protocol (KIP-848) --------------------------------------------------------
    def consumer_heartbeat(self, req: dict[str, Any], token: object, now_ms: int, view: TopicsView) -> Output:
        """``req``: ConsumerGroupHeartbeat fields plus ``client_id``, ``client_host``."""
        c = self._ctx(now_ms, self.group_config(req["GroupId"]))
        if req["GroupId"] in self.share_groups:
            c.out.answer(token, share_heartbeat_error(ErrorCode.GROUP_ID_NOT_FOUND, not_consumer(req["GroupId"])))
            return c.out
        c.out.answer(token, consumer.heartbeat(self.groups, req, c, view))
        return c.out

    def consumer_describe(self, group_id: str, view: TopicsView) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            return {"ErrorCode": ErrorCode.GROUP_ID_NOT_FOUND, "ErrorMessage": f"Group {group_id} is not a consumer "
                    "group." if group else f"Group {group_id} not found.", "GroupId": group_id, "GroupState": "",
                    "GroupEpoch": -1, "AssignmentEpoch": -1, "AssignorName": "", "Members": []}
        return consumer.describe(group, view, self.config.consumer_assignors[0])

    # -- offsets ------------------------------------------------------------------------------
    def commit_offsets(self, req: dict[str, Any], token: object, now_ms: int) -> Output:
        c = self._ctx(now_ms)
        error = self._check_commit(req, now_ms)
        if error:
            c.out.answer(token, {"Topics": [{"Name": t["Name"], "Partitions": [
                {"PartitionIndex": p["PartitionIndex"], "ErrorCode": error} for p in t["Partitions"]]}
                for t in req["Topics"]]})
            return c.out
        records, applies, topics = self.offsets.commit_records(
            req["GroupId"], req["Topics"], now_ms, _expire_timestamp(now_ms, req.get("RetentionTimeMs", -1)),
            self.config.offset_metadata_max_bytes)
        self.groups.setdefault(req["GroupId"], ClassicGroup(req["GroupId"], state_timestamp_ms=now_ms))
        c.out.records += records
        c.out.on_commit += applies
        c.out.answer(token, {"Topics": topics})
        return c.out

    def txn_commit_offsets(self, req: dict[str, Any], token: object, now_ms: int) -> Output:
        """TxnOffsetCommit: the records in the producer's transaction; they take effect with its
        commit marker.  KIP-447: a member id / generation given (v3+) are checked like OffsetCommit's."""
        commit = {**req, "GenerationIdOrMemberEpoch": req.get("GenerationId", -1), "version": 9}
        out = self.commit_offsets(commit, token, now_ms)
        out.txn_producer = (req["ProducerId"], req["ProducerEpoch"])
        return out

    def _check_commit(self, req: dict[str, Any], now_ms: int) -> int:
        group_id, generation, member_id = req["GroupId"], req.get("GenerationIdOrMemberEpoch", -1), req.get(
            "MemberId", "")
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if group_id in self.share_groups:
            return ErrorCode.GROUP_ID_NOT_FOUND         # a share group has no committed offsets (KIP-932)
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        if isinstance(group, ConsumerGroup):
            return _check_consumer_commit(group, member_id, generation, req.get("version", 9))
        if group.state is _S.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and not member_id and group.state is _S.EMPTY:
            return ErrorCode.NONE                       # a simple consumer's commit
        error = classic._check_member(group, member_id, req.get("GroupInstanceId"))
        if not error and generation != group.generation:
            error = ErrorCode.ILLEGAL_GENERATION
        if not error and group.state is _S.COMPLETING_REBALANCE:
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if not error:
            m = group.members[member_id]
            m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms
        return error

    def fetch_offsets(self, group_id: str, topics: list[dict[str, Any]] | None,
                      require_stable: bool = False) -> dict[str, Any]:
        """One group's OffsetFetch answer (v8 shape); ``require_stable`` (KIP-447): a partition whose
        offset waits for a transaction answers UNSTABLE_OFFSET_COMMIT (the consumer retries)."""
        if group_id in self.share_groups:
            return {"GroupId": group_id, "Topics": [], "ErrorCode": ErrorCode.GROUP_ID_NOT_FOUND}
        answer = self.offsets.fetch(group_id, topics)
        if require_stable:
            pending = {(k.topic, k.partition) for offsets in self._txn_offsets.values() for k, _v in offsets
                       if k.group == group_id}
            for t in answer:
                for p in t["Partitions"]:
                    if (t["Name"], p["PartitionIndex"]) in pending:
                        p["CommittedOffset"], p["ErrorCode"] = -1, ErrorCode.UNSTABLE_OFFSET_COMMIT
        return {"GroupId": group_id, "Topics": answer, "ErrorCode": ErrorCode.NONE}

    def delete_offsets(self, group_id: str, topics: list[dict[str, Any]], token: object, now_ms: int) -> Output:
        c = self._ctx(now_ms)
        group = self.groups.get(group_id)
        if group is None:
            c.out.answer(token, {"ErrorCode": ErrorCode.GROUP_ID_NOT_FOUND, "Topics": []})
            return c.out
        subscribed = group.subscribed_topics() if not group.is_empty() else set()
        if subscribed is None:
            c.out.answer(token, {"ErrorCode": ErrorCode.NON_EMPTY_GROUP, "Topics": []})
            return c.out
        answer = []
        for t in topics:
            code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if t["Name"] in subscribed else ErrorCode.NONE
            if not code:
                self._tombstone_offsets(group_id, [(t["Name"], p["PartitionIndex"]) for p in t["Partitions"]], c)
            answer.append({"Name": t["Name"], "Partitions": [
                {"PartitionIndex": p["PartitionIndex"], "ErrorCode": code} for p in t["Partitions"]]})
        c.out.answer(token, {"ErrorCode": ErrorCode.NONE, "Topics": answer})
        return c.out

    def _tombstone_offsets(self, group_id: str, keys: Iterable[tuple[str, int]] | None, c: classic.Ctx) -> None:
        for key, record in self.offsets.tombstones(group_id, keys):
            c.out.records.append(record)
            self.offsets.apply(key, None)

    # -- group administration ----------------------------------------------------------------
    def delete_groups(self, group_ids: list[str], token: object, now_ms: int) -> Output:
        c = self._ctx(now_ms)
        results = []
        for group_id in group_ids:
            group = self.groups.get(group_id)
            share = self.share_groups.get(group_id)
            if share is not None:
                code = ErrorCode.NON_EMPTY_GROUP if share.members else ErrorCode.NONE
                if not code:
                    c.out.records += share_records(share.tombstones())
                    del self.share_groups[group_id]
            elif group is None or (group.type != CONSUMER and group.state is _S.DEAD):
                code = ErrorCode.GROUP_ID_NOT_FOUND
            elif not _is_empty(group):
                code = ErrorCode.NON_EMPTY_GROUP
            else:
                code = ErrorCode.NONE
                self._delete_group(group, c)
            results.append({"GroupId": group_id, "ErrorCode": code})
        c.out.answer(token, {"Results": results})
        return c.out

    def _delete_group(self, group: ClassicGroup | ConsumerGroup, c: classic.Ctx) -> None:
        self._tombstone_offsets(group.group_id, None, c)
        if isinstance(group, ConsumerGroup):
            c.out.records += group.delete_records()
        else:
            c.out.records.append(group_metadata_record(GroupKey(group.group_id), None))
            group.transition(_S.DEAD, c.now_ms)
        del self.groups[group.group_id]

    def list_groups(self, states: list[str], types: list[str]) -> list[dict[str, Any]]:
        states_l, types_l = {s.lower() for s in states}, {t.lower() for t in types}
        listed = [{"GroupId": g.group_id, "ProtocolType": _protocol_type(g), "GroupState": _state(g),
                   "GroupType": g.type} for g in self.groups.values()]
        listed += [{"GroupId": g.group_id, "ProtocolType": SHARE, "GroupState": g.state, "GroupType": SHARE}
                   for g in self.share_groups.values()]
        return [g for g in listed if (not states_l or g["GroupState"].lower() in states_l)
                and (not types_l or g["GroupType"] in types_l)]

    def describe(self, group_id: str, view: TopicsView | None = None) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return consumer.describe_classic(group, view or TopicsView({}), self.config.consumer_assignors[0])
        if group is None:
            return {"ErrorCode": ErrorCode.NONE, "GroupId": group_id, "GroupState": _S.DEAD.value,
                    "ProtocolType": "", "ProtocolData": "", "Members": []}
        stable = group.state is _S.STABLE
        return {"ErrorCode": ErrorCode.NONE, "GroupId": group_id, "GroupState": group.state.value,
                "ProtocolType": group.protocol_type or "", "ProtocolData": group.protocol or "",
                "Members": [_describe_member(m, group.protocol, stable) for m in group.members.values()]}

    # -- time ----------------------------------------------------------------------------------
    def tick(self, now_ms: int) -> list[Output]:
        """Every timeout due at ``now_ms`` (what the per-group timers do, all at once)."""
        outs = [self.tick_group(group_id, now_ms) for group_id in [*self.groups, *self.share_groups]]
        if self.next_retention_check_ms is not None and now_ms >= self.next_retention_check_ms:
            outs.append(self.check_retention(now_ms))
        return [out for out in outs if out]

    def tick_group(self, group_id: str, now_ms: int) -> Output:
        """The group's timeouts due at ``now_ms``: sessions, pending members, join and sync phases."""
        group, c = self.groups.get(group_id), self._ctx(now_ms)
        share = self.share_groups.get(group_id)
        if share is not None and share.expire(now_ms):
            c.out.records += share_records(share.take_records())
        if isinstance(group, ConsumerGroup):
            consumer.tick(group, c)
        elif group is not None:
            classic.tick(group, c)
        return c.out

    def next_deadline_ms(self, group_id: str) -> int | None:
        """When the group's next timeout is due (None: none is)."""
        group = self.groups.get(group_id)
        if group_id in self.share_groups:
            return self.share_groups[group_id].next_deadline_ms()
        if isinstance(group, ConsumerGroup):
            return consumer.next_deadline_ms(group)
        return None if group is None else classic.next_deadline_ms(group)

    @property
    def next_retention_check_ms(self) -> int | None:
        return self._next_retention_check_ms

    def check_retention(self, now_ms: int) -> Output:
        """offsets.retention.check.interval.ms: expire offsets (and groups left without any)."""
        self._next_retention_check_ms = now_ms + self.config.retention_check_interval_ms
        c = self._ctx(now_ms)
        self.expire_offsets(c)
        return c.out

    def expire_offsets(self, c: classic.Ctx) -> None:
        """Tombstone expired offsets of empty groups; an empty group left without offsets is deleted."""
        for group in list(self.groups.values()):
            if not _is_empty(group):
                continue
            empty_since = group.empty_since_ms if isinstance(group, ConsumerGroup) else group.state_timestamp_ms
            keys = self.offsets.expired(group.group_id, empty_since, c.now_ms, self.config.offsets_retention_ms)
            self._tombstone_offsets(group.group_id, keys, c)
            if not self.offsets.has_offsets(group.group_id):
                self._delete_group(group, c)

    # -- metadata ------------------------------------------------------------------------------
    def delete_topic_offsets(self, topics: Collection[str], now_ms: int, topic_ids: Collection[bytes] = ()) -> Output:
        """Topics deleted from the cluster: every group's committed offsets of their partitions are
        tombstoned (Kafka's GroupCoordinator.onPartitionsDeleted), so a topic created again under the
        name starts without them; an empty group left without offsets is deleted, as expiry does.
        Share groups forget the deleted ``topic_ids`` among their share-partitions with state."""
        c = self._ctx(now_ms)
        for share in self.share_groups.values() if topic_ids else ():
            if any(tid in share.state_topics for tid in topic_ids):
                for tid in topic_ids:
                    share.remove_state(tid)
                c.out.records += share_records(share.take_records())
        for group_id in self.offsets.group_ids():
            keys = [key for key in self.offsets.all(group_id) if key[0] in topics]
            if not keys:
                continue
            self._tombstone_offsets(group_id, keys, c)
            group = self.groups.get(group_id)
            if group is not None and _is_empty(group) and not self.offsets.has_offsets(group_id):
                self._delete_group(group, c)
        return c.out


def _is_empty(group: ClassicGroup | ConsumerGroup) -> bool:
    return group.is_empty() if isinstance(group, ConsumerGroup) else group.state is _S.EMPTY


def _state(group: ClassicGroup | ConsumerGroup) -> str:
    return group.state if isinstance(group, ConsumerGroup) else group.state.value


def _protocol_type(group: ClassicGroup | ConsumerGroup) -> str:
    return "consumer" if isinstance(group, ConsumerGroup) else group.protocol_type or ""


def _check_consumer_commit(group: ConsumerGroup, member_id: str, epoch: int, version: int) -> int:
    """Kafka's rule for consumer groups: the member's epoch is the generation (STALE_MEMBER_EPOCH
    from OffsetCommit v9, ILLEGAL_GENERATION before); epoch -1 commits only to an empty group."""
    if epoch < 0 and group.is_empty():
        return ErrorCode.NONE
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if version < 9:
        return ErrorCode.UNSUPPORTED_VERSION
    return ErrorCode.STALE_MEMBER_EPOCH if epoch != member.epoch else ErrorCode.NONE


def _describe_member(m: Member, protocol: str | None, stable: bool) -> dict[str, Any]:
    return {"MemberId": m.member_id, "GroupInstanceId": m.group_instance_id, "ClientId": m.client_id,
            "ClientHost": m.client_host, "MemberMetadata": m.metadata(protocol) if stable else b"",
            "MemberAssignment": m.assignment if stable else b""}


def _group_from_record(group_id: str, v: dict[str, Any]) -> ClassicGroup:
    group = ClassicGroup(group_id, generation=v["generation"], protocol_type=v["protocolType"] or None,
                         protocol=v["protocol"], state_timestamp_ms=v.get("currentStateTimestamp", -1))
    for mv in v["members"]:
        rebalance = mv.get("rebalanceTimeout", -1)       # -1 in v0 records: the session timeout stands in
        group.add(Member(mv["memberId"], mv.get("groupInstanceId"), mv["clientId"], mv["clientHost"],
                         rebalance if rebalance > 0 else mv["sessionTimeout"], mv["sessionTimeout"], v["protocolType"],
                         [(v["protocol"] or "", bytes(mv["subscription"]))], assignment=bytes(mv["assignment"])))
    group.leader_id = v["leader"] if v["leader"] in group.members else group.leader_id
    group.state = _S.STABLE if group.members else _S.EMPTY
    return group


def _expire_timestamp(now_ms: int, retention_ms: int) -> int:
    """v2-4 RetentionTimeMs as the record's int64 expireTimestamp (-1: none); a retention past
    the int64 range keeps the offset forever, as the largest timestamp."""
    if retention_ms <= 0:
        return -1
    return min(now_ms + retention_ms, INT64_MAX)
