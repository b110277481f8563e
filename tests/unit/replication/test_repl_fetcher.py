"""FetcherState / ReplicaFetchers: request building, response actions, backoff, leader changes."""
from dataclasses import dataclass, field

from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    EARLIEST,
    LATEST,
    Append,
    AwaitMetadata,
    Backoff,
    BuildRemoteLogAuxState,
    FetcherConfig,
    FetcherState,
    FetchStatus,
    FollowerLogReads,
    ListLeaderOffset,
    ReplicaFetchers,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateHighWatermark,
)

T1, T2 = b"\x01" * 16, b"\x02" * 16


@dataclass
class FakeLog(FollowerLogReads):
    log_end_offset: int = 0
    log_start_offset: int = 0
    latest_epoch: int | None = None
    local_log_start_timestamp: int = 1234
    local_log_size_bytes: int = 5678
    epoch_ends: dict = field(default_factory=dict)

    def end_offset_for_epoch(self, epoch):
        return self.epoch_ends.get(epoch, (-1, -1))


def fetcher(**kw):
    return FetcherState(source_broker_id=1, replica_id=2, replica_epoch=42,
                        config=FetcherConfig(backoff_ms=100, backoff_max_ms=1000, **kw))


def response(topic, partition, **data):
    data.setdefault("ErrorCode", 0)
    return {"ErrorCode": 0, "Responses": [{"TopicId": topic, "Partitions": [{"PartitionIndex": partition, **data}]}]}


def test_request_shape_with_kip1303_fields_and_multiplexing():
    f = fetcher()
    f.add_partition((T1, 0), 5, FakeLog(log_end_offset=10, latest_epoch=4))
    f.add_partition((T1, 1), 5, FakeLog())
    f.add_partition((T2, 0), 3, FakeLog(log_end_offset=7, log_start_offset=2, latest_epoch=3))
    req = f.build_fetch_request(0)
    assert req["ReplicaState"] == {"ReplicaId": 2, "ReplicaEpoch": 42}
    assert req["SessionId"] == 0 and req["SessionEpoch"] == 0           # a full fetch that opens a session
    by_topic = {t["TopicId"]: t["Partitions"] for t in req["Topics"]}
    assert [p["Partition"] for p in by_topic[T1]] == [0, 1]
    p0 = by_topic[T1][0]
    assert p0 == {"Partition": 0, "CurrentLeaderEpoch": 5, "FetchOffset": 10, "LastFetchedEpoch": 4,
                  "LogStartOffset": 0, "PartitionMaxBytes": 1024 * 1024,
                  "LocalLogStartTimestamp": 1234, "LocalLogSizeBytes": 5678}
    assert by_topic[T1][1]["LastFetchedEpoch"] == -1
    assert by_topic[T2][0]["LogStartOffset"] == 2
    assert f.build_fetch_request(0) is None                 # one request in flight per fetcher


def test_data_gives_append_then_high_watermark():
    f = fetcher()
    log = FakeLog(log_end_offset=10, latest_epoch=4)
    f.add_partition((T1, 0), 5, log)
    f.build_fetch_request(0)
    acts = f.handle_fetch_response(response(T1, 0, HighWatermark=12, LogStartOffset=3, Records=b"xyz"), 1)
    assert acts == [Append((T1, 0), b"xyz"), UpdateHighWatermark((T1, 0), 12, 3)]
    assert f.partitions[(T1, 0)].status is FetchStatus.FETCHING
    assert f.build_fetch_request(2) is not None


def test_empty_records_only_update_high_watermark():
    f = fetcher()
    f.add_partition((T1, 0), 5, FakeLog(log_end_offset=10))
    f.build_fetch_request(0)
    acts = f.handle_fetch_response(response(T1, 0, HighWatermark=10, LogStartOffset=0, Records=None), 1)
    assert acts == [UpdateHighWatermark((T1, 0), 10, 0)]


def test_diverging_epoch_truncates_to_min_of_leader_and_local_end():
    f = fetcher()
    log = FakeLog(log_end_offset=20, latest_epoch=4, epoch_ends={3: (3, 15)})
    f.add_partition((T1, 0), 5, log)
    f.build_fetch_request(0)
    acts = f.handle_fetch_response(response(T1, 0, HighWatermark=12, DivergingEpoch={"Epoch": 3, "EndOffset": 12},
                                            Records=b""), 1)
    assert acts == [TruncateTo((T1, 0), 12)]
    log.epoch_ends = {3: (3, 9)}
    f.build_fetch_request(2)
    acts = f.handle_fetch_response(response(T1, 0, DivergingEpoch={"Epoch": 3, "EndOffset": 12}), 3)
    assert acts == [TruncateTo((T1, 0), 9)]


def test_retriable_errors_back_off_exponentially_up_to_max():
    f = fetcher()
    f.add_partition((T1, 0), 5, FakeLog())
    delays = []
    now = 0
    for error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH,
                  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.UNKNOWN_TOPIC_ID):
        assert f.build_fetch_request(now) is not None
        [act] = f.handle_fetch_response(response(T1, 0, ErrorCode=error), now)
        assert isinstance(act, Backoff) and act.error == error
        delays.append(act.until_ms - now)
        assert f.build_fetch_request(act.until_ms - 1) is None
        assert f.next_wakeup_ms() == act.until_ms
        now = act.until_ms
    assert delays == [100, 200, 400, 800, 1000]
    f.build_fetch_request(now)
    f.handle_fetch_response(response(T1, 0, HighWatermark=0), now)     # success resets
    f.build_fetch_request(now)
    [act] = f.handle_fetch_failure(now)
    assert act.until_ms == now + 100


def test_top_level_error_backs_off_everything_in_flight():
    f = fetcher()
    f.add_partition((T1, 0), 5, FakeLog())
    f.add_partition((T1, 1), 5, FakeLog())
    f.build_fetch_request(0)
    acts = f.handle_fetch_response({"ErrorCode": ErrorCode.UNKNOWN_SERVER_ERROR, "Responses": []}, 0)
    assert {a.key for a in acts} == {(T1, 0), (T1, 1)} and all(isinstance(a, Backoff) for a in acts)


def test_fenced_leader_epoch_waits_for_metadata():
    fs = ReplicaFetchers(replica_id=2)
    log = FakeLog()
    fs.become_follower((T1, 0), 1, 5, log)
    f = fs.fetcher_for((T1, 0))
    f.build_fetch_request(0)
    assert f.handle_fetch_response(response(T1, 0, ErrorCode=ErrorCode.FENCED_LEADER_EPOCH), 0) == [
        AwaitMetadata((T1, 0), 5, ErrorCode.FENCED_LEADER_EPOCH)]
    assert f.build_fetch_request(10**9) is None
    assert not fs.become_follower((T1, 0), 1, 5, log)        # same epoch: still waiting
    assert fs.become_follower((T1, 0), 1, 6, log)
    req = f.build_fetch_request(0)
    assert req["Topics"][0]["Partitions"][0]["CurrentLeaderEpoch"] == 6


def _out_of_range(f, key=(T1, 0), now=0, error=ErrorCode.OFFSET_OUT_OF_RANGE):
    f.build_fetch_request(now)
    return f.handle_fetch_response(response(*key, ErrorCode=error), now)


def _resolving(log_end_offset=50, epoch=5):
    f = fetcher()
    f.add_partition((T1, 0), epoch, FakeLog(log_end_offset=log_end_offset))
    assert _out_of_range(f) == [ListLeaderOffset((T1, 0), epoch, LATEST)]
    assert f.build_fetch_request(0) is None                 # not fetched while resolving
    return f


def test_out_of_range_asks_the_leader_log_end_first():
    f = fetcher()
    f.add_partition((T1, 0), 5, FakeLog(log_end_offset=50))
    assert _out_of_range(f, error=ErrorCode.OFFSET_OUT_OF_RANGE) == [ListLeaderOffset((T1, 0), 5, LATEST)]
    assert f.partitions[(T1, 0)].status is FetchStatus.OUT_OF_RANGE


def _moved_to_tiered(log_end_offset=0):
    f = fetcher()
    f.add_partition((T1, 0), 5, FakeLog(log_end_offset=log_end_offset))
    assert _out_of_range(f, error=ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE) == [
        BuildRemoteLogAuxState((T1, 0), 5)]
    assert f.partitions[(T1, 0)].status is FetchStatus.TIERED
    return f


def test_offset_moved_to_tiered_storage_rebuilds_from_remote_then_fetches():
    f = _moved_to_tiered()
    assert f.build_fetch_request(1) is None                     # nothing fetched while rebuilding
    assert f.on_remote_aux_state((T1, 0), 5, ErrorCode.NONE, 1) == []
    assert f.partitions[(T1, 0)].status is FetchStatus.FETCHING and f.build_fetch_request(1) is not None


def test_a_failed_rebuild_backs_off_and_the_next_fetch_asks_again():
    f = _moved_to_tiered()
    [backoff] = f.on_remote_aux_state((T1, 0), 5, ErrorCode.REPLICA_NOT_AVAILABLE, 1)
    assert isinstance(backoff, Backoff) and backoff.error == ErrorCode.REPLICA_NOT_AVAILABLE
    assert f.build_fetch_request(1) is None and f.build_fetch_request(backoff.until_ms) is not None


def test_a_rebuild_answer_for_an_old_epoch_or_a_fenced_one():
    f = _moved_to_tiered()
    assert f.on_remote_aux_state((T1, 0), 4, ErrorCode.NONE, 1) == []          # stale: still rebuilding
    assert f.partitions[(T1, 0)].status is FetchStatus.TIERED
    [wait] = f.on_remote_aux_state((T1, 0), 5, ErrorCode.FENCED_LEADER_EPOCH, 1)
    assert isinstance(wait, AwaitMetadata) and f.partitions[(T1, 0)].status is FetchStatus.FENCED


def test_leader_log_end_below_ours_truncates_to_it_without_asking_the_start():
    f = _resolving(log_end_offset=50)
    assert f.on_leader_offset((T1, 0), 5, LATEST, 0, 40, 1) == [TruncateTo((T1, 0), 40)]
    assert f.partitions[(T1, 0)].status is FetchStatus.FETCHING
    assert f.build_fetch_request(1) is not None


def test_leader_log_end_at_or_above_ours_asks_the_leader_log_start():
    for leader_end in (50, 100):
        f = _resolving(log_end_offset=50)
        assert f.on_leader_offset((T1, 0), 5, LATEST, 0, leader_end, 1) == [ListLeaderOffset((T1, 0), 5, EARLIEST)]
        assert f.partitions[(T1, 0)].status is FetchStatus.OUT_OF_RANGE


def test_leader_log_start_above_our_end_truncates_fully_and_starts_there():
    f = _resolving(log_end_offset=50)
    f.on_leader_offset((T1, 0), 5, LATEST, 0, 100, 1)
    assert f.on_leader_offset((T1, 0), 5, EARLIEST, 0, 80, 2) == [TruncateFullyAndStartAt((T1, 0), 80)]
    assert f.partitions[(T1, 0)].status is FetchStatus.FETCHING


def test_leader_log_start_at_or_below_our_end_fetches_from_our_end():
    for leader_start in (0, 50):
        f = _resolving(log_end_offset=50)
        f.on_leader_offset((T1, 0), 5, LATEST, 0, 100, 1)
        assert f.on_leader_offset((T1, 0), 5, EARLIEST, 0, leader_start, 2) == []
        req = f.build_fetch_request(2)
        assert req["Topics"][0]["Partitions"][0]["FetchOffset"] == 50     # max(leader start, our end)


def test_list_offsets_errors_back_off_and_start_over():
    for error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.REQUEST_TIMED_OUT):
        f = _resolving()
        [act] = f.on_leader_offset((T1, 0), 5, LATEST, error, -1, 10)
        assert act == Backoff((T1, 0), 110, error)
        assert f.build_fetch_request(109) is None
        assert f.build_fetch_request(110) is not None       # fetched again: a new out of range starts over
        assert f.handle_fetch_response(response(T1, 0, ErrorCode=ErrorCode.OFFSET_OUT_OF_RANGE), 110) == [
            ListLeaderOffset((T1, 0), 5, LATEST)]


def test_list_offsets_without_an_offset_backs_off():
    f = _resolving()
    [act] = f.on_leader_offset((T1, 0), 5, EARLIEST, 0, -1, 0)
    assert isinstance(act, Backoff) and act.error == ErrorCode.UNKNOWN_SERVER_ERROR


def test_list_offsets_fenced_waits_for_metadata():
    fs = ReplicaFetchers(replica_id=2, config=FetcherConfig(backoff_ms=100))
    log = FakeLog(log_end_offset=50)
    fs.become_follower((T1, 0), 1, 5, log)
    f = fs.fetcher_for((T1, 0))
    _out_of_range(f)
    assert f.on_leader_offset((T1, 0), 5, LATEST, ErrorCode.FENCED_LEADER_EPOCH, -1, 0) == [
        AwaitMetadata((T1, 0), 5, ErrorCode.FENCED_LEADER_EPOCH)]
    assert f.build_fetch_request(10**9) is None
    assert fs.become_follower((T1, 0), 1, 6, log)
    assert f.build_fetch_request(0)["Topics"][0]["Partitions"][0]["CurrentLeaderEpoch"] == 6


def test_stale_leader_offsets_are_ignored():
    f = _resolving(log_end_offset=50, epoch=5)
    assert f.on_leader_offset((T1, 0), 4, LATEST, 0, 10, 1) == []       # asked at another epoch
    assert f.on_leader_offset((T2, 0), 5, LATEST, 0, 10, 1) == []       # not followed
    f.set_leader_epoch((T1, 0), 6)                                      # metadata moved on meanwhile
    assert f.on_leader_offset((T1, 0), 5, LATEST, 0, 10, 1) == []
    assert f.partitions[(T1, 0)].status is FetchStatus.FETCHING
    g = _resolving()
    g.on_leader_offset((T1, 0), 5, LATEST, 0, 10, 1)                    # resolved: a repeat does nothing
    assert g.on_leader_offset((T1, 0), 5, LATEST, 0, 10, 1) == []


def test_stale_answer_ignored_when_log_moved():
    f = fetcher()
    log = FakeLog(log_end_offset=10)
    f.add_partition((T1, 0), 5, log)
    f.build_fetch_request(0)
    log.log_end_offset = 8                                   # truncated meanwhile
    assert f.handle_fetch_response(response(T1, 0, HighWatermark=12, Records=b"x"), 1) == []
    assert f.build_fetch_request(1)["Topics"][0]["Partitions"][0]["FetchOffset"] == 8


def test_unanswered_partition_is_asked_again():
    f = fetcher()
    f.add_partition((T1, 0), 5, FakeLog())
    f.add_partition((T1, 1), 5, FakeLog())
    f.build_fetch_request(0)
    f.handle_fetch_response(response(T1, 0, HighWatermark=0), 0)
    req = f.build_fetch_request(0)
    assert sorted(p["Partition"] for p in req["Topics"][0]["Partitions"]) == [0, 1]


def test_leader_change_moves_partition_between_fetchers():
    fs = ReplicaFetchers(replica_id=2)
    log = FakeLog()
    fs.become_follower((T1, 0), 1, 5, log)
    fs.become_follower((T1, 1), 1, 5, FakeLog())
    f1 = fs.fetchers[1]
    f1.build_fetch_request(0)
    fs.become_follower((T1, 0), 3, 6, log)
    assert set(fs.fetchers) == {1, 3} and (T1, 0) not in f1.partitions
    # the late answer from the old leader is ignored
    assert f1.handle_fetch_response(response(T1, 0, HighWatermark=5, Records=b"x"), 1) == []
    assert fs.fetchers[3].build_fetch_request(1)["Topics"][0]["Partitions"][0]["CurrentLeaderEpoch"] == 6
    fs.stop_following((T1, 1))
    assert set(fs.fetchers) == {3}
    fs.stop_following((T1, 0))
    assert fs.fetchers == {}


def _session_fetcher():
    """Two partitions of T1, a session (id 77) opened by the first, full, request."""
    f = fetcher()
    logs = [FakeLog(log_end_offset=10), FakeLog(log_end_offset=20)]
    for i, log in enumerate(logs):
        f.add_partition((T1, i), 5, log)
    req = f.build_fetch_request(0)
    assert (req["SessionId"], req["SessionEpoch"]) == (0, 0) and len(req["Topics"][0]["Partitions"]) == 2
    f.handle_fetch_response({"ErrorCode": 0, "SessionId": 77, "Responses": []}, 0)
    return f, logs


def _named(req):
    return sorted((t["TopicId"], p["Partition"], p["FetchOffset"]) for t in req["Topics"] for p in t["Partitions"])


def test_incremental_fetch_names_only_partitions_whose_position_moved():
    f, logs = _session_fetcher()
    req = f.build_fetch_request(1)
    assert (req["SessionId"], req["SessionEpoch"]) == (77, 1) and _named(req) == []
    assert req["ForgottenTopicsData"] == []
    acts = f.handle_fetch_response({"ErrorCode": 0, "SessionId": 77, "Responses": [{"TopicId": T1, "Partitions": [
        {"PartitionIndex": 1, "ErrorCode": 0, "HighWatermark": 25, "Records": b"abc"}]}]}, 2)
    assert acts[0] == Append((T1, 1), b"abc")
    logs[1].log_end_offset = 25                                  # the shell appended
    req = f.build_fetch_request(3)
    assert req["SessionEpoch"] == 2 and _named(req) == [(T1, 1, 25)]


def test_a_delayed_partition_is_forgotten_and_named_again_when_its_backoff_ends():
    f, _ = _session_fetcher()
    f.build_fetch_request(1)
    [backoff] = f.handle_fetch_response(response(T1, 0, ErrorCode=ErrorCode.NOT_LEADER_OR_FOLLOWER), 1)
    req = f.build_fetch_request(2)
    assert req["ForgottenTopicsData"] == [{"TopicId": T1, "Partitions": [0]}] and _named(req) == []
    f.handle_fetch_response({"ErrorCode": 0, "SessionId": 77, "Responses": []}, 3)
    assert f.next_wakeup_ms() == backoff.until_ms
    assert _named(f.build_fetch_request(backoff.until_ms)) == [(T1, 0, 10)]


def test_session_errors_restart_the_session_with_a_full_fetch():
    for error, session_id in ((ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0), (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 77)):
        f, _ = _session_fetcher()
        f.build_fetch_request(1)
        assert f.handle_fetch_response({"ErrorCode": error, "Responses": []}, 1) == []     # no backoff
        req = f.build_fetch_request(1)
        assert (req["SessionId"], req["SessionEpoch"]) == (session_id, 0) and len(_named(req)) == 2


def test_a_lost_request_backs_off_the_session_and_fetches_in_full_after():
    f, _ = _session_fetcher()
    f.build_fetch_request(1)
    acts = f.handle_fetch_failure(1)
    assert {a.key for a in acts} == {(T1, 0), (T1, 1)}
    assert f.build_fetch_request(1) is None
    req = f.build_fetch_request(acts[0].until_ms)
    assert (req["SessionId"], req["SessionEpoch"]) == (77, 0) and len(_named(req)) == 2


class CountingLog(FakeLog):
    """Counts how often the fetcher reads the log's KIP-1303 figures (to compare a partition's entry)."""
    reads = 0

    @property
    def local_log_size_bytes(self):
        CountingLog.reads += 1
        return 5678

    @local_log_size_bytes.setter
    def local_log_size_bytes(self, _value):
        pass


def test_an_answer_moving_only_the_high_watermark_does_not_compare_the_partition_again():
    f = fetcher()
    f.add_partition((T1, 0), 5, CountingLog(log_end_offset=10))
    f.build_fetch_request(0)
    f.handle_fetch_response({"ErrorCode": 0, "SessionId": 77, "Responses": []}, 0)
    f.build_fetch_request(1)
    CountingLog.reads = 0
    acts = f.handle_fetch_response(response(T1, 0, HighWatermark=10, LogStartOffset=0), 2)
    assert acts == [UpdateHighWatermark((T1, 0), 10, 0)]
    assert _named(f.build_fetch_request(3)) == [] and CountingLog.reads == 0
    # records (or a leader log start past ours) change the entry: compared, and named once moved
    f.handle_fetch_response(response(T1, 0, HighWatermark=10, LogStartOffset=0, Records=b"abc"), 4)
    f.build_fetch_request(5)
    assert CountingLog.reads == 1
