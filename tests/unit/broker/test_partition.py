"""``Partition`` owns a partition's writes and reads: the leader append's checks in Kafka's order,
the acks=all parking, idempotent retries, and reads bounded by the isolation level."""
import pytest
from leaders import lead

from tierlog.broker.partition import AppendOrigin, FetchIsolation, Partition
from tierlog.protocol.errors import ErrorCode as E
from tierlog.records import Record, build_batch, decode_batches
from tierlog.storage import Log, LogConfig

NOW = 1_700_000_000_000
FOLLOWER = 2


def _partition(tmp_path, topic="t", isr=(1, FOLLOWER), min_isr=2) -> Partition:
    log = Log.open(tmp_path / f"{topic}-0", LogConfig.from_props({"cleanup.policy": "delete"}), NOW)
    part = Partition(topic, 0, b"\x01" * 16, log, leader_id=1, leader_epoch=4)
    lead(part, replicas=(1, FOLLOWER), isr=isr, min_isr=min_isr)
    return part


def _batch(n=3, **producer) -> bytearray:
    return bytearray(build_batch([Record(i, NOW, None, b"v%d" % i) for i in range(n)], **producer))


def _append(part, acks=-1, origin=AppendOrigin.CLIENT, records=None, waiter="w"):
    return part.append_as_leader(_batch() if records is None else records, origin, acks, NOW, waiter, 30_000)


def _follower_fetch(part):
    return part.on_follower_fetch(FOLLOWER, part.log_end_offset, NOW)


def test_an_append_assigns_offsets_at_the_leader_epoch_and_parks_acks_all(tmp_path):
    part = _partition(tmp_path)
    first, second = _append(part), _append(part)
    assert (first.error, first.base_offset, first.end_offset, first.appended) == (E.NONE, 0, 3, True)
    assert (second.base_offset, second.end_offset) == (3, 6)
    assert first.parked and second.parked and not first.update.acks and not second.update.acks
    assert part.high_watermark == 0                 # the follower has nothing yet
    headers = [h for h, _ in decode_batches(part.read(0, 1 << 20, FetchIsolation.LOG_END).parts[0].read())]
    assert [h.partition_leader_epoch for h in headers] == [4, 4]
    update = _follower_fetch(part)               # the partition answers the waiters the high watermark passed
    assert part.high_watermark == 6 and update.hw_advanced
    assert [(c.token, c.error) for c in update.acks] == [("w", E.NONE), ("w", E.NONE)]


def test_acks_one_is_never_parked_and_its_leader_update_is_handed_back(tmp_path):
    part = _partition(tmp_path, isr=(1,), min_isr=1)
    outcome = _append(part, acks=1)
    assert outcome.appended and not outcome.parked and not outcome.update.acks
    assert part.high_watermark == 3 and outcome.update.hw_advanced      # the ISR is the leader alone


def test_acks_all_under_min_insync_replicas_is_refused_before_the_log(tmp_path):
    part = _partition(tmp_path, isr=(1,), min_isr=2)
    outcome = _append(part)
    assert (outcome.error, outcome.appended, part.log_end_offset) == (E.NOT_ENOUGH_REPLICAS, False, 0)
    assert _append(part, acks=1).appended          # acks=1 does not ask for the ISR


def test_clients_may_not_write_internal_topics_but_coordinators_may(tmp_path):
    part = _partition(tmp_path, topic="__consumer_offsets")
    refused = _append(part)
    assert refused.error == E.INVALID_TOPIC_EXCEPTION and "internal topic" in refused.message
    assert part.log_end_offset == 0
    assert _append(part, origin=AppendOrigin.COORDINATOR).appended


def test_a_follower_refuses_leader_appends(tmp_path):
    part = _partition(tmp_path)
    part.become_follower(FOLLOWER, 5)
    assert _append(part).error == E.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(AssertionError):
        _append(part, origin=AppendOrigin.REPLICATION)


def test_the_leadership_lease_is_one_leader_epoch(tmp_path):
    part = _partition(tmp_path)
    assert part.is_leader and part.leads(4)
    assert not part.leads(3) and not part.leads(5)      # another epoch is another lease
    assert _append(part).parked
    lost = part.become_follower(FOLLOWER, 5)            # parked acks=all waiters fail with the lease
    assert [(c.token, c.error) for c in lost.acks] == [("w", E.NOT_LEADER_OR_FOLLOWER)]
    assert not part.is_leader and not part.leads(4) and part.moved_away
    assert part.become_follower(FOLLOWER, 5) is None    # nothing more to fail
    lead(part, epoch=6)
    assert part.leads(6) and not part.leads(4) and not part.moved_away
    assert not part.stop().acks and not part.leads(6)


def test_a_leader_tick_times_out_parked_waiters_and_reports_quiet(tmp_path):
    part = _partition(tmp_path)
    _follower_fetch(part)
    assert part.quiet and part.isr_complete and part.isr_sizes() == (2, 2, 2)
    assert _append(part).parked and not part.quiet
    assert not part.tick(NOW + 29_999).acks
    timed_out = part.tick(NOW + 30_000)
    assert [(c.token, c.error) for c in timed_out.acks] == [("w", E.REQUEST_TIMED_OUT)]


def test_an_idempotent_retry_gets_its_first_offsets_and_a_gap_is_out_of_order(tmp_path):
    part = _partition(tmp_path, isr=(1,), min_isr=1)
    batch = _batch(producer_id=9, producer_epoch=0, base_sequence=0)
    first = _append(part, records=bytearray(batch))
    retry = _append(part, records=bytearray(batch))
    assert (retry.base_offset, retry.end_offset) == (first.base_offset, first.end_offset) == (0, 3)
    assert part.log_end_offset == 3
    gap = _append(part, records=_batch(producer_id=9, producer_epoch=0, base_sequence=7))
    assert gap.error == E.OUT_OF_ORDER_SEQUENCE_NUMBER and part.log_end_offset == 3


def test_a_bad_batch_is_an_error_code_not_an_exception(tmp_path):
    part = _partition(tmp_path)
    bad = _batch()
    bad[-1] ^= 0xFF                                 # the CRC no longer matches
    outcome = _append(part, records=bad)
    assert outcome.error == E.CORRUPT_MESSAGE and not outcome.appended


def test_reads_are_bounded_by_the_isolation_level(tmp_path):
    part = _partition(tmp_path)
    _append(part)
    _follower_fetch(part)                           # high watermark 3
    _append(part)                                   # log end 6
    assert part.max_offset(FetchIsolation.LOG_END) == 6
    assert part.max_offset(FetchIsolation.HIGH_WATERMARK) == 3
    assert part.max_offset(FetchIsolation.TXN_COMMITTED) == part.last_stable_offset == 3   # no transactions
    replica = part.read(0, 1 << 20, FetchIsolation.LOG_END)
    consumer = part.read(0, 1 << 20, FetchIsolation.HIGH_WATERMARK)
    assert replica.size > consumer.size > 0
    waiting = part.read(3, 1 << 20, FetchIsolation.HIGH_WATERMARK)
    assert (waiting.error, waiting.size, waiting.more) == (E.NONE, 0, False)       # nothing to wait for yet
    over_budget = part.read(0, 0, FetchIsolation.HIGH_WATERMARK, min_one_batch=False)
    assert (over_budget.size, over_budget.more) == (0, True)                        # readable, not read
    assert part.read(7, 1 << 20, FetchIsolation.LOG_END).error == E.OFFSET_OUT_OF_RANGE


def test_isolation_of_a_fetch_follows_who_asks():
    assert FetchIsolation.of(3, 1) is FetchIsolation.LOG_END          # a replica's IsolationLevel is ignored
    assert FetchIsolation.of(-1, 0) is FetchIsolation.HIGH_WATERMARK
    assert FetchIsolation.of(-1, 1) is FetchIsolation.TXN_COMMITTED


def test_delete_records_follows_kafkas_rules(tmp_path):
    part = _partition(tmp_path)
    _append(part)
    _follower_fetch(part)
    assert part.delete_records_on_leader(4)[0] == E.OFFSET_OUT_OF_RANGE        # above the high watermark
    assert part.delete_records_on_leader(-1)[:3] == (E.NONE, 3, True)
    assert part.log_start_offset == 3
    part.become_follower(FOLLOWER, 5)
    assert part.delete_records_on_leader(3)[0] == E.NOT_LEADER_OR_FOLLOWER


def test_remote_retention_never_raises_the_log_start_past_the_high_watermark(tmp_path):
    part = _partition(tmp_path)
    _append(part)
    _append(part)
    _follower_fetch(part)
    _append(part)                                  # 6..8 not replicated: the high watermark stays at 6
    assert part.increment_log_start_offset(8) and part.log_start_offset == 6


def test_uploads_resume_where_told_and_finished_uploads_only_raise_it(tmp_path):
    part = _partition(tmp_path)
    part.resume_uploads_after(10)
    part.segment_uploaded(7)
    assert part.highest_offset_in_remote_storage == 10
    part.resume_uploads_after(4)                   # a new leader's lineage may go down
    assert part.highest_offset_in_remote_storage == 4


def test_an_append_asks_for_a_tick_only_when_a_tick_could_change_something(tmp_path):
    alone = Partition("alone", 0, b"\x01" * 16, Log.open(tmp_path / "alone-0", LogConfig(), NOW), 1, 5)
    lead(alone, replicas=(1,), isr=(1,))
    assert _append(alone, acks=1).update.tick       # no KIP-1303 report sent yet: the tick may send one
    report = alone.tick(NOW).alter_partition
    assert report is not None
    alone.on_alter_partition_response(report, E.NONE, 5, 1, (1,), NOW)
    # settled (the ISR is every replica, the high watermark at the log end, nothing parked) and the
    # next report not due for LOCAL_LOG_REPORT_INTERVAL_MS: nothing for a tick to do
    assert not _append(alone, acks=1).update.tick
    later = alone.append_as_leader(_batch(), AppendOrigin.CLIENT, 1, NOW + 30_000, None, 0)
    assert later.update.tick                        # the report interval passed
    pair = _partition(tmp_path, topic="pair", isr=(1, FOLLOWER), min_isr=1)
    assert _append(pair, acks=1).update.tick        # the follower lacks the batch (ISR shrink, HW)
