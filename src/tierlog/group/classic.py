"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and timeouts.

Sans-IO: each function takes the group, the request (a dict in the newest
schema's names), the caller's token and a :class:`Ctx` (settings, ``now_ms``,
the :class:`~.output.Output` being built, member id source); it changes the
group and puts answers and records in the output.  The rules (Kafka's):

- JoinGroup: session timeout outside [group.min.session.timeout.ms,
  group.max.session.timeout.ms] -> INVALID_SESSION_TIMEOUT; protocols the group
  cannot take -> INCONSISTENT_GROUP_PROTOCOL; a new member beyond group.max.size
  -> GROUP_MAX_SIZE_REACHED.  A new dynamic member at v4+ first gets
  MEMBER_ID_REQUIRED with its id (it is pending until it rejoins with it).  A
  static member (group.instance.id) restarting with a new id replaces the old
  one; in Stable with unchanged protocols it gets the current generation back
  without a rebalance (KIP-345); the old id is then FENCED_INSTANCE_ID.
- The join phase ends when every member has rejoined (or the rebalance timeout
  passes, dropping dynamic members that did not); a new group's first join
  phase waits group.initial.rebalance.delay.ms, extended while members keep
  arriving, up to the rebalance timeout.  Then the generation grows, the
  protocol is voted, the leader gets every member's metadata.
- SyncGroup: the leader's assignment is written as the group's metadata record,
  then each waiting member gets its own part.  If that write fails, the
  assignment is taken back and the group rebalances (``assignment_lost``).
  Members that do not sync within the rebalance timeout are removed (and the
  group rebalances).
- Heartbeat: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION, and
  REBALANCE_IN_PROGRESS while preparing a rebalance.  A member not heard from
  within its session timeout is removed (not while it waits in a join or sync).
- LeaveGroup removes members (by member id or, for static members, instance id).  A
  removal (LeaveGroup or an expired session) that leaves every remaining member
  joined ends the join phase at once, even within a new group's initial delay
  (Kafka's removeMemberAndUpdateClassicGroup): the last member leaving makes the
  group Empty right away, so DeleteGroups after the consumers' close() succeeds.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tierlog.protocol.errors import ErrorCode

from .group import ClassicGroup, GroupState, Member
from .group_config import GroupConfig
from .log_records import GroupKey, group_metadata_record
from .output import Output

if TYPE_CHECKING:
    from tierlog.protocol.typed.join_group import (
        JoinGroupResponse,
        JoinGroupResponseMember,
    )

__all__ = ["Ctx", "assignment_lost", "group_metadata_value", "heartbeat", "join", "leave", "sync", "tick"]

UNKNOWN_MEMBER = ""
_S = GroupState


@dataclass
class Ctx:
    config: GroupConfig
    now_ms: int
    out: Output
    new_member_id: Callable[[str], str]         # client id -> a fresh member id


# -- records -----------------------------------------------------------------------

def group_metadata_value(group: ClassicGroup) -> dict[str, Any]:
    return {
        "protocolType": group.protocol_type or "", "generation": group.generation,
        "protocol": group.protocol, "leader": group.leader_id if group.members else None,
        "currentStateTimestamp": group.state_timestamp_ms,
        "members": [{"memberId": m.member_id, "groupInstanceId": m.group_instance_id, "clientId": m.client_id,
                     "clientHost": m.client_host, "rebalanceTimeout": m.rebalance_timeout_ms,
                     "sessionTimeout": m.session_timeout_ms, "subscription": m.metadata(group.protocol),
                     "assignment": m.assignment} for m in group.members.values()],
    }


def _store(group: ClassicGroup, c: Ctx) -> None:
    c.out.records.append(group_metadata_record(GroupKey(group.group_id), group_metadata_value(group)))


# -- JoinGroup -----------------------------------------------------------------------

def join_error(code: int, member_id: str = UNKNOWN_MEMBER) -> JoinGroupResponse:
    return {"ErrorCode": code, "GenerationId": -1, "ProtocolType": None, "ProtocolName": None, "Leader": "",
            "SkipAssignment": False, "MemberId": member_id, "Members": []}


def join(group: ClassicGroup, req: dict[str, Any], token: object, c: Ctx) -> None:
    """``req``: JoinGroup fields plus ``client_id``, ``client_host``, ``version``."""
    session = req["SessionTimeoutMs"]
    if not c.config.min_session_timeout_ms <= session <= c.config.max_session_timeout_ms:
        return c.out.answer(token, join_error(ErrorCode.INVALID_SESSION_TIMEOUT, req["MemberId"]))
    names = [p["Name"] for p in req["Protocols"]]
    if not group.supports(req["ProtocolType"], names):
        return c.out.answer(token, join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req["MemberId"]))
    if group.state is _S.DEAD:
        return c.out.answer(token, join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, req["MemberId"]))
    if req["MemberId"] == UNKNOWN_MEMBER:
        return _join_new(group, req, token, c)
    return _join_known(group, req, token, c)


def _join_new(group: ClassicGroup, req: dict[str, Any], token: object, c: Ctx) -> None:
    if group.size() >= c.config.max_size:
        return c.out.answer(token, join_error(ErrorCode.GROUP_MAX_SIZE_REACHED))
    member_id = c.new_member_id(req["client_id"])
    instance = req.get("GroupInstanceId")
    if instance is not None:
        old_id = group.static_members.get(instance)
        if old_id is not None:
            return _replace_static(group, req, token, old_id, member_id, c)
    elif req["version"] >= 4:
        group.pending[member_id] = c.now_ms + req["SessionTimeoutMs"]
        return c.out.answer(token, join_error(ErrorCode.MEMBER_ID_REQUIRED, member_id))
    _add_and_rebalance(group, req, token, member_id, c)


def _new_member(req: dict[str, Any], member_id: str, token: object, c: Ctx) -> Member:
    rebalance = req.get("RebalanceTimeoutMs", -1)
    return Member(member_id, req.get("GroupInstanceId"), req["client_id"], req["client_host"],
                  rebalance if rebalance > 0 else req["SessionTimeoutMs"], req["SessionTimeoutMs"],
                  req["ProtocolType"], [(p["Name"], bytes(p["Metadata"])) for p in req["Protocols"]],
                  join_token=token, join_version=req["version"],
                  heartbeat_deadline_ms=c.now_ms + req["SessionTimeoutMs"], is_new=True)


def _add_and_rebalance(group: ClassicGroup, req: dict[str, Any], token: object, member_id: str, c: Ctx) -> None:
    group.pending.pop(member_id, None)
    group.add(_new_member(req, member_id, token, c))
    group.new_member_added = True
    _prepare_or_complete(group, c)


def _update(member: Member, req: dict[str, Any], token: object) -> None:
    rebalance = req.get("RebalanceTimeoutMs", -1)
    member.protocols = [(p["Name"], bytes(p["Metadata"])) for p in req["Protocols"]]
    member.session_timeout_ms = req["SessionTimeoutMs"]
    member.rebalance_timeout_ms = rebalance if rebalance > 0 else req["SessionTimeoutMs"]
    member.join_token, member.join_version = token, req["version"]


def _replace_static(group: ClassicGroup, req: dict[str, Any], token: object, old_id: str, new_id: str, c: Ctx) -> None:
    old = group.members[old_id]
    if old.join_token is not None:
        c.out.answer(old.join_token, join_error(ErrorCode.FENCED_INSTANCE_ID, old_id))
        old.join_token = None
    if old.sync_token is not None:
        c.out.answer(old.sync_token, _sync_answer(ErrorCode.FENCED_INSTANCE_ID, group))
        old.sync_token = None
    old_protocols = old.protocols
    member = group.replace_static(old_id, new_id)
    member.heartbeat_deadline_ms = c.now_ms + req["SessionTimeoutMs"]
    _update(member, req, token)
    if group.state is _S.STABLE:
        if member.protocols == old_protocols or group.select_protocol() == group.protocol:
            member.join_token = None
            _store(group, c)
            return c.out.answer(token, _join_answer(group, member, with_members=False,
                                                    leader=group.leader_id if group.leader_id != new_id else old_id))
        return _prepare_or_complete(group, c)
    if group.state is _S.COMPLETING_REBALANCE:
        return _prepare_rebalance(group, c)
    _try_complete_join(group, c)


def _join_known(group: ClassicGroup, req: dict[str, Any], token: object, c: Ctx) -> None:
    member_id, instance = req["MemberId"], req.get("GroupInstanceId")
    if member_id in group.pending:
        return _add_and_rebalance(group, req, token, member_id, c)
    error = _check_member(group, member_id, instance)
    if error:
        return c.out.answer(token, join_error(error, member_id))
    member = group.members[member_id]
    if group.state is _S.PREPARING_REBALANCE:
        _update(member, req, token)
        return _try_complete_join(group, c)
    same = member.protocols == [(p["Name"], bytes(p["Metadata"])) for p in req["Protocols"]]
    if group.state is _S.COMPLETING_REBALANCE and same:
        return c.out.answer(token, _join_answer(group, member, with_members=member_id == group.leader_id))
    if group.state is _S.STABLE and same and member_id != group.leader_id:
        return c.out.answer(token, _join_answer(group, member, with_members=False))
    _update(member, req, token)
    _prepare_or_complete(group, c)


def _check_member(group: ClassicGroup, member_id: str, instance: str | None) -> int:
    """UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID (Kafka's static member checks), else NONE."""
    if instance is not None:
        current = group.static_members.get(instance)
        if current is not None and current != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    if member_id not in group.members or group.state in (_S.EMPTY, _S.DEAD):
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.NONE


def _join_answer(group: ClassicGroup, member: Member, with_members: bool,
                 leader: str | None = None) -> JoinGroupResponse:
    members: list[JoinGroupResponseMember] = [{"MemberId": m.member_id, "GroupInstanceId": m.group_instance_id,
                                               "Metadata": m.metadata(group.protocol)}
               for m in group.members.values()] if with_members else []
    return {"ErrorCode": ErrorCode.NONE, "GenerationId": group.generation, "ProtocolType": group.protocol_type,
            "ProtocolName": group.protocol, "Leader": leader or group.leader_id or "", "SkipAssignment": False,
            "MemberId": member.member_id, "Members": members}


# -- rebalances -------------------------------------------------------------------------

def _prepare_or_complete(group: ClassicGroup, c: Ctx) -> None:
    if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY):
        _prepare_rebalance(group, c)
    else:
        _try_complete_join(group, c)


def _prepare_rebalance(group: ClassicGroup, c: Ctx) -> None:
    if group.state is _S.COMPLETING_REBALANCE:
        for m in group.members.values():
            m.assignment = b""
            if m.sync_token is not None:
                c.out.answer(m.sync_token, _sync_answer(ErrorCode.REBALANCE_IN_PROGRESS, group))
                m.sync_token = None
    timeout = group.max_rebalance_timeout_ms()
    delay = c.config.initial_rebalance_delay_ms
    if group.state is _S.EMPTY and delay > 0:
        group.initial_delay = (delay, c.now_ms + max(timeout, delay))
        group.rebalance_deadline_ms = c.now_ms + delay
        group.new_member_added = False
    else:
        group.initial_delay = None
        group.rebalance_deadline_ms = c.now_ms + timeout
    group.transition(_S.PREPARING_REBALANCE, c.now_ms)
    _try_complete_join(group, c)


def _try_complete_join(group: ClassicGroup, c: Ctx) -> None:
    if group.state is _S.PREPARING_REBALANCE and group.initial_delay is None and group.all_joined():
        _complete_join(group, c)


def _complete_join(group: ClassicGroup, c: Ctx) -> None:
    for m in [m for m in group.members.values() if m.join_token is None and m.group_instance_id is None]:
        group.remove(m.member_id)
    group.pending.clear()
    group.initial_delay = None
    joined = [m for m in group.members.values() if m.join_token is not None]
    if group.members and not joined:
        group.rebalance_deadline_ms = c.now_ms + group.max_rebalance_timeout_ms()   # wait for sessions to expire
        return
    if group.leader_id not in group.members or group.members[group.leader_id].join_token is None:
        group.leader_id = joined[0].member_id if joined else None
    group.generation += 1
    if not group.members:
        group.protocol = None
        group.transition(_S.EMPTY, c.now_ms)
        group.rebalance_deadline_ms = None
        return _store(group, c)
    group.protocol = group.select_protocol()
    group.transition(_S.COMPLETING_REBALANCE, c.now_ms)
    group.rebalance_deadline_ms = c.now_ms + group.max_rebalance_timeout_ms()      # syncs are due by then
    for m in group.members.values():
        if m.join_token is not None:
            c.out.answer(m.join_token, _join_answer(group, m, with_members=m.member_id == group.leader_id))
        m.join_token, m.is_new = None, False
        m.heartbeat_deadline_ms = c.now_ms + m.session_timeout_ms


# -- SyncGroup ---------------------------------------------------------------------------

def _sync_answer(code: int, group: ClassicGroup, assignment: bytes = b"") -> dict[str, Any]:
    ok = code == ErrorCode.NONE
    return {"ErrorCode": code, "ProtocolType": group.protocol_type if ok else None,
            "ProtocolName": group.protocol if ok else None, "Assignment": assignment}


def sync(group: ClassicGroup | None, req: dict[str, Any], token: object, c: Ctx) -> None:
    if group is None:
        return c.out.answer(token, {"ErrorCode": ErrorCode.UNKNOWN_MEMBER_ID, "Assignment": b""})
    member_id = req["MemberId"]
    error = _check_member(group, member_id, req.get("GroupInstanceId"))
    if not error and req["GenerationId"] != group.generation:
        error = ErrorCode.ILLEGAL_GENERATION
    if not error and (req.get("ProtocolType") not in (None, group.protocol_type)
                      or req.get("ProtocolName") not in (None, group.protocol)):
        error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if not error and group.state is _S.PREPARING_REBALANCE:
        error = ErrorCode.REBALANCE_IN_PROGRESS
    if error:
        return c.out.answer(token, _sync_answer(error, group))
    member = group.members[member_id]
    member.heartbeat_deadline_ms = c.now_ms + member.session_timeout_ms
    if group.state is _S.STABLE:
        return c.out.answer(token, _sync_answer(ErrorCode.NONE, group, member.assignment))
    member.sync_token = token
    if member_id == group.leader_id:
        _store_assignment(group, req["Assignments"], c)


def _store_assignment(group: ClassicGroup, assignments: list[dict[str, Any]], c: Ctx) -> None:
    given = {a["MemberId"]: bytes(a["Assignment"]) for a in assignments}
    for m in group.members.values():
        m.assignment = given.get(m.member_id, b"")
    group.transition(_S.STABLE, c.now_ms)
    group.rebalance_deadline_ms = None
    _store(group, c)
    c.out.on_failure.append((group.group_id, group.generation))
    for m in group.members.values():
        if m.sync_token is not None:
            c.out.answer(m.sync_token, _sync_answer(ErrorCode.NONE, group, m.assignment))
            m.sync_token = None


def assignment_lost(group: ClassicGroup, generation: int, c: Ctx) -> None:
    """The write of ``generation``'s assignment failed (Kafka's resetAndPropagateAssignmentWithError,
    then a rebalance): a member must not keep partitions a new coordinator would not know of."""
    if group.generation != generation or group.state is not _S.STABLE:
        return                      # a rebalance already moved on
    for m in group.members.values():
        m.assignment = b""
    _prepare_rebalance(group, c)


# -- Heartbeat and LeaveGroup --------------------------------------------------------------

def heartbeat(group: ClassicGroup | None, req: dict[str, Any], c: Ctx) -> int:
    if group is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    error = _check_member(group, req["MemberId"], req.get("GroupInstanceId"))
    if error:
        return error
    if req["GenerationId"] != group.generation:
        return ErrorCode.ILLEGAL_GENERATION
    member = group.members[req["MemberId"]]
    member.heartbeat_deadline_ms = c.now_ms + member.session_timeout_ms
    return ErrorCode.REBALANCE_IN_PROGRESS if group.state is _S.PREPARING_REBALANCE else ErrorCode.NONE


def leave(group: ClassicGroup, member_id: str, instance: str | None, c: Ctx) -> int:
    """Remove one member (a pending one too); its error code."""
    if instance is not None:
        current = group.static_members.get(instance)
        if current is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_id != UNKNOWN_MEMBER and member_id != current:
            return ErrorCode.FENCED_INSTANCE_ID
        member_id = current
    elif member_id in group.pending:
        del group.pending[member_id]
        _try_complete_join(group, c)
        return ErrorCode.NONE
    if member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    remove_member(group, member_id, c)
    return ErrorCode.NONE


def remove_member(group: ClassicGroup, member_id: str, c: Ctx) -> None:
    member = group.remove(member_id)
    if member is None:
        return
    if member.join_token is not None:
        c.out.answer(member.join_token, join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
    if member.sync_token is not None:
        c.out.answer(member.sync_token, _sync_answer(ErrorCode.UNKNOWN_MEMBER_ID, group))
    if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
        _prepare_rebalance(group, c)
    elif group.state is _S.PREPARING_REBALANCE and group.all_joined():
        _complete_join(group, c)        # Kafka's removeMemberAndUpdateClassicGroup: at once, initial delay or not


# -- timeouts -----------------------------------------------------------------------------

def tick(group: ClassicGroup, c: Ctx) -> None:
    """Expire pending members and sessions, end a join phase or a sync wait that timed out."""
    for member_id, deadline in list(group.pending.items()):
        if deadline <= c.now_ms:
            del group.pending[member_id]
            _try_complete_join(group, c)
    for m in list(group.members.values()):
        waiting = m.join_token is not None or m.sync_token is not None
        if not waiting and m.heartbeat_deadline_ms <= c.now_ms and group.state is not _S.EMPTY:
            remove_member(group, m.member_id, c)
    rebalance_deadline = group.rebalance_deadline_ms
    if rebalance_deadline is None or rebalance_deadline > c.now_ms:
        return
    if group.state is _S.PREPARING_REBALANCE:
        _end_join_phase(group, c)
    elif group.state is _S.COMPLETING_REBALANCE:
        for m in [m for m in group.members.values() if m.sync_token is None]:
            group.remove(m.member_id)       # did not sync in time (Kafka's pending sync timeout)
        _prepare_rebalance(group, c)


def next_deadline_ms(group: ClassicGroup) -> int | None:
    """When ``tick`` next has something to do for the group (None: nothing is due)."""
    due = list(group.pending.values())
    if group.state is not _S.EMPTY:
        due += [m.heartbeat_deadline_ms for m in group.members.values() if m.join_token is None and m.sync_token is None]
    if group.rebalance_deadline_ms is not None and group.state in (_S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE):
        due.append(group.rebalance_deadline_ms)
    return min(due, default=None)


def _end_join_phase(group: ClassicGroup, c: Ctx) -> None:
    if group.initial_delay is not None:
        delay, latest = group.initial_delay
        if group.new_member_added and c.now_ms < latest:
            group.new_member_added = False
            group.rebalance_deadline_ms = min(c.now_ms + delay, latest)
            return
        group.initial_delay = None
    _complete_join(group, c)
