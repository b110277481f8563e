"""LeaderState: high watermark, caught-up rule, ISR shrink/expand, AlterPartition proposals."""
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import LeaderConfig, LeaderState, LocalLog, ReplicaState
from tierlog.replication.backoff import ExponentialBackoff

T0 = 1_000_000
TID = b"\x01" * 16
LAG = 10_000


def leader(isr=(1, 2, 3), hw=5, leo=10, min_isr=1, **kw):
    cfg = LeaderConfig(replica_lag_time_max_ms=LAG, min_insync_replicas=min_isr,
                       alter_partition_backoff=ExponentialBackoff(100, 1000), **kw)
    return LeaderState(topic_id=TID, partition=0, leader_id=1, leader_epoch=7, partition_epoch=3,
                       replicas=(1, 2, 3), isr=isr, high_watermark=hw, log_end_offset=leo, now_ms=T0,
                       config=cfg, leader_broker_epoch=100)


def test_hw_starts_from_log_value_and_waits_for_every_isr_follower():
    ls = leader()
    assert ls.high_watermark == 5
    up = ls.on_follower_fetch(2, 10, now_ms=T0 + 1, leader_leo=10)
    assert not up.hw_advanced and up.high_watermark == 5      # follower 3 unknown yet
    up = ls.on_follower_fetch(3, 8, now_ms=T0 + 2, leader_leo=10)
    assert up.hw_advanced and up.high_watermark == 8
    up = ls.on_follower_fetch(3, 10, now_ms=T0 + 3, leader_leo=10)
    assert up.high_watermark == 10


def test_hw_never_decreases():
    ls = leader(hw=9)
    ls.on_follower_fetch(2, 6, now_ms=T0 + 1, leader_leo=10)
    ls.on_follower_fetch(3, 6, now_ms=T0 + 1, leader_leo=10)
    assert ls.high_watermark == 9


def test_hw_capped_by_leader_leo_with_single_member_isr():
    ls = leader(isr=(1,), hw=0, leo=0)
    up = ls.on_leader_append(4, T0)
    assert up.hw_advanced and up.high_watermark == 4


def test_hw_frozen_under_min_isr():
    ls = leader(isr=(1,), hw=0, leo=0, min_isr=2)
    assert ls.under_min_isr
    assert not ls.on_leader_append(4, T0).hw_advanced


def test_caught_up_follower_outside_isr_holds_hw():
    ls = leader(isr=(1, 2), hw=5, leo=10)
    ls.on_follower_fetch(3, 10, now_ms=T0 + 1, leader_leo=10)   # caught up, outside the ISR
    ls.on_follower_fetch(2, 12, now_ms=T0 + 2, leader_leo=12)
    assert ls.high_watermark == 10                              # waits for 3 (Kafka's rule)
    ls.on_follower_fetch(3, 12, now_ms=T0 + 3, leader_leo=12)
    assert ls.high_watermark == 12


def test_lagging_follower_outside_isr_does_not_hold_hw():
    ls = leader(isr=(1, 2), hw=5, leo=10)
    ls.on_follower_fetch(3, 6, now_ms=T0 + 1, leader_leo=10)    # never caught up
    ls.on_follower_fetch(2, 10, now_ms=T0 + 1, leader_leo=10)
    assert ls.high_watermark == 10


def test_caught_up_rule_uses_previous_fetch_leo():
    r = ReplicaState(2)
    r.reset(T0, in_isr=False)
    r.update_fetch(5, 0, T0 + 100, 10, -1, -1, -1)
    assert r.last_caught_up_time_ms == 0                     # 5 < 10, no previous fetch
    r.update_fetch(10, 0, T0 + 200, 20, -1, -1, -1)
    assert r.last_caught_up_time_ms == T0 + 100              # reached the LEO of the previous fetch
    r.update_fetch(20, 0, T0 + 300, 20, -1, -1, -1)
    assert r.last_caught_up_time_ms == T0 + 300              # equals the current LEO
    r.update_fetch(21, 0, T0 + 250, 40, -1, -1, -1)
    assert r.last_caught_up_time_ms == T0 + 300              # never backwards
    assert r.is_caught_up(40, T0 + 300 + LAG, LAG)
    assert not r.is_caught_up(40, T0 + 301 + LAG, LAG)
    assert r.is_caught_up(21, T0 + 10 * LAG, LAG)            # LEO equal to the leader's


def test_shrink_after_lag_time_with_fake_clock():
    ls = leader(hw=10, leo=10)
    ls.on_follower_fetch(2, 10, now_ms=T0 + 1, leader_leo=10)
    ls.on_follower_fetch(3, 10, now_ms=T0 + 1, leader_leo=10)
    # leader appends; follower 3 stops fetching, follower 2 keeps up
    for t in range(T0 + 1000, T0 + LAG + 2000, 1000):
        ls.on_follower_fetch(2, 20, now_ms=t, leader_leo=20)
    assert ls.out_of_sync_replicas(T0 + LAG + 1, 20) == []
    assert ls.out_of_sync_replicas(T0 + LAG + 2, 20) == [3]
    ls2 = leader(hw=10, leo=10)
    ls2.on_follower_fetch(2, 10, now_ms=T0 + 1, leader_leo=10)
    ls2.on_follower_fetch(3, 10, now_ms=T0 + 1, leader_leo=10)
    ls2.on_follower_fetch(2, 20, now_ms=T0 + LAG, leader_leo=20)
    assert ls2.tick(T0 + 1 + LAG, 20).alter_partition is None       # exactly at the limit: still in sync
    up = ls2.tick(T0 + 2 + LAG, 20)
    assert up.alter_partition is not None and up.alter_partition.reason == "shrink"
    assert up.alter_partition.isr_ids == (1, 2)


def test_pending_shrink_still_waits_for_removed_member():
    ls = leader(hw=10, leo=10)
    ls.on_follower_fetch(2, 10, now_ms=T0 + 1, leader_leo=10)
    ls.on_follower_fetch(3, 10, now_ms=T0 + 1, leader_leo=10)
    up = ls.tick(T0 + 2 + LAG, 20)
    assert up.alter_partition.reason == "shrink"
    ls.on_follower_fetch(2, 20, now_ms=T0 + 3 + LAG, leader_leo=20)
    assert ls.high_watermark == 10                          # 3 is still in the maximal ISR
    up = ls.on_alter_partition_response(0, now_ms=T0 + 4 + LAG, leader_leo=20, leader_epoch=7,
                                        partition_epoch=4, isr=(1, 2))
    assert up.hw_advanced and up.high_watermark == 20 and ls.isr == (1, 2) and ls.partition_epoch == 4


def test_expand_needs_hw_and_epoch_start_offset():
    ls = leader(isr=(1, 2), hw=10, leo=12)
    ls.on_follower_fetch(2, 12, now_ms=T0 + 1, leader_leo=12)
    assert ls.high_watermark == 12
    up = ls.on_follower_fetch(3, 11, now_ms=T0 + 2, leader_leo=15)
    assert up.alter_partition is None                       # 11 < HW 12 and < epoch start 12
    up = ls.on_follower_fetch(3, 12, now_ms=T0 + 3, leader_leo=15)
    assert up.alter_partition is not None and up.alter_partition.reason == "expand"
    assert up.alter_partition.isr_ids == (1, 2, 3)
    assert 3 in ls.maximal_isr and ls.isr == (1, 2)


def test_expand_blocked_below_epoch_start_even_at_hw():
    ls = leader(isr=(1, 2), hw=5, leo=12)
    up = ls.on_follower_fetch(3, 6, now_ms=T0 + 1, leader_leo=12)
    assert up.alter_partition is None


def test_fenced_replica_not_added():
    ls = LeaderState(topic_id=TID, partition=0, leader_id=1, leader_epoch=7, partition_epoch=3,
                     replicas=(1, 2, 3), isr=(1, 2), high_watermark=5, log_end_offset=5, now_ms=T0,
                     fenced=frozenset({3}))
    assert ls.on_follower_fetch(3, 5, now_ms=T0 + 1, leader_leo=5).alter_partition is None


def test_unknown_follower_is_rejected():
    ls = leader()
    assert ls.on_follower_fetch(9, 5, now_ms=T0, leader_leo=10).error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_alter_partition_payload_carries_kip1303_fields_for_every_member():
    ls = leader(isr=(1, 2), hw=10, leo=10)
    assert ls.tick(T0, 10, LocalLog(111, 2222)).alter_partition.reason == "report"
    ls.on_alter_partition_response(0, now_ms=T0, leader_leo=10, leader_epoch=7, partition_epoch=4, isr=(1, 2))
    up = ls.on_follower_fetch(2, 10, now_ms=T0 + 1, leader_leo=10, broker_epoch=55,
                              local_log_start_timestamp=333, local_log_size_bytes=4444)
    assert up.alter_partition is None                      # reports go out from tick
    up = ls.on_follower_fetch(3, 10, now_ms=T0 + 2, leader_leo=10, broker_epoch=66,
                              local_log_start_timestamp=555, local_log_size_bytes=6666)
    item = up.alter_partition
    assert item is not None and item.reason == "expand"
    d = item.as_partition_dict()
    assert d["LeaderEpoch"] == 7 and d["PartitionEpoch"] == 4 and d["PartitionIndex"] == 0 and d["LeaderRecoveryState"] == 0
    assert d["NewIsrWithEpochs"] == [
        {"BrokerId": 1, "BrokerEpoch": 100, "LocalLogStartTimestamp": 111, "LocalLogSizeBytes": 2222},
        {"BrokerId": 2, "BrokerEpoch": 55, "LocalLogStartTimestamp": 333, "LocalLogSizeBytes": 4444},
        {"BrokerId": 3, "BrokerEpoch": 66, "LocalLogStartTimestamp": 555, "LocalLogSizeBytes": 6666}]


def _committed_leader():
    """ISR (1, 2) whose local logs are committed as reported."""
    ls = leader(isr=(1, 2), hw=10, leo=10, report_interval_ms=1000)
    ls.on_follower_fetch(2, 10, now_ms=T0, leader_leo=10, local_log_start_timestamp=5, local_log_size_bytes=1000)
    up = ls.tick(T0, 10, LocalLog(5, 1000))
    assert up.alter_partition is not None and up.alter_partition.reason == "report"
    ls.on_alter_partition_response(0, now_ms=T0, leader_leo=10, leader_epoch=7, partition_epoch=4, isr=(1, 2))
    return ls


def test_report_only_on_material_change_and_rate_limited():
    ls = _committed_leader()
    ls.on_follower_fetch(2, 10, now_ms=T0 + 5000, leader_leo=10, local_log_start_timestamp=5,
                         local_log_size_bytes=1050)         # +5%: not material
    assert ls.tick(T0 + 5000, 10).alter_partition is None
    ls.on_follower_fetch(2, 10, now_ms=T0 + 5001, leader_leo=10, local_log_start_timestamp=9,
                         local_log_size_bytes=1050)         # retention moved the start
    assert ls.tick(T0 + 500, 10).alter_partition is None    # rate limit (1000 ms since last report)
    up = ls.tick(T0 + 5002, 10)
    assert up.alter_partition is not None and up.alter_partition.reason == "report"
    assert up.alter_partition.isr_ids == (1, 2)


def test_alter_partition_retry_with_backoff_on_generic_error():
    ls = leader(hw=10, leo=10)
    ls.on_follower_fetch(2, 10, now_ms=T0, leader_leo=10)
    ls.on_follower_fetch(3, 10, now_ms=T0, leader_leo=10)
    assert ls.tick(T0 + LAG + 1, 20).alter_partition is not None
    up = ls.on_alter_partition_response(ErrorCode.NOT_CONTROLLER, now_ms=T0 + LAG + 2, leader_leo=20)
    assert up.alter_partition is None
    assert ls.tick(T0 + LAG + 50, 20).alter_partition is None            # within 100 ms
    assert ls.tick(T0 + LAG + 102, 20).alter_partition is not None
    ls.on_alter_partition_failure(T0 + LAG + 103)                         # lost: 2nd retry after 200 ms
    assert ls.tick(T0 + LAG + 250, 20).alter_partition is None
    assert ls.tick(T0 + LAG + 303, 20).alter_partition is not None


def test_stale_errors_wait_for_metadata():
    for error in (ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.FENCED_LEADER_EPOCH):
        ls = leader(hw=10, leo=10)
        ls.on_follower_fetch(2, 10, now_ms=T0, leader_leo=10)
        ls.on_follower_fetch(3, 10, now_ms=T0, leader_leo=10)
        assert ls.tick(T0 + LAG + 1, 20).alter_partition is not None
        ls.on_alter_partition_response(error, now_ms=T0 + LAG + 2, leader_leo=20)
        assert ls.isr_state.state == "STUCK"
        assert ls.tick(T0 + 10 * LAG, 20).alter_partition is None
        ls.on_follower_fetch(2, 20, now_ms=T0 + 10 * LAG, leader_leo=20)
        assert ls.high_watermark == 10                    # 3 still counts while the shrink is unconfirmed
        up = ls.on_partition_metadata(leader_epoch=7, partition_epoch=9, isr=(1, 2), replicas=(1, 2, 3),
                                      now_ms=T0 + 10 * LAG, leader_leo=20)
        assert ls.isr_state.state == "COMMITTED" and ls.isr == (1, 2) and ls.partition_epoch == 9
        assert up.high_watermark == 20


def test_rejected_proposal_is_dropped():
    ls = leader(isr=(1, 2), hw=10, leo=10)
    ls.on_follower_fetch(2, 10, now_ms=T0, leader_leo=10)
    assert ls.on_follower_fetch(3, 10, now_ms=T0, leader_leo=10).alter_partition.reason == "expand"
    ls.on_alter_partition_response(ErrorCode.INELIGIBLE_REPLICA, now_ms=T0, leader_leo=10)
    assert ls.isr_state.state == "COMMITTED" and ls.isr == (1, 2) and 3 not in ls.maximal_isr


def test_stale_success_answer_is_ignored():
    ls = leader(isr=(1, 2), hw=10, leo=10)
    ls.on_follower_fetch(2, 10, now_ms=T0, leader_leo=10)
    ls.on_follower_fetch(3, 10, now_ms=T0, leader_leo=10)
    ls.on_alter_partition_response(0, now_ms=T0, leader_leo=10, leader_epoch=8, partition_epoch=9, isr=(1, 2, 3))
    assert ls.isr == (1, 2) and ls.partition_epoch == 3


def test_old_metadata_is_ignored():
    ls = leader()
    ls.on_partition_metadata(leader_epoch=7, partition_epoch=2, isr=(1,), replicas=(1, 2, 3), now_ms=T0,
                             leader_leo=10)
    assert ls.isr == (1, 2, 3)


def test_an_uncleanly_elected_leader_reports_itself_recovered_once():
    """KIP-704: a RECOVERING leader has nothing to rebuild; it sends AlterPartition (RECOVERED) with its ISR."""
    cfg = LeaderConfig(replica_lag_time_max_ms=LAG, alter_partition_backoff=ExponentialBackoff(100, 1000))
    ls = LeaderState(topic_id=TID, partition=0, leader_id=1, leader_epoch=7, partition_epoch=3, replicas=(1, 2, 3),
                     isr=(1,), high_watermark=10, log_end_offset=10, now_ms=T0, config=cfg, recovering=True)
    item = ls.tick(T0 + 1, 10).alter_partition
    assert item is not None and [m.broker_id for m in item.new_isr] == [1]
    assert item.as_partition_dict()["LeaderRecoveryState"] == 0
    ls.on_alter_partition_response(0, now_ms=T0 + 2, leader_leo=10, leader_epoch=7, partition_epoch=4, isr=(1,))
    assert not ls.recovering
    assert ls.tick(T0 + 3, 10).alter_partition is None


def test_a_recovered_leader_sends_nothing_for_recovery():
    ls = leader(isr=(1,))
    assert not ls.recovering and ls.tick(T0 + 1, 10).alter_partition is None
