"""What replication needs from Log: epoch start assignment, KIP-1303 local log state, FollowerLog."""

import pytest
from storage_helpers import NOW, batch, config

from tierlog.replication import FetcherState
from tierlog.replication.follower import FollowerLog
from tierlog.storage import Log
from tierlog.storage.checkpoint import LEADER_EPOCH_CHECKPOINT, read_epoch_entries

DAY = 24 * 3600 * 1000
TOPIC = b"\x07" * 16


def _log(tmp_path, **props) -> Log:
    return Log.open(tmp_path / "t-0", config(**props), NOW)


def _fill_segments(log, count, timestamp, epoch=0):
    """Append 3-record batches stamped ``timestamp``, ``timestamp + 1``, ... until ``count`` segments."""
    while log.segment_count < count:
        log.append(batch(3, timestamp, value_size=300), epoch, timestamp)
        timestamp += 10


# --- assign_epoch_start_offset --------------------------------------------------------------------


def test_epoch_start_assignment_persists_across_reopen(tmp_path):
    log = _log(tmp_path)
    log.append(batch(3), 0, NOW)
    log.assign_epoch_start_offset(3, log.log_end_offset)
    assert log.latest_epoch == 3
    log.assign_epoch_start_offset(3, 10)                    # already present: no-op
    assert log.epoch_entries() == [(0, 0), (3, 3)]
    assert log.end_offset_for_epoch(0) == (0, 3)
    # a new epoch is written by the next flush (no fsync on the request path, KAFKA-15046)
    assert (3, 3) not in (read_epoch_entries(log.directory / LEADER_EPOCH_CHECKPOINT) or [])
    log.flush(NOW)
    assert read_epoch_entries(log.directory / LEADER_EPOCH_CHECKPOINT) == [(0, 0), (3, 3)]
    log.append(batch(2), 3, NOW)                             # the new leader's first append keeps the entry
    assert log.epoch_entries() == [(0, 0), (3, 3)]
    directory = log.directory
    log.close()

    reopened = Log.open(directory, config(), NOW)
    assert reopened.epoch_entries() == [(0, 0), (3, 3)]
    assert reopened.latest_epoch == 3
    assert reopened.end_offset_for_epoch(0) == (0, 3)
    reopened.close()


def test_an_epoch_without_records_is_dropped_on_reopen_like_kafka(tmp_path):
    # Kafka's log loading truncates the epoch cache to the log end offset, so an epoch
    # assigned at the end of the log with nothing appended since does not survive a
    # reopen; the leader assigns it again when it becomes leader.
    log = _log(tmp_path)
    log.append(batch(3), 0, NOW)
    log.assign_epoch_start_offset(3, 3)
    log.close()
    reopened = Log.open(tmp_path / "t-0", config(), NOW)
    assert reopened.epoch_entries() == [(0, 0)]
    reopened.assign_epoch_start_offset(3, 3)
    assert reopened.epoch_entries() == [(0, 0), (3, 3)]
    reopened.close()


def test_epoch_start_assignment_on_an_empty_log_and_lower_epoch_rejected(tmp_path):
    log = _log(tmp_path)
    log.assign_epoch_start_offset(5, 0)
    assert log.epoch_entries() == [(5, 0)]
    with pytest.raises(AssertionError):
        log.assign_epoch_start_offset(4, 0)
    assert log.epoch_entries() == [(5, 0)]


# --- KIP-1303 local log state -------------------------------------------------------------------------


def test_local_log_state_of_an_empty_log(tmp_path):
    log = _log(tmp_path)
    assert log.local_log_start_timestamp == -1
    assert log.local_log_size_bytes == 0


def test_local_log_state_of_one_segment(tmp_path):
    log = _log(tmp_path)
    log.append(batch(3, timestamps=[NOW + 5, NOW + 1, NOW + 9]), 0, NOW + 100)
    log.append(batch(2, NOW + 50), 0, NOW + 100)
    assert log.segment_count == 1
    assert log.local_log_start_timestamp == NOW + 5           # the first batch's base (first record's) timestamp
    assert log.local_log_size_bytes == log.size_in_bytes == log.segment_infos()[0].size > 0


def test_local_log_start_timestamp_with_log_append_time(tmp_path):
    log = _log(tmp_path, message_timestamp_type="LogAppendTime")
    log.append(batch(3, NOW), 0, NOW + 777)
    log.append(batch(3, NOW), 0, NOW + 999)
    assert log.local_log_start_timestamp == NOW + 777


def test_local_log_state_of_several_segments(tmp_path):
    log = _log(tmp_path)
    _fill_segments(log, 3, NOW + 1000)
    infos = log.segment_infos()
    assert len(infos) == 3
    assert log.local_log_start_timestamp == NOW + 1000
    assert log.local_log_size_bytes == sum(info.size for info in infos) == log.size_in_bytes


def test_local_log_state_after_retention_deletes_the_first_segment(tmp_path):
    log = _log(tmp_path, retention_ms=DAY)
    _fill_segments(log, 2, NOW)
    second_base = log.segment_infos()[1].base_offset
    _fill_segments(log, 3, NOW + DAY)
    before = log.local_log_size_bytes
    first_size = log.segment_infos()[0].size
    second_first_ts = NOW + 10 * (second_base // 3)          # one batch of 3 records every 10 ms
    assert log.enforce_retention(NOW + DAY + 1000) == 1
    assert log.local_log_start_offset == second_base
    assert log.local_log_start_timestamp == second_first_ts
    assert log.local_log_size_bytes == before - first_size == log.size_in_bytes


def test_local_log_start_timestamp_follows_a_raised_log_start_offset(tmp_path):
    log = _log(tmp_path)
    log.append(batch(3, NOW), 0, NOW)
    log.append(batch(3, NOW + 500), 0, NOW)
    log.increment_log_start_offset(4)                         # inside the second batch
    assert log.local_log_start_timestamp == NOW + 500
    log.truncate_fully_and_start_at(20)
    assert log.local_log_start_timestamp == -1 and log.local_log_size_bytes == 0


# --- the follower fetcher reads a real Log ---------------------------------------------------------------


def test_a_real_log_satisfies_what_the_fetcher_reads(tmp_path):
    log = _log(tmp_path)
    _fill_segments(log, 2, NOW + 3000, epoch=2)
    log.increment_log_start_offset(1)
    log_as_follower: FollowerLog = log
    fetcher = FetcherState(source_broker_id=1, replica_id=2, replica_epoch=9)
    fetcher.add_partition((TOPIC, 0), 4, log_as_follower)
    request = fetcher.build_fetch_request(NOW)
    [topic] = request["Topics"]
    [partition] = topic["Partitions"]
    assert topic["TopicId"] == TOPIC
    assert partition["FetchOffset"] == log.log_end_offset
    assert partition["LastFetchedEpoch"] == 2
    assert partition["LogStartOffset"] == 1
    assert partition["LocalLogStartTimestamp"] == NOW + 3000
    assert partition["LocalLogSizeBytes"] == log.size_in_bytes > 0
    assert isinstance(partition["LocalLogStartTimestamp"], int) and isinstance(partition["LocalLogSizeBytes"], int)
    assert log.end_offset_for_epoch(2) == (2, log.log_end_offset)


def test_a_truncation_at_the_log_end_drops_an_epoch_that_holds_no_record(tmp_path):
    """A replica made leader at epoch 3 that lost leadership before appending: the new leader
    (no epoch 3) answers its fetch with DivergingEpoch {0, 3}; the truncation to its own log end
    removes nothing but the empty epoch, so the next fetch is at epoch 0 and is not diverging
    again (before, the follower truncated to 3 on every fetch and never caught up)."""
    log = _log(tmp_path)
    log.append(batch(3), 0, NOW)
    log.assign_epoch_start_offset(3, 3)
    fetcher = FetcherState(source_broker_id=1, replica_id=2, replica_epoch=9)
    fetcher.add_partition((TOPIC, 0), 4, log)
    [partition] = fetcher.build_fetch_request(NOW)["Topics"][0]["Partitions"]
    assert (partition["FetchOffset"], partition["LastFetchedEpoch"]) == (3, 3)
    answer = {"Responses": [{"TopicId": TOPIC, "Partitions": [
        {"PartitionIndex": 0, "ErrorCode": 0, "HighWatermark": 3, "DivergingEpoch": {"Epoch": 0, "EndOffset": 3}}]}]}
    [truncate] = fetcher.handle_fetch_response(answer, NOW)
    assert truncate.offset == 3
    assert log.truncate_to(truncate.offset) is False        # no record at or above 3
    assert log.epoch_entries() == [(0, 0)]
    assert log.truncate_to(10) is False and log.epoch_entries() == [(0, 0)]
    [partition] = fetcher.build_fetch_request(NOW + 1)["Topics"][0]["Partitions"]
    assert (partition["FetchOffset"], partition["LastFetchedEpoch"]) == (3, 0)
