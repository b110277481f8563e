"""A share group's membership and assignment (KIP-932; Kafka's ShareGroup and its group
coordinator rules), sans-IO: what ShareGroupHeartbeat (76) decides and ShareGroupDescribe (77)
shows (served, not yet advertised: issue 37).

- Members join with MemberEpoch 0 and the member id their client made (KIP-1082; one is made
  here when it is empty) and their subscribed topic names; they heartbeat with the epoch they
  were given, and leave with -1.  A member that misses ``session_timeout_ms``
  (group.share.session.timeout.ms) is removed.  A wrong epoch is FENCED_MEMBER_EPOCH, an
  unknown member UNKNOWN_MEMBER_ID, a join past ``max_size`` (group.share.max.size)
  GROUP_MAX_SIZE_REACHED.
- Any change of the members, their subscriptions or the subscribed topics' partition counts
  bumps the group epoch, and the target assignment is computed again at that epoch by the
  ``simple`` share assignor.  Share groups need no revocation (a partition may be read by
  several members at once; the share-partition's locks keep each record with one member), so
  a member's next heartbeat takes the new assignment and the assignment epoch as its member
  epoch at once; the assignment is sent only when it changed for that member (or it joined).
- The ``simple`` assignor: per subscribed topic, its partitions dealt round-robin to the
  members subscribed to it, sorted by member id; when there are more members than partitions,
  partition i % partitions goes to member i, so every member gets one and members share
  partitions.  Members joining or leaving move as few partitions as dealing allows.
- Persisted in ``__consumer_offsets`` as Kafka's records (``share_group_records``): the group
  epoch with a hash of the subscribed topics' metadata (KIP-1101), each member's subscription,
  target and current assignment, the assignment epoch.  ``take_records`` gives what changed
  since the last call (tombstones for members gone), ``replay`` rebuilds the group from them;
  an empty group stays (state Empty) until it is deleted.  The metadata hash is tierlog's own
  (64 bits of BLAKE2b over the topics' names, ids and partition counts), not Kafka's murmur.
"""
from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tierlog.protocol.errors import ErrorCode

from .consumer_group import TopicsView
from .consumer_records import assignment_from_wire, assignment_to_wire
from .share_group_records import (
    CURRENT_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    STABLE,
    STATE_METADATA,
    TARGET_MEMBER,
    TARGET_METADATA,
    ShareGroupKey,
)

__all__ = ["SIMPLE_ASSIGNOR", "ShareGroup", "ShareHeartbeat", "ShareMember", "simple_assign"]

SIMPLE_ASSIGNOR = "simple"
JOIN, LEAVE = 0, -1
Assignment = dict[bytes, frozenset[int]]          # topic id -> partitions


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topic_names: tuple[str, ...] = ()
    assigned: Assignment = field(default_factory=dict)
    session_deadline_ms: int = 0


@dataclass(frozen=True)
class ShareHeartbeat:
    """A ShareGroupHeartbeat's answer: ``assignment`` None when unchanged for the member."""
    error: ErrorCode
    member_id: str | None = None
    member_epoch: int = 0
    assignment: Assignment | None = None


def simple_assign(members: dict[str, tuple[str, ...]], topics: TopicsView) -> dict[str, Assignment]:
    """The simple share assignor: member id -> its partitions, from member id -> subscribed names."""
    out: dict[str, Assignment] = {m: {} for m in members}
    for name in sorted({n for names in members.values() for n in names}):
        if name not in topics.topics:
            continue
        topic_id, count = topics.topics[name]
        readers = sorted(m for m, names in members.items() if name in names)
        if count <= 0 or not readers:
            continue
        dealt: dict[str, set[int]] = {m: set() for m in readers}
        for i in range(max(count, len(readers))):
            dealt[readers[i % len(readers)]].add(i % count)
        for member, partitions in dealt.items():
            out[member][topic_id] = frozenset(partitions)
    return out


@dataclass
class ShareGroup:
    group_id: str
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 200
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    metadata_hash: int = 0          # of the subscribed topics' (name, id, partitions) the target is of
    # the share-partitions that may have state in the share coordinator: topic id -> (name, partitions)
    state_topics: dict[bytes, tuple[str, frozenset[int]]] = field(default_factory=dict)
    _written: dict[ShareGroupKey, dict[str, Any]] = field(default_factory=dict)   # the records last taken
    _written_epochs: tuple[int, int] = (-1, -1)

    @property
    def state(self) -> str:
        return "Empty" if not self.members else "Stable"

    def heartbeat(self, member_id: str, member_epoch: int, subscribed: list[str] | None, topics: TopicsView,
                  now_ms: int, *, rack_id: str | None = None, client_id: str = "",
                  client_host: str = "") -> ShareHeartbeat:
        if member_epoch == LEAVE:
            return self._leave(member_id)
        if member_epoch < LEAVE:
            return ShareHeartbeat(ErrorCode.INVALID_REQUEST)        # no static members in share groups
        if member_epoch == JOIN:
            if not subscribed:
                return ShareHeartbeat(ErrorCode.INVALID_REQUEST)
            member = self.members.get(member_id) if member_id else None
            if member is None:
                if len(self.members) >= self.max_size:
                    return ShareHeartbeat(ErrorCode.GROUP_MAX_SIZE_REACHED)
                member = ShareMember(member_id or str(uuid.uuid4()), client_id=client_id, client_host=client_host)
                self.members[member.member_id] = member     # its subscription below bumps the group epoch
            member.assigned = {}                 # a (re)join is always sent its assignment
        else:
            member = self.members.get(member_id)
            if member is None:
                return ShareHeartbeat(ErrorCode.UNKNOWN_MEMBER_ID)
            if member_epoch != member.member_epoch:
                return ShareHeartbeat(ErrorCode.FENCED_MEMBER_EPOCH)
        if rack_id is not None:
            member.rack_id = rack_id
        if subscribed is not None and tuple(sorted(set(subscribed))) != member.topic_names:
            member.topic_names = tuple(sorted(set(subscribed)))
            self.group_epoch += 1
        member.session_deadline_ms = now_ms + self.session_timeout_ms
        self._reassign(topics)
        target = self.target.get(member.member_id, {})
        changed = target != member.assigned or member_epoch == JOIN
        if member.member_epoch != self.assignment_epoch:
            member.previous_epoch = member.member_epoch
        member.assigned, member.member_epoch = target, self.assignment_epoch
        return ShareHeartbeat(ErrorCode.NONE, member.member_id, member.member_epoch, target if changed else None)

    def _leave(self, member_id: str) -> ShareHeartbeat:
        if self.members.pop(member_id, None) is None:
            return ShareHeartbeat(ErrorCode.UNKNOWN_MEMBER_ID)
        self.group_epoch += 1
        return ShareHeartbeat(ErrorCode.NONE, member_id, LEAVE)

    def _reassign(self, topics: TopicsView) -> None:
        """A new target at the group epoch when the members, subscriptions or topics changed."""
        names = sorted({n for m in self.members.values() for n in m.topic_names})
        seen = repr(tuple((n, *topics.topics[n]) for n in names if n in topics.topics)).encode()
        metadata_hash = int.from_bytes(hashlib.blake2b(seen, digest_size=8).digest(), "big", signed=True)
        if metadata_hash != self.metadata_hash:
            self.metadata_hash = metadata_hash
            if self.assignment_epoch == self.group_epoch:
                self.group_epoch += 1            # a subscribed topic was created, deleted or grown
        if self.assignment_epoch != self.group_epoch:
            self.target = simple_assign({m.member_id: m.topic_names for m in self.members.values()}, topics)
            self.assignment_epoch = self.group_epoch
            by_id = {tid: name for name, (tid, _count) in topics.topics.items()}
            for assignment in self.target.values():
                for tid, partitions in assignment.items():
                    self.add_state(tid, by_id.get(tid, ""), partitions)

    def add_state(self, topic_id: bytes, name: str, partitions: frozenset[int]) -> None:
        """``partitions`` of the topic may have share state from now on (assigned, or offsets altered)."""
        _old_name, known = self.state_topics.get(topic_id, (name, frozenset()))
        self.state_topics[topic_id] = (name, known | partitions)

    def remove_state(self, topic_id: bytes) -> None:
        self.state_topics.pop(topic_id, None)

    def expire(self, now_ms: int) -> list[str]:
        """Remove the members whose session ended by ``now_ms``: their ids."""
        gone = [m.member_id for m in self.members.values() if m.session_deadline_ms <= now_ms]
        for member_id in gone:
            del self.members[member_id]
        if gone:
            self.group_epoch += 1
        return gone

    def next_deadline_ms(self) -> int | None:
        return min((m.session_deadline_ms for m in self.members.values()), default=None)

    def describe(self, topic_names: dict[bytes, str]) -> dict[str, Any]:
        """ShareGroupDescribe's DescribedGroup (without its error and authorized operations)."""
        def partitions(assignment: Assignment) -> list[dict[str, Any]]:
            return [{"TopicId": tid, "TopicName": topic_names.get(tid, ""), "Partitions": sorted(ps)}
                    for tid, ps in sorted(assignment.items(), key=lambda kv: topic_names.get(kv[0], ""))]
        return {"GroupId": self.group_id, "GroupState": self.state, "GroupEpoch": self.group_epoch,
                "AssignmentEpoch": self.assignment_epoch, "AssignorName": SIMPLE_ASSIGNOR,
                "Members": [{"MemberId": m.member_id, "RackId": m.rack_id, "MemberEpoch": m.member_epoch,
                             "ClientId": m.client_id, "ClientHost": m.client_host,
                             "SubscribedTopicNames": list(m.topic_names),
                             "Assignment": {"TopicPartitions": partitions(m.assigned)}}
                            for m in sorted(self.members.values(), key=lambda m: m.member_id)]}

    # -- persistence (__consumer_offsets) ----------------------------------------------------------
    def _records(self, members: list[str]) -> Iterator[tuple[ShareGroupKey, dict[str, Any]]]:
        """The group's records as they are now: its own, then those of ``members``."""
        g = self.group_id
        yield ShareGroupKey(GROUP_METADATA, g), {"Epoch": self.group_epoch, "MetadataHash": self.metadata_hash}
        yield ShareGroupKey(TARGET_METADATA, g), {"AssignmentEpoch": self.assignment_epoch}
        yield ShareGroupKey(STATE_METADATA, g), {"InitializingTopics": [], "DeletingTopics": [], "InitializedTopics": [
            {"TopicId": tid, "TopicName": name, "Partitions": sorted(ps), "CreateTimestamp": -1}
            for tid, (name, ps) in sorted(self.state_topics.items())]}
        for member_id in members:
            m = self.members.get(member_id)
            if m is None:
                continue
            yield ShareGroupKey(MEMBER_METADATA, g, member_id), {
                "RackId": m.rack_id, "ClientId": m.client_id, "ClientHost": m.client_host,
                "SubscribedTopicNames": list(m.topic_names)}
            yield ShareGroupKey(TARGET_MEMBER, g, member_id), {
                "TopicPartitions": assignment_to_wire(self.target.get(member_id, {}))}
            yield ShareGroupKey(CURRENT_ASSIGNMENT, g, member_id), {
                "MemberEpoch": m.member_epoch, "PreviousMemberEpoch": m.previous_epoch, "State": STABLE,
                "AssignedPartitions": assignment_to_wire(m.assigned)}

    def take_records(self, member_id: str | None = None) -> list[tuple[ShareGroupKey, dict[str, Any] | None]]:
        """The records of what changed since the last call (None values: tombstones).  When the
        epochs did not move only ``member_id``'s records can have changed; else all are compared."""
        epochs = (self.group_epoch, self.assignment_epoch)
        whole = epochs != self._written_epochs or member_id is None
        self._written_epochs = epochs
        members = list(self.members) if whole else [member_id] if member_id else []
        now = dict(self._records(members))
        gone = [k for k in self._written if k.member is not None and k.member not in self.members] if whole else []
        out: list[tuple[ShareGroupKey, dict[str, Any] | None]] = [
            (k, None) for k in sorted(gone, key=lambda k: -k.type)]       # current assignment first, as Kafka
        for k in gone:
            del self._written[k]
        for k, v in sorted(now.items(), key=lambda kv: _ORDER[kv[0].type]):
            if self._written.get(k) != v:
                self._written[k] = v
                out.append((k, v))
        return out

    def tombstones(self) -> list[tuple[ShareGroupKey, dict[str, Any] | None]]:
        """Every record of the group as a tombstone (the group is deleted): members' first."""
        keys = sorted(self._written, key=lambda k: (k.member is None, -k.type))
        self._written.clear()
        return [(k, None) for k in keys]

    def replay(self, key: ShareGroupKey, value: dict[str, Any] | None) -> None:
        """One record of the group (load); a group-metadata tombstone is the shard's to handle."""
        if value is None:
            self._written.pop(key, None)
        else:
            self._written[key] = value
        if key.type == GROUP_METADATA and value is not None:
            self.group_epoch, self.metadata_hash = value["Epoch"], value["MetadataHash"]
        elif key.type == TARGET_METADATA and value is not None:
            self.assignment_epoch = value["AssignmentEpoch"]
        elif key.type == STATE_METADATA:
            self.state_topics = {bytes(t["TopicId"]): (t["TopicName"], frozenset(t["Partitions"]))
                                 for t in (value or {}).get("InitializedTopics", [])}
        elif key.member is not None:
            self._replay_member(key.type, key.member, value)
        self._written_epochs = (self.group_epoch, self.assignment_epoch)

    def _replay_member(self, kind: int, member_id: str, value: dict[str, Any] | None) -> None:
        if kind == TARGET_MEMBER:
            if value is None:
                self.target.pop(member_id, None)
            else:
                self.target[member_id] = assignment_from_wire(value["TopicPartitions"])
            return
        if value is None:
            if kind == MEMBER_METADATA:
                self.members.pop(member_id, None)
            return
        m = self.members.setdefault(member_id, ShareMember(member_id))
        if kind == MEMBER_METADATA:
            m.rack_id, m.client_id, m.client_host = value["RackId"], value["ClientId"], value["ClientHost"]
            m.topic_names = tuple(sorted(value["SubscribedTopicNames"]))
        elif kind == CURRENT_ASSIGNMENT:
            m.member_epoch, m.previous_epoch = value["MemberEpoch"], value["PreviousMemberEpoch"]
            m.assigned = assignment_from_wire(value["AssignedPartitions"])

    def loaded(self, now_ms: int) -> None:
        """Loading is over: the loaded members' sessions start now."""
        for m in self.members.values():
            m.session_deadline_ms = now_ms + self.session_timeout_ms


_ORDER = {MEMBER_METADATA: 0, GROUP_METADATA: 1, TARGET_MEMBER: 2, TARGET_METADATA: 3, CURRENT_ASSIGNMENT: 4,
          STATE_METADATA: 5}
