"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat, leaving, timeouts, describing.

Sans-IO like ``classic.py``: each function takes the shard's groups, the
request (a dict in the schema's names, plus ``client_id`` / ``client_host``),
a :class:`~.classic.Ctx` and the :class:`~.consumer_group.TopicsView`; it
changes the group, puts records in ``c.out.records`` and returns the answer.
The rules (Kafka's):

- Validation, INVALID_REQUEST: empty GroupId; MemberEpoch 0 without
  RebalanceTimeoutMs, without SubscribedTopicNames / Regex, or with owned
  partitions other than []; a non-zero epoch without MemberId; an epoch below
  -2; epoch -2 without InstanceId.  A regex Python cannot compile (or longer
  than 1000 chars) -> INVALID_REGULAR_EXPRESSION; a ServerAssignor not in
  group.consumer.assignors -> UNSUPPORTED_ASSIGNOR.
- Joining (epoch 0) creates the group, or takes over an empty classic group
  (its metadata is tombstoned); a classic group with members ->
  GROUP_ID_NOT_FOUND.  A new member beyond group.consumer.max.size ->
  GROUP_MAX_SIZE_REACHED.  The member id is the client's (Kafka 4 clients
  generate it), else the coordinator makes one.  A static member (InstanceId)
  replaces one that left with epoch -2, keeping its assignment; an instance id
  held by an active member -> UNRELEASED_INSTANCE_ID.
- Heartbeats (epoch > 0): unknown member -> UNKNOWN_MEMBER_ID; an epoch newer
  than the member's, or older unless it is the member's previous epoch and its
  owned partitions are a subset of its assignment (a lost response) ->
  FENCED_MEMBER_EPOCH.
- The group epoch is bumped when a member joins, leaves or changes its
  subscription or assignor, and when the subscribed topics' partition counts
  (or the topics a regex matches) change; the target assignment is then
  recomputed by the preferred assignor and the member reconciled
  (``reconcile.py``).  The answer carries the assignment on a join, when it
  changed, or when the owned partitions reported differ from it.
- Leaving: epoch -1 removes the member; epoch -2 (static) keeps it and its
  partitions, at epoch -2, until its session expires or its instance returns.
- Timeouts: a member not heard from within group.consumer.session.timeout.ms,
  or that did not revoke within its rebalance timeout, is removed (fenced).
"""
from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from typing import Any

from tierlog.protocol.errors import ErrorCode

from .assignors import ASSIGNORS, MemberSpec
from .classic import Ctx
from .consumer_group import MAX_REGEX_LENGTH, ConsumerGroup, ConsumerMember, TopicsView
from .group import ClassicGroup
from .log_records import GroupKey, group_metadata_record
from .reconcile import UNREVOKED_PARTITIONS, CurrentAssignment, reconcile

__all__ = ["LEAVE_EPOCH", "STATIC_LEAVE_EPOCH", "describe", "heartbeat", "tick"]

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2


def _error(code: int, message: str | None = None) -> dict[str, Any]:
    return {"ErrorCode": code, "ErrorMessage": message, "MemberId": None, "MemberEpoch": 0,
            "HeartbeatIntervalMs": 0, "Assignment": None}


def _validate(req: dict[str, Any], c: Ctx) -> dict[str, Any] | None:
    epoch, member_id = req["MemberEpoch"], req["MemberId"]
    bad = None
    if not req["GroupId"]:
        bad = "GroupId can't be empty."
    elif epoch < STATIC_LEAVE_EPOCH:
        bad = f"MemberEpoch {epoch} is invalid."
    elif epoch != 0 and not member_id:
        bad = "MemberId can't be empty."
    elif epoch == STATIC_LEAVE_EPOCH and req.get("InstanceId") is None:
        bad = "InstanceId can't be null."
    elif epoch == 0 and req.get("RebalanceTimeoutMs", -1) == -1:
        bad = "RebalanceTimeoutMs must be provided in first request."
    elif epoch == 0 and req.get("TopicPartitions") != []:
        bad = "TopicPartitions must be empty when (re-)joining."
    elif epoch == 0 and req.get("SubscribedTopicNames") is None and req.get("SubscribedTopicRegex") is None:
        bad = "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
    if bad:
        return _error(ErrorCode.INVALID_REQUEST, bad)
    regex = req.get("SubscribedTopicRegex")
    if regex is not None and not _valid_regex(regex):
        return _error(ErrorCode.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex {regex[:100]!r} is invalid.")
    assignor = req.get("ServerAssignor")
    if assignor is not None and assignor not in c.config.consumer_assignors:
        return _error(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor[:100]} is not supported.")
    return None


def _valid_regex(regex: str) -> bool:
    if len(regex) > MAX_REGEX_LENGTH:
        return False
    try:
        re.compile(regex)
    except (re.error, RecursionError):
        return False
    return True


# -- ConsumerGroupHeartbeat ------------------------------------------------------------------

def heartbeat(groups: dict[str, ClassicGroup | ConsumerGroup], req: dict[str, Any], c: Ctx,
              view: TopicsView) -> dict[str, Any]:
    invalid = _validate(req, c)
    if invalid:
        return invalid
    if req["MemberEpoch"] in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        return _leave(groups.get(req["GroupId"]), req, c)
    group, error = _group_for(groups, req, c)
    if error:
        return error
    assert group is not None                    # _group_for gives a group or an error
    member, error, bump = _member_for(group, req, c)
    if error:
        return error
    assert member is not None                   # likewise _member_for
    before = member.current
    bump = _update_subscription(member, req) or bump
    member.session_deadline_ms = c.now_ms + c.config.consumer_session_timeout_ms
    if bump:
        c.out.records += group.put_member(member)
    _advance(group, bump, c, view)
    reported = None if req.get("TopicPartitions") is None else {
        bytes(t["TopicId"]): frozenset(t["Partitions"]) for t in req["TopicPartitions"]}
    _reconcile(group, member, reported, c)
    send = req["MemberEpoch"] == 0 or member.current.assigned != before.assigned or (
        reported is not None and {t: p for t, p in reported.items() if p} != member.current.assigned)
    return {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "MemberId": member.member_id,
            "MemberEpoch": member.epoch, "HeartbeatIntervalMs": c.config.consumer_heartbeat_interval_ms,
            "Assignment": {"TopicPartitions": _to_wire(member.current.assigned)} if send else None}


def _group_for(groups: dict[str, ClassicGroup | ConsumerGroup], req: dict[str, Any],
               c: Ctx) -> tuple[ConsumerGroup | None, dict[str, Any] | None]:
    group_id = req["GroupId"]
    group = groups.get(group_id)
    if isinstance(group, ConsumerGroup):
        return group, None
    if group is not None and not group.is_empty():
        return None, _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
    if req["MemberEpoch"] != 0:
        return None, _error(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} has no member {req['MemberId']}.")
    if isinstance(group, ClassicGroup):          # an empty classic group (or offsets only) becomes a consumer group
        c.out.records.append(group_metadata_record(GroupKey(group_id), None))
    group = groups[group_id] = ConsumerGroup(group_id, empty_since_ms=c.now_ms)
    return group, None


def _member_for(group: ConsumerGroup, req: dict[str, Any],
                c: Ctx) -> tuple[ConsumerMember | None, dict[str, Any] | None, bool]:
    """(member, error, new): the member the heartbeat is from, created or taken over on a join."""
    member_id, epoch, instance = req["MemberId"], req["MemberEpoch"], req.get("InstanceId")
    if epoch != 0:
        member = group.members.get(member_id)
        if member is None:
            return None, _error(ErrorCode.UNKNOWN_MEMBER_ID, f"Unknown member {member_id}."), False
        if instance is not None and group.static_members.get(instance) != member_id:
            return None, _error(ErrorCode.FENCED_INSTANCE_ID, f"Instance {instance} has another member."), False
        return (member, None, False) if _epoch_ok(member, req) else (
            None, _error(ErrorCode.FENCED_MEMBER_EPOCH, f"Member epoch {epoch} is fenced; it is {member.epoch}."),
            False)
    held = group.static_members.get(instance) if instance is not None else None
    if held is not None and held != member_id:
        old = group.members[held]
        if old.epoch != STATIC_LEAVE_EPOCH:
            return None, _error(ErrorCode.UNRELEASED_INSTANCE_ID, f"Instance {instance} is still in use."), False
        return _replace_static(group, old, member_id or c.new_member_id(req["client_id"]), c), None, False
    existing = group.members.get(member_id) if member_id else None
    if existing is not None:                     # a member rejoining under its id starts again from nothing
        c.out.records += group.set_current(existing, CurrentAssignment())
        return existing, None, True
    if len(group.members) >= c.config.consumer_max_size:
        return None, _error(ErrorCode.GROUP_MAX_SIZE_REACHED, f"Group {group.group_id} is full."), False
    member = ConsumerMember(member_id or c.new_member_id(req["client_id"]), instance_id=instance,
                            client_id=req["client_id"], client_host=req["client_host"])
    return member, None, True


def _epoch_ok(member: ConsumerMember, req: dict[str, Any]) -> bool:
    epoch = req["MemberEpoch"]
    if epoch == member.epoch:
        return True
    if epoch > member.epoch or epoch != member.current.previous_epoch or req.get("TopicPartitions") is None:
        return False
    assigned = member.current.assigned
    return all(set(t["Partitions"]) <= assigned.get(bytes(t["TopicId"]), frozenset()) for t in req["TopicPartitions"])


def _replace_static(group: ConsumerGroup, old: ConsumerMember, new_id: str, c: Ctx) -> ConsumerMember:
    """A static member's instance returns under a new member id: it gets the old member's partitions."""
    target = group.targets.get(old.member_id)
    c.out.records += group.remove_member(old.member_id, c.now_ms)
    member = ConsumerMember(new_id, old.instance_id, old.rack_id, old.client_id, old.client_host, old.topic_names,
                            old.topic_regex, old.rebalance_timeout_ms, old.server_assignor)
    c.out.records += group.put_member(member)
    c.out.records += group.set_current(member, CurrentAssignment(0, -1, old.current.state, old.current.assigned, {}))
    if target is not None:
        c.out.records += group.set_targets({**group.targets, new_id: target}, group.assignment_epoch)
    return member


def _update_subscription(member: ConsumerMember, req: dict[str, Any]) -> bool:
    """Apply the heartbeat's non-null fields; whether anything the assignment depends on changed."""
    changed = False
    if req.get("SubscribedTopicNames") is not None:
        names = tuple(sorted(set(req["SubscribedTopicNames"])))
        changed |= names != member.topic_names
        member.topic_names = names
    if req.get("SubscribedTopicRegex") is not None:
        regex = req["SubscribedTopicRegex"] or None
        changed |= regex != member.topic_regex
        member.topic_regex = regex
    if req.get("ServerAssignor") is not None:
        changed |= req["ServerAssignor"] != member.server_assignor
        member.server_assignor = req["ServerAssignor"]
    if req.get("RackId") is not None:
        changed |= req["RackId"] != member.rack_id
        member.rack_id = req["RackId"]
    if req.get("RebalanceTimeoutMs", -1) != -1:
        changed |= req["RebalanceTimeoutMs"] != member.rebalance_timeout_ms
        member.rebalance_timeout_ms = req["RebalanceTimeoutMs"]
    return changed


def _advance(group: ConsumerGroup, bump: bool, c: Ctx, view: TopicsView) -> None:
    """Bump the group epoch if needed (membership or metadata changed), then the target assignment."""
    if bump or group.seen_view_version != view.version:
        group.seen_view_version = view.version
        subscription = {n: view.topics[n] for m in group.members.values() for n in m.subscribed(view)}
        if subscription != group.subscription:
            c.out.records += group.set_subscription(subscription)
            bump = True
    if bump:
        c.out.records += group.bump_epoch()
    if group.group_epoch > group.assignment_epoch:
        ids = {name: tid for name, (tid, _) in group.subscription.items()}
        specs = {m.member_id: MemberSpec(frozenset(ids[n] for n in m.subscribed(view) if n in ids),
                                         group.targets.get(m.member_id, {})) for m in group.members.values()}
        topics = dict(group.subscription.values())
        assign = ASSIGNORS[group.preferred_assignor(c.config.consumer_assignors[0])]
        c.out.records += group.set_targets(assign(specs, topics), group.group_epoch)


def _reconcile(group: ConsumerGroup, member: ConsumerMember, reported: Mapping[bytes, frozenset[int]] | None,
               c: Ctx) -> None:
    nxt = reconcile(member.current, group.assignment_epoch, group.targets.get(member.member_id, {}),
                    lambda tid, p: (tid, p) in group.owners, reported)
    if nxt != member.current:
        c.out.records += group.set_current(member, nxt)
    if nxt.state != UNREVOKED_PARTITIONS:
        member.revocation_deadline_ms = None
    elif member.revocation_deadline_ms is None:
        member.revocation_deadline_ms = c.now_ms + max(member.rebalance_timeout_ms, 0)


def _to_wire(assignment: dict[bytes, frozenset[int]]) -> list[dict[str, Any]]:
    return [{"TopicId": tid, "Partitions": sorted(ps)} for tid, ps in sorted(assignment.items()) if ps]


# -- leaving and timeouts -----------------------------------------------------------------------

def _leave(group: ClassicGroup | ConsumerGroup | None, req: dict[str, Any], c: Ctx) -> dict[str, Any]:
    member_id, epoch = req["MemberId"], req["MemberEpoch"]
    if not isinstance(group, ConsumerGroup):
        return _error(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {req['GroupId']} has no member {member_id}.")
    instance = req.get("InstanceId")
    if instance is not None and member_id not in group.members:
        member_id = group.static_members.get(instance, member_id)
    member = group.members.get(member_id)
    if member is None:
        return _error(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {req['GroupId']} has no member {member_id}.")
    if epoch == STATIC_LEAVE_EPOCH and member.instance_id is not None:
        c.out.records += group.set_current(member, CurrentAssignment(STATIC_LEAVE_EPOCH, member.epoch,
                                                                     member.current.state, member.current.assigned, {}))
    else:
        fence(group, member_id, c)
    return {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "MemberId": member_id, "MemberEpoch": epoch,
            "HeartbeatIntervalMs": 0, "Assignment": None}


def fence(group: ConsumerGroup, member_id: str, c: Ctx) -> None:
    """Remove a member; the others get its partitions at the next target assignment."""
    c.out.records += group.remove_member(member_id, c.now_ms)
    c.out.records += group.bump_epoch()
    group.seen_view_version = None          # the subscribed topics are recomputed at the next heartbeat


def tick(group: ConsumerGroup, c: Ctx) -> None:
    for m in list(group.members.values()):
        revoke_late = m.revocation_deadline_ms is not None and m.revocation_deadline_ms <= c.now_ms
        if m.session_deadline_ms <= c.now_ms or revoke_late:
            fence(group, m.member_id, c)


def next_deadline_ms(group: ConsumerGroup) -> int | None:
    """When ``tick`` next has something to do for the group (None: nothing is due)."""
    due = [m.session_deadline_ms for m in group.members.values()]
    due += [m.revocation_deadline_ms for m in group.members.values() if m.revocation_deadline_ms is not None]
    return min(due, default=None)


# -- describing -------------------------------------------------------------------------------

def describe(group: ConsumerGroup, view: TopicsView, default_assignor: str) -> dict[str, Any]:
    """One ConsumerGroupDescribe group."""
    names = {tid: name for name, (tid, _) in view.topics.items()}

    def wire(assignment: Mapping[bytes, frozenset[int]]) -> dict[str, Any]:
        return {"TopicPartitions": [{"TopicId": tid, "TopicName": names.get(tid, ""), "Partitions": sorted(ps)}
                                    for tid, ps in sorted(assignment.items()) if ps]}

    return {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "GroupId": group.group_id, "GroupState": group.state,
            "GroupEpoch": group.group_epoch, "AssignmentEpoch": group.assignment_epoch,
            "AssignorName": group.preferred_assignor(default_assignor),
            "Members": [{"MemberId": m.member_id, "InstanceId": m.instance_id, "RackId": m.rack_id,
                         "MemberEpoch": m.epoch, "ClientId": m.client_id, "ClientHost": m.client_host,
                         "SubscribedTopicNames": list(m.topic_names), "SubscribedTopicRegex": m.topic_regex,
                         "Assignment": wire(m.current.assigned), "TargetAssignment": wire(group.targets.get(
                             m.member_id, {})), "MemberType": 1} for m in group.members.values()]}


def describe_classic(group: ConsumerGroup, view: TopicsView, default_assignor: str) -> dict[str, Any]:
    """DescribeGroups' view of a consumer group: members' subscriptions and assignments in the
    classic consumer protocol's encoding (ConsumerProtocolSubscription / Assignment v0)."""
    names = {tid: name for name, (tid, _) in view.topics.items()}
    return {"ErrorCode": ErrorCode.NONE, "GroupId": group.group_id, "GroupState": group.state,
            "ProtocolType": "consumer", "ProtocolData": group.preferred_assignor(default_assignor),
            "Members": [{"MemberId": m.member_id, "GroupInstanceId": m.instance_id, "ClientId": m.client_id,
                         "ClientHost": m.client_host, "MemberMetadata": _subscription_bytes(sorted(m.subscribed(view))),
                         "MemberAssignment": _assignment_bytes(
                             {names[t]: ps for t, ps in m.current.assigned.items() if t in names})}
                        for m in group.members.values()]}


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _subscription_bytes(topics: list[str]) -> bytes:
    return struct.pack(">hi", 0, len(topics)) + b"".join(_str(t) for t in topics) + struct.pack(">i", -1)


def _assignment_bytes(assignment: dict[str, frozenset[int]]) -> bytes:
    out = [struct.pack(">hi", 0, len(assignment))]
    for topic, ps in sorted(assignment.items()):
        out.append(_str(topic) + struct.pack(f">i{len(ps)}i", len(ps), *sorted(ps)))
    out.append(struct.pack(">i", -1))
    return b"".join(out)
