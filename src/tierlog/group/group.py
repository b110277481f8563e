"""A classic consumer group: its members and its state (Kafka's ClassicGroup).

States and every legal transition (anything else is an AssertionError):

- Empty -> PreparingRebalance      a member joins
- Empty -> Dead                    the group is deleted (DeleteGroups, offsets expired)
- PreparingRebalance -> CompletingRebalance   the join phase completed with members
- PreparingRebalance -> Empty      the join phase completed with no member left
- CompletingRebalance -> Stable    the leader's assignment is stored (SyncGroup)
- CompletingRebalance -> PreparingRebalance   a member joins, leaves, changes or times out
- Stable -> PreparingRebalance     a member joins, leaves, changes its protocols or expires

Kafka's table also lets PreparingRebalance, CompletingRebalance, Stable and Dead
go to Dead; tierlog deletes only Empty groups (a shard that stops being
coordinator is dropped whole, its groups need no state), so those are illegal here.

A group loaded from ``__consumer_offsets`` starts in Stable (members stored)
or Empty.  The generation grows by one each time the join phase completes.
Members that joined through the two-step join (JoinGroup v4+) but have not
rejoined with their id yet are ``pending``: they count against
group.max.size and expire after their session timeout.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["CLASSIC", "ClassicGroup", "GroupState", "Member"]

#: the group type of this module's groups (ListGroups v5 GroupType); KIP-848 groups will be "consumer"
CLASSIC = "classic"


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState
_LEGAL = {
    _S.EMPTY: {_S.PREPARING_REBALANCE, _S.DEAD},
    _S.PREPARING_REBALANCE: {_S.COMPLETING_REBALANCE, _S.EMPTY},
    _S.COMPLETING_REBALANCE: {_S.STABLE, _S.PREPARING_REBALANCE},
    _S.STABLE: {_S.PREPARING_REBALANCE},
    _S.DEAD: set(),
}


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]          # (name, metadata), the member's order of preference
    assignment: bytes = b""
    join_token: object = None                   # a JoinGroup waiting for the join phase to end
    join_version: int = 0
    sync_token: object = None                   # a SyncGroup waiting for the leader's assignment
    heartbeat_deadline_ms: int = 0
    is_new: bool = False                        # joined during this rebalance (Kafka's isNew)

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)      # group.instance.id -> member id
    pending: dict[str, int] = field(default_factory=dict)             # member id -> expiry (ms)
    state_timestamp_ms: int = -1
    rebalance_deadline_ms: int | None = None     # PreparingRebalance: the join phase ends; Completing: syncs due
    initial_delay: tuple[int, int] | None = None     # (delay ms, latest end ms) of a new group's first join phase
    new_member_added: bool = False                   # a member joined since the initial delay was last set
    type: str = CLASSIC

    def transition(self, target: GroupState, now_ms: int) -> None:
        assert target in _LEGAL[self.state], f"group {self.group_id}: illegal {self.state.value} -> {target.value}"
        self.state = target
        self.state_timestamp_ms = now_ms

    def is_empty(self) -> bool:
        return not self.members

    def size(self) -> int:
        return len(self.members) + len(self.pending)

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static(self, old_id: str, new_id: str) -> Member:
        """A restarted static member takes its instance's place under a new member id (KIP-345)."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        assert member.group_instance_id is not None, "only a static member is replaced"
        self.static_members[member.group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def supports(self, protocol_type: str, names: list[str]) -> bool:
        """Whether a member with these protocols may join (Kafka's supportsProtocols)."""
        if not self.members:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        return bool(set(names) & self.candidate_protocols())

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; the most votes wins (ties: first seen)."""
        candidates = self.candidate_protocols()
        assert candidates, f"group {self.group_id}: no protocol common to all members"
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = next(name for name in m.protocol_names() if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def all_joined(self) -> bool:
        return not self.pending and all(m.join_token is not None for m in self.members.values())

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None when not known."""
        if self.protocol_type != "consumer" or self.protocol is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = consumer_subscription_topics(m.metadata(self.protocol))
            if parsed is None:
                return None
            topics |= parsed
        return topics


def consumer_subscription_topics(metadata: bytes) -> set[str] | None:
    """The topics of a ConsumerProtocolSubscription (int16 version, [string] topics, ...); None if unreadable."""
    try:
        pos = 2
        count = int.from_bytes(metadata[pos:pos + 4], "big", signed=True)
        pos += 4
        topics = set()
        for _ in range(max(count, 0)):
            n = int.from_bytes(metadata[pos:pos + 2], "big", signed=True)
            pos += 2
            if n < 0 or pos + n > len(metadata):
                return None
            topics.add(metadata[pos:pos + n].decode())
            pos += n
        return topics
    except (UnicodeDecodeError, ValueError):
        return None
