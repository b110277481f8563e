"""The leader's share-partitions and sessions together (``group/share_partition_manager.py``):
two members split the records, accept / release / reject through ShareFetch and
ShareAcknowledge, locks expire, a replaced or closed session gives its records back, and what
changed is handed out once as WriteShareGroupState batches."""
from tierlog.group.share_partition import Acquired, SharePartitionConfig
from tierlog.group.share_partition_manager import SharePartitionManager
from tierlog.group.share_state_records import SharePartitionKey
from tierlog.protocol.errors import ErrorCode

T = b"\x01" * 16
P0, P1 = (T, 0), (T, 1)
ACCEPT, RELEASE, REJECT = 1, 2, 3
FRESH = {"StateEpoch": 0, "StartOffset": 0, "StateBatches": []}
LOCK_MS = 1000


def _manager(ends=None, max_sessions=10):
    mgr = SharePartitionManager(SharePartitionConfig(record_lock_duration_ms=LOCK_MS, delivery_count_limit=2),
                                max_sessions)
    for key in mgr.to_load("g", [P0, P1, P0]):
        mgr.install(key, FRESH, leader_epoch=3)
    ends = ends or {P0: 4, P1: 4}
    return mgr, ends.__getitem__


def _offsets(runs):
    return [o for r in runs for o in range(r.first_offset, r.last_offset + 1)]


def test_to_load_names_each_missing_share_partition_once():
    mgr = SharePartitionManager(SharePartitionConfig(), 10)
    assert mgr.to_load("g", [P0, P1, P0]) == [SharePartitionKey("g", T, 0), SharePartitionKey("g", T, 1)]
    mgr.install(SharePartitionKey("g", T, 0), {"StateEpoch": 2, "StartOffset": 5, "StateBatches": []}, 7)
    assert mgr.to_load("g", [P0, P1]) == [SharePartitionKey("g", T, 1)]
    assert mgr.get("g", P0).start_offset == 5 and mgr.get("g", P0).leader_epoch == 7


def test_two_members_split_the_records_and_all_accepted_is_done():
    mgr, end = _manager()
    a = mgr.fetch("g", "a", 0, [P0, P1], [], {}, end, max_records=5, now_ms=0)
    b = mgr.fetch("g", "b", 0, [P0, P1], [], {}, end, max_records=5, now_ms=0)
    assert a.acquired == {P0: [Acquired(0, 3, 1)], P1: [Acquired(0, 0, 1)]}
    assert b.acquired == {P1: [Acquired(1, 3, 1)]}
    acks_a = {P0: [(0, 3, [ACCEPT])], P1: [(0, 0, [ACCEPT])]}
    done_a = mgr.fetch("g", "a", 1, [], [], acks_a, end, max_records=5, now_ms=1)
    assert done_a.acknowledge_errors == {P0: ErrorCode.NONE, P1: ErrorCode.NONE} and done_a.acquired == {}
    done_b = mgr.acknowledge("g", "b", 1, {P1: [(1, 3, [ACCEPT])]}, now_ms=1)
    assert done_b.acknowledge_errors == {P1: ErrorCode.NONE}
    assert mgr.get("g", P0).start_offset == 4 and mgr.get("g", P1).start_offset == 4
    assert mgr.fetch("g", "b", 2, [], [], {}, end, max_records=5, now_ms=2).acquired == {}


def test_released_is_redelivered_rejected_is_not():
    mgr, end = _manager({P0: 3, P1: 0})
    assert _offsets(mgr.fetch("g", "a", 0, [P0], [], {}, end, 10, 0).acquired[P0]) == [0, 1, 2]
    out = mgr.fetch("g", "a", 1, [], [], {P0: [(0, 2, [ACCEPT, RELEASE, REJECT])]}, end, 10, 1)
    assert out.acknowledge_errors == {P0: ErrorCode.NONE}
    assert out.acquired == {P0: [Acquired(1, 1, 2)]}          # only the released one, its second delivery
    assert mgr.fetch("g", "a", 2, [], [], {P0: [(1, 1, [ACCEPT])]}, end, 10, 2).acquired == {}
    assert mgr.get("g", P0).start_offset == 3


def test_an_acknowledgement_of_another_members_record_is_refused():
    mgr, end = _manager({P0: 2, P1: 0})
    mgr.fetch("g", "a", 0, [P0], [], {}, end, 10, 0)
    mgr.fetch("g", "b", 0, [P0], [], {}, end, 10, 0)
    out = mgr.acknowledge("g", "b", 1, {P0: [(0, 1, [ACCEPT])]}, 1)
    assert out.acknowledge_errors == {P0: ErrorCode.INVALID_RECORD_STATE}
    assert mgr.acknowledge("g", "b", 2, {(T, 9): [(0, 0, [ACCEPT])]}, 1).acknowledge_errors == \
        {(T, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_session_errors_come_first():
    mgr, end = _manager(max_sessions=1)
    assert mgr.fetch("g", "a", 1, [P0], [], {}, end, 10, 0).error == ErrorCode.SHARE_SESSION_NOT_FOUND
    mgr.fetch("g", "a", 0, [P0], [], {}, end, 10, 0)
    assert mgr.fetch("g", "b", 0, [P0], [], {}, end, 10, 0).error == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    assert mgr.fetch("g", "a", 5, [], [], {}, end, 10, 0).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert mgr.acknowledge("g", "a", 0, {}, 0).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH


def test_an_expired_lock_hands_the_record_to_another_member():
    mgr, end = _manager({P0: 1, P1: 0})
    mgr.fetch("g", "a", 0, [P0], [], {}, end, 10, now_ms=0)
    assert mgr.next_deadline_ms() == LOCK_MS
    assert mgr.fetch("g", "b", 0, [P0], [], {}, end, 10, now_ms=LOCK_MS - 1).acquired == {}
    assert mgr.expire_locks(LOCK_MS - 1) == {}
    assert mgr.expire_locks(LOCK_MS) == {SharePartitionKey("g", T, 0): [0]}
    assert mgr.fetch("g", "b", 1, [], [], {}, end, 10, now_ms=LOCK_MS).acquired == {P0: [Acquired(0, 0, 2)]}
    late = mgr.acknowledge("g", "a", 1, {P0: [(0, 0, [ACCEPT])]}, LOCK_MS)
    assert late.acknowledge_errors == {P0: ErrorCode.INVALID_RECORD_STATE}


def test_a_closed_or_replaced_session_and_a_leaving_member_give_records_back():
    mgr, end = _manager({P0: 3, P1: 0})
    mgr.fetch("g", "a", 0, [P0], [], {}, end, 1, 0)                        # a holds 0
    mgr.fetch("g", "a", 0, [P0], [], {}, end, 1, 0)                        # replaced: 0 back, a takes 0 again
    assert mgr.get("g", P0).state_of(0)[1] == 2 and mgr.get("g", P0).holder(0) == "a"
    out = mgr.fetch("g", "a", -1, [], [], {P0: [(0, 0, [ACCEPT])]}, end, 10, 1)
    assert out.acknowledge_errors == {P0: ErrorCode.NONE} and out.acquired == {}
    mgr.fetch("g", "b", 0, [P0], [], {}, end, 1, 2)                        # b holds 1
    mgr.acknowledge("g", "b", -1, {}, 3)                                   # closed: 1 back
    assert mgr.get("g", P0).holder(1) is None and len(mgr.sessions) == 0
    mgr.fetch("g", "c", 0, [P0], [], {}, end, 10, 4)
    mgr.member_left("g", "c")
    assert mgr.get("g", P0).holder(1) is None and mgr.sessions.get("g", "c") is None


def test_changes_are_written_once_and_leadership_loss_forgets():
    mgr, end = _manager({P0: 2, P1: 0})
    assert mgr.take_writes() == []
    mgr.fetch("g", "a", 0, [P0], [], {}, end, 10, 0)
    mgr.acknowledge("g", "a", 1, {P0: [(0, 0, [ACCEPT])]}, 1)
    [(key, state_epoch, update)] = mgr.take_writes()
    assert key == SharePartitionKey("g", T, 0) and state_epoch == 0
    assert update["StartOffset"] == 1 and update["LeaderEpoch"] == 3
    assert update["StateBatches"] == [{"FirstOffset": 1, "LastOffset": 1, "DeliveryState": 0, "DeliveryCount": 1}]
    assert mgr.take_writes() == []
    mgr.unload(P0)
    assert mgr.get("g", P0) is None and mgr.get("g", P1) is not None
