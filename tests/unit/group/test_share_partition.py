"""The share-partition state machine (KIP-932): acquisition locks, acknowledgements, delivery
counts, the in-flight bound and the persisted ShareSnapshot / ShareUpdate form."""
from tierlog.group.share_partition import (
    DELIVERY_LIMIT,
    REJECTED,
    Acquired,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from tierlog.group.share_partition import (
    AcknowledgeType as A,
)
from tierlog.protocol.errors import ErrorCode as E

LOCK = 1000
CONFIG = SharePartitionConfig(record_lock_duration_ms=LOCK, delivery_count_limit=3, max_record_locks=10)


def test_records_go_to_one_member_and_accepted_ones_move_the_start():
    sp = SharePartition(CONFIG)
    assert sp.acquire("a", log_end_offset=5, max_records=3, now_ms=0) == [Acquired(0, 2, 1)]
    assert sp.acquire("b", log_end_offset=5, max_records=10, now_ms=0) == [Acquired(3, 4, 1)]
    assert sp.acquire("c", log_end_offset=5, max_records=10, now_ms=0) == []      # all held
    assert sp.acknowledge("a", [(0, 1, [A.ACCEPT])], 10) == E.NONE
    assert sp.start_offset == 2 and sp.end_offset == 5 and sp.state_of(2) == (RecordState.ACQUIRED, 1)


def test_only_the_holder_may_acknowledge_and_a_refused_batch_changes_nothing():
    sp = SharePartition(CONFIG)
    sp.acquire("a", 4, 2, 0)
    sp.acquire("b", 4, 2, 0)
    assert sp.acknowledge("a", [(0, 2, [A.ACCEPT])], 1) == E.INVALID_RECORD_STATE     # 2 is b's
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1) and sp.start_offset == 0
    assert sp.acknowledge("a", [(0, 1, [A.ACCEPT, A.ACCEPT, A.ACCEPT])], 1) == E.INVALID_REQUEST
    assert sp.acknowledge("a", [(1, 0, [A.ACCEPT])], 1) == E.INVALID_REQUEST
    assert sp.acknowledge("a", [(0, 0, [9])], 1) == E.INVALID_REQUEST
    assert sp.acknowledge("a", [(5, 5, [A.ACCEPT])], 1) == E.INVALID_RECORD_STATE     # never acquired


def test_release_reject_and_per_offset_types():
    sp = SharePartition(CONFIG)
    sp.acquire("a", 4, 4, 0)
    assert sp.acknowledge("a", [(0, 3, [A.RELEASE, A.REJECT, A.ACCEPT, A.GAP])], 1) == E.NONE
    assert sp.state_of(0) == (RecordState.AVAILABLE, 1)
    assert [sp.state_of(o)[0] for o in (1, 2, 3)] == [RecordState.ARCHIVED, RecordState.ACKNOWLEDGED,
                                                     RecordState.ARCHIVED]
    assert sp.acquire("b", 4, 10, 2) == [Acquired(0, 0, 2)]          # the released one, redelivered
    assert sp.acknowledge("b", [(0, 0, [A.ACCEPT])], 3) == E.NONE
    assert sp.start_offset == 4 and sp.in_flight() == 0


def test_an_expired_lock_releases_the_record_and_its_holder_can_no_longer_acknowledge_it():
    sp = SharePartition(CONFIG)
    sp.acquire("a", 2, 2, 0)
    assert sp.next_deadline_ms() == LOCK
    assert sp.expire_locks(LOCK - 1) == []
    assert sp.expire_locks(LOCK) == [0, 1]
    assert sp.acknowledge("a", [(0, 0, [A.ACCEPT])], LOCK) == E.INVALID_RECORD_STATE
    assert sp.acquire("b", 2, 10, LOCK) == [Acquired(0, 1, 2)] and sp.holder(0) == "b"


def test_renew_extends_the_lock_without_a_new_delivery():
    sp = SharePartition(CONFIG)
    sp.acquire("a", 1, 1, 0)
    assert sp.acknowledge("a", [(0, 0, [A.RENEW])], 900) == E.NONE
    assert sp.expire_locks(LOCK) == [] and sp.next_deadline_ms() == 900 + LOCK
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1)


def test_a_member_leaving_releases_what_it_holds():
    sp = SharePartition(CONFIG)
    sp.acquire("a", 3, 2, 0)
    sp.acquire("b", 3, 1, 0)
    assert sp.member_left("a") == [0, 1]
    assert sp.holder(2) == "b" and sp.acquire("c", 3, 10, 1) == [Acquired(0, 1, 2)]


def test_a_record_is_archived_at_the_delivery_count_limit():
    sp = SharePartition(CONFIG)
    for delivery in range(1, 4):
        assert sp.acquire("a", 1, 1, 0) == [Acquired(0, 0, delivery)]
        sp.acknowledge("a", [(0, 0, [A.RELEASE])], 0)
    assert sp.state_of(0)[0] is RecordState.ACKNOWLEDGED and sp.start_offset == 1    # archived: done
    assert sp.acquire("a", 1, 1, 0) == []


def test_failed_records_are_reported_for_the_dead_letter_topic_and_gaps_are_not():
    sp = SharePartition(CONFIG)
    assert sp.acquire("a", 3, 3, 0) == [Acquired(0, 2, 1)]
    sp.acknowledge("a", [(0, 0, [A.REJECT]), (1, 1, [A.GAP]), (2, 2, [A.RELEASE])], 0)
    assert sp.take_archived() == [(0, 1, REJECTED)] and sp.take_archived() == []
    for delivery in (2, 3):
        assert sp.acquire("a", 3, 1, 0) == [Acquired(2, 2, delivery)]
        sp.expire_locks(LOCK)
    assert sp.take_archived() == [(2, 3, DELIVERY_LIMIT)]


def test_acquisition_stays_below_the_end_it_is_given_for_redeliveries_too():
    sp = SharePartition(CONFIG)
    assert sp.acquire("a", 5, 5, 0) == [Acquired(0, 4, 1)]
    sp.acknowledge("a", [(0, 0, [A.ACCEPT]), (1, 4, [A.RELEASE])], 0)
    assert sp.next_fetch_offset() == 1
    assert sp.acquire("b", 3, 5, 0) == [Acquired(1, 2, 2)]     # 3 and 4 lie past what was read
    assert sp.next_fetch_offset() == 3


def test_in_flight_offsets_stay_within_max_record_locks():
    sp = SharePartition(CONFIG)
    assert sp.acquire("a", 100, 100, 0) == [Acquired(0, 9, 1)]
    assert sp.acquire("b", 100, 100, 0) == []
    sp.acknowledge("a", [(0, 4, [A.ACCEPT])], 1)
    assert sp.acquire("b", 100, 100, 1) == [Acquired(10, 14, 1)]


def test_the_persisted_form_rebuilds_the_state_with_acquired_records_available():
    sp = SharePartition(CONFIG, leader_epoch=3)
    sp.acquire("a", 6, 6, 0)
    sp.acknowledge("a", [(0, 0, [A.ACCEPT]), (2, 2, [A.REJECT]), (3, 3, [A.RELEASE])], 1)
    snapshot = sp.snapshot()
    assert snapshot["StartOffset"] == 1 and snapshot["StateBatches"][0] == {
        "FirstOffset": 1, "LastOffset": 1, "DeliveryState": 0, "DeliveryCount": 1}
    assert sp.take_update() is None
    sp.acknowledge("a", [(1, 1, [A.ACCEPT])], 2)
    sp.acquire("b", 8, 10, 2)
    update = sp.take_update()
    assert update["StartOffset"] == 3 and [b["FirstOffset"] for b in update["StateBatches"]] == [3, 6]
    reloaded = SharePartition.from_persisted(CONFIG, snapshot, [update])
    assert reloaded.start_offset == sp.start_offset and reloaded.end_offset == sp.end_offset == 8
    for offset in range(8):
        state, count = sp.state_of(offset)
        expected = RecordState.AVAILABLE if state is RecordState.ACQUIRED else state
        assert reloaded.state_of(offset) == (expected, count), offset
    assert reloaded.acquire("c", 8, 10, 3) == [Acquired(3, 3, 3), Acquired(4, 7, 2)]
