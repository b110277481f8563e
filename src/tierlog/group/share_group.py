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
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from tierlog.protocol.errors import ErrorCode

from .consumer_group import TopicsView

__all__ = ["SIMPLE_ASSIGNOR", "ShareGroup", "ShareHeartbeat", "ShareMember", "simple_assign"]

SIMPLE_ASSIGNOR = "simple"
JOIN, LEAVE = 0, -1
Assignment = dict[bytes, frozenset[int]]          # topic id -> partitions


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int = 0
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
    _topics_seen: tuple[tuple[str, bytes, int], ...] = ()     # the subscribed topics' (name, id, partitions) the target is of

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
        seen = tuple((n, *topics.topics[n]) for n in names if n in topics.topics)
        if seen != self._topics_seen:
            self._topics_seen = seen
            if self.assignment_epoch == self.group_epoch:
                self.group_epoch += 1            # a subscribed topic was created, deleted or grown
        if self.assignment_epoch != self.group_epoch:
            self.target = simple_assign({m.member_id: m.topic_names for m in self.members.values()}, topics)
            self.assignment_epoch = self.group_epoch

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
