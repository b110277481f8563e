"""A consumer-protocol group (KIP-848): members, epochs, target and current assignments.

The group epoch grows whenever what the assignment depends on changes (a
member joins, leaves or changes its subscription; a subscribed topic's
partition count changes or a topic matching a member's regex appears).
The target assignment is recomputed when the group epoch is newer than the
assignment epoch, then carries the group epoch.  Each member converges to
its target at its own pace (``reconcile.py``); its member epoch is the
assignment epoch it has reached.

The group's state is derived (Kafka's ConsumerGroupState): Empty (no
members), Assigning (group epoch > assignment epoch), Reconciling (a member
has not reached the assignment epoch or is not STABLE), Stable.  A deleted
group is removed from its shard (its tombstones written), so Dead is only
reported for unknown groups.

``owners`` maps each (topic id, partition) a member holds, assigned or
pending revocation, to that member: the partition goes to nobody else until
it is released.  Every change of the group here has its record
(``consumer_records``): :meth:`ConsumerGroup.replay` rebuilds the same group
from them on load.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import consumer_records as cr
from .consumer_records import ConsumerKey, assignment_from_wire, assignment_to_wire
from .reconcile import STABLE, CurrentAssignment

__all__ = ["CONSUMER", "ConsumerGroup", "ConsumerMember", "TopicsView"]

#: the group type of these groups (ListGroups v5 GroupType, ConsumerGroupDescribe)
CONSUMER = "consumer"
EMPTY, ASSIGNING, RECONCILING, STABLE_STATE = "Empty", "Assigning", "Reconciling", "Stable"
MAX_REGEX_LENGTH = 1000


@dataclass(frozen=True)
class TopicsView:
    """The topics the coordinator sees (from the broker's metadata image): name -> (id, partitions)."""
    topics: dict[str, tuple[bytes, int]]
    version: int = 0                        # changes whenever ``topics`` may have


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topic_names: tuple[str, ...] = ()
    topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    current: CurrentAssignment = field(default_factory=CurrentAssignment)
    session_deadline_ms: int = 0
    revocation_deadline_ms: int | None = None      # UNREVOKED_PARTITIONS: fenced if not revoked by then

    @property
    def epoch(self) -> int:
        return self.current.epoch

    def metadata_value(self) -> dict[str, Any]:
        return {"InstanceId": self.instance_id, "RackId": self.rack_id, "ClientId": self.client_id,
                "ClientHost": self.client_host, "SubscribedTopicNames": list(self.topic_names),
                "SubscribedTopicRegex": self.topic_regex, "RebalanceTimeoutMs": self.rebalance_timeout_ms,
                "ServerAssignor": self.server_assignor}

    def subscribed(self, view: TopicsView) -> set[str]:
        names = {n for n in self.topic_names if n in view.topics}
        if self.topic_regex:
            pattern = re.compile(self.topic_regex)
            names |= {n for n in view.topics if pattern.fullmatch(n) and not n.startswith("__")}
        return names


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)        # instance id -> member id
    targets: dict[str, dict[bytes, frozenset[int]]] = field(default_factory=dict)
    subscription: dict[str, tuple[bytes, int]] = field(default_factory=dict)   # topic name -> (id, partitions)
    owners: dict[tuple[bytes, int], str] = field(default_factory=dict)
    empty_since_ms: int = -1
    seen_view_version: int | None = None
    type: str = CONSUMER

    # -- derived -------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(m.epoch != self.assignment_epoch or m.current.state != STABLE for m in self.members.values()):
            return RECONCILING
        return STABLE_STATE

    def is_empty(self) -> bool:
        return not self.members

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members ask for (ties: the name first in order), else ``default``."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        return max(sorted(votes), key=lambda n: votes[n]) if votes else default

    def subscribed_topics(self) -> set[str]:
        return set(self.subscription)

    # -- changes, each returning its records ----------------------------------------------------------
    def put_member(self, member: ConsumerMember) -> list[tuple[bytes, bytes | None]]:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        return [cr.encode_consumer_record(ConsumerKey(cr.MEMBER_METADATA, self.group_id, member.member_id),
                                          member.metadata_value())]

    def set_current(self, member: ConsumerMember, current: CurrentAssignment) -> list[tuple[bytes, bytes | None]]:
        self._release(member)
        member.current = current
        for tid, ps in current.owned().items():
            for p in ps:
                self.owners[(tid, p)] = member.member_id
        return [cr.encode_consumer_record(ConsumerKey(cr.CURRENT_ASSIGNMENT, self.group_id, member.member_id),
                                          _current_value(current))]

    def remove_member(self, member_id: str, now_ms: int) -> list[tuple[bytes, bytes | None]]:
        member = self.members.pop(member_id)
        self._release(member)
        self.targets.pop(member_id, None)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        if not self.members:
            self.empty_since_ms = now_ms
        return [cr.encode_consumer_record(ConsumerKey(t, self.group_id, member_id), None)
                for t in (cr.CURRENT_ASSIGNMENT, cr.TARGET_MEMBER, cr.MEMBER_METADATA)]

    def bump_epoch(self) -> list[tuple[bytes, bytes | None]]:
        self.group_epoch += 1
        return [cr.encode_consumer_record(ConsumerKey(cr.GROUP_METADATA, self.group_id), {"Epoch": self.group_epoch})]

    def set_subscription(self, subscription: dict[str, tuple[bytes, int]]) -> list[tuple[bytes, bytes | None]]:
        self.subscription = dict(subscription)
        topics = [{"TopicId": tid, "TopicName": name, "NumPartitions": n, "PartitionMetadata": []}
                  for name, (tid, n) in sorted(subscription.items())]
        return [cr.encode_consumer_record(ConsumerKey(cr.PARTITION_METADATA, self.group_id), {"Topics": topics})]

    def set_targets(self, targets: dict[str, dict[bytes, frozenset[int]]],
                    epoch: int) -> list[tuple[bytes, bytes | None]]:
        records = []
        for member_id, target in targets.items():
            if self.targets.get(member_id) != target:
                self.targets[member_id] = target
                records.append(cr.encode_consumer_record(ConsumerKey(cr.TARGET_MEMBER, self.group_id, member_id),
                                                         {"TopicPartitions": assignment_to_wire(target)}))
        self.assignment_epoch = epoch
        records.append(cr.encode_consumer_record(ConsumerKey(cr.TARGET_METADATA, self.group_id),
                                                 {"AssignmentEpoch": epoch}))
        return records

    def delete_records(self) -> list[tuple[bytes, bytes | None]]:
        """The tombstones of an empty group's records (its offsets are the shard's)."""
        return [cr.encode_consumer_record(ConsumerKey(t, self.group_id), None)
                for t in (cr.TARGET_METADATA, cr.PARTITION_METADATA, cr.GROUP_METADATA)]

    def _release(self, member: ConsumerMember) -> None:
        for tid, ps in member.current.owned().items():
            for p in ps:
                if self.owners.get((tid, p)) == member.member_id:
                    del self.owners[(tid, p)]

    # -- loading ------------------------------------------------------------------------------
    def replay(self, key: ConsumerKey, value: dict[str, Any] | None) -> None:
        """Apply one record (load); the owners are rebuilt by :meth:`loaded`."""
        t = key.type
        if t == cr.GROUP_METADATA:
            self.group_epoch = value["Epoch"] if value else 0
        elif t == cr.PARTITION_METADATA:
            self.subscription = {x["TopicName"]: (bytes(x["TopicId"]), x["NumPartitions"])
                                 for x in (value or {}).get("Topics", [])}
        elif t == cr.TARGET_METADATA:
            self.assignment_epoch = value["AssignmentEpoch"] if value else 0
        elif t == cr.MEMBER_METADATA:
            self._replay_member(_member_of(key), value)
        elif t == cr.TARGET_MEMBER:
            if value is None:
                self.targets.pop(_member_of(key), None)
            else:
                self.targets[_member_of(key)] = assignment_from_wire(value["TopicPartitions"])
        elif t == cr.CURRENT_ASSIGNMENT and key.member in self.members:
            self.members[key.member].current = _current_from_value(value) if value else CurrentAssignment()

    def _replay_member(self, member_id: str, value: dict[str, Any] | None) -> None:
        if value is None:
            member = self.members.pop(member_id, None)
            if member is not None and member.instance_id is not None:
                self.static_members.pop(member.instance_id, None)
            return
        member = self.members.setdefault(member_id, ConsumerMember(member_id))
        member.instance_id, member.rack_id = value["InstanceId"], value["RackId"]
        member.client_id, member.client_host = value["ClientId"], value["ClientHost"]
        member.topic_names = tuple(value["SubscribedTopicNames"])
        member.topic_regex, member.server_assignor = value["SubscribedTopicRegex"], value["ServerAssignor"]
        member.rebalance_timeout_ms = value["RebalanceTimeoutMs"]
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member_id

    def loaded(self, now_ms: int, session_timeout_ms: int) -> None:
        self.owners.clear()
        for m in self.members.values():
            m.session_deadline_ms = now_ms + session_timeout_ms
            for tid, ps in m.current.owned().items():
                for p in ps:
                    self.owners[(tid, p)] = m.member_id
        if not self.members:
            self.empty_since_ms = now_ms


def _member_of(key: ConsumerKey) -> str:
    """The member id of a member's record key (its type has one)."""
    assert key.member is not None, key
    return key.member


def _current_value(c: CurrentAssignment) -> dict[str, Any]:
    return {"MemberEpoch": c.epoch, "PreviousMemberEpoch": c.previous_epoch, "State": c.state,
            "AssignedPartitions": assignment_to_wire(c.assigned),
            "PartitionsPendingRevocation": assignment_to_wire(c.pending_revocation)}


def _current_from_value(v: dict[str, Any]) -> CurrentAssignment:
    return CurrentAssignment(v["MemberEpoch"], v["PreviousMemberEpoch"], v["State"],
                             assignment_from_wire(v["AssignedPartitions"]),
                             assignment_from_wire(v["PartitionsPendingRevocation"]))
