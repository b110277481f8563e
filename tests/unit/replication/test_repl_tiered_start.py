"""KIP-1023: where an empty follower of a tiered topic starts (``tiered_start``) and the fetcher's probe.

The rule's cases are Kafka 4.3's KIP-1023 scenarios (REFERENCE.md "KIP-1023 as Kafka 4.3 shipped it"):
leader log start zero / non-zero, with and without local deletions, all local segments deleted, a
pending-upload offset below the log start, the feature off, a compacted topic, a non-empty follower; plus
the gap Kafka leaves open (log start == local log start with segments uploaded), which tierlog closes by
probing before the first fetch.
"""
from dataclasses import dataclass, field

import pytest

from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    AwaitMetadata,
    Backoff,
    BuildRemoteLogAuxState,
    FetcherConfig,
    FetcherState,
    FetchStatus,
    FollowerLogReads,
    LeaderOffsets,
    ListLeaderOffset,
    ProbeTieredStart,
    ReplicaFetchers,
    StartKind,
    TieredStart,
    TopicTiering,
    TruncateFullyAndStartAt,
)
from tierlog.replication.tiered_start import decide, should_probe

T1 = b"\x01" * 16
KEY = (T1, 0)
ON = TopicTiering(enabled=True, tiered=True)


def leader(end, start, local_start, pending):
    return LeaderOffsets(log_end=end, log_start=start, local_log_start=local_start, earliest_pending_upload=pending)


def rebuild(offset, log_start):
    return TieredStart(StartKind.REBUILD_AT, offset, log_start)


SCENARIOS = [
    # (name, leader offsets, expected start)
    ("log start zero, local segments deleted", leader(20, 0, 6, 10), rebuild(10, 0)),
    ("log start zero, no local deletions (Kafka's disabled test: the gap)", leader(20, 0, 0, 10), rebuild(10, 0)),
    ("log start non-zero, local segments deleted", leader(20, 3, 6, 10), rebuild(10, 3)),
    ("log start non-zero, no local deletions", leader(20, 3, 3, 10), rebuild(10, 3)),
    ("all local segments deleted", leader(20, 0, 20, 20), rebuild(20, 0)),
    ("pending upload below log start, nothing local deleted", leader(20, 10, 10, 4),
     TieredStart(StartKind.START_AT, 10, 10)),
    ("pending upload below log start, local log start above it", leader(20, 10, 15, 4), rebuild(15, 10)),
    ("pending upload below the local log start", leader(20, 0, 12, 8), rebuild(12, 0)),
    ("nothing uploaded, log start == local log start == 0", leader(20, 0, 0, 0), TieredStart(StartKind.USUAL)),
    ("nothing uploaded, log start == local log start > 0", leader(20, 7, 7, 7),
     TieredStart(StartKind.START_AT, 7, 7)),
    ("-6 unknown, log start == local log start: start at the log start", leader(20, 7, 7, -1),
     TieredStart(StartKind.START_AT, 7, 7)),
    ("-6 unknown, log start == local log start == 0", leader(20, 0, 0, -1), TieredStart(StartKind.USUAL)),
    ("-6 unknown and log start != local log start: the leader does not know yet", leader(20, 0, 5, -1),
     TieredStart(StartKind.RETRY)),
    ("the leader's log is empty", leader(0, 0, 0, 0), TieredStart(StartKind.USUAL)),
    ("answers beyond the leader's log end", leader(20, 0, 0, 25), TieredStart(StartKind.RETRY)),
]


@pytest.mark.parametrize(("name", "offsets", "expected"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_kafka_scenarios(name, offsets, expected):
    assert decide(ON, 0, offsets) == expected


@pytest.mark.parametrize("topic", [TopicTiering(enabled=False, tiered=True),
                                   TopicTiering(enabled=True, tiered=True, compacted=True),
                                   TopicTiering(enabled=True, tiered=False)],
                         ids=["feature off", "compacted topic", "topic not tiered"])
def test_the_path_is_not_taken(topic):
    assert not should_probe(topic, 0)
    assert decide(topic, 0, leader(20, 0, 6, 10)).kind is StartKind.USUAL


def test_a_non_empty_follower_fetches_as_usual():
    assert not should_probe(ON, 3)
    assert decide(ON, 3, leader(20, 0, 6, 10)).kind is StartKind.USUAL     # truncated to 3: not empty


# --- the fetcher core: the probe before the first fetch, and after errors -----------------------------

@dataclass
class FakeLog(FollowerLogReads):
    log_end_offset: int = 0
    log_start_offset: int = 0
    latest_epoch: int | None = None
    local_log_start_timestamp: int = -1
    local_log_size_bytes: int = 0
    epoch_ends: dict = field(default_factory=dict)

    def end_offset_for_epoch(self, epoch):
        return self.epoch_ends.get(epoch, (-1, -1))


def fetcher(enabled=True, log=None, tiering=ON):
    f = FetcherState(source_broker_id=1, replica_id=2, replica_epoch=42,
                     config=FetcherConfig(backoff_ms=100, backoff_max_ms=1000))
    f.update_last_tiered_offset_enable(enabled)
    f.add_partition(KEY, 5, log or FakeLog(), tiering)
    return f


def response(**data):
    data.setdefault("ErrorCode", 0)
    return {"ErrorCode": 0, "Responses": [{"TopicId": T1, "Partitions": [{"PartitionIndex": 0, **data}]}]}


def test_gap_an_empty_replica_asks_before_its_first_fetch_and_starts_at_the_pending_upload_offset():
    log = FakeLog()
    f = fetcher(log=log)
    assert f.build_fetch_request(0) is None                 # not fetched from 0
    assert f.take_probes(0) == [ProbeTieredStart(KEY, 5)]
    assert f.take_probes(0) == [] and f.build_fetch_request(0) is None
    # leader log start == local log start == 0, segments uploaded up to 9: Kafka would copy from 0
    assert f.on_tiered_start(KEY, 5, 0, leader(20, 0, 0, 10), 1) == [BuildRemoteLogAuxState(KEY, 5, 10, 0)]
    assert f.partitions[KEY].status is FetchStatus.TIERED
    log.log_end_offset, log.latest_epoch = 10, 3            # the shell rebuilt the log at 10
    assert f.on_remote_aux_state(KEY, 5, 0, 2) == []
    req = f.build_fetch_request(2)
    assert req["Topics"][0]["Partitions"][0]["FetchOffset"] == 10
    assert req["Topics"][0]["Partitions"][0]["LastFetchedEpoch"] == 3


def test_feature_off_fetches_from_zero_and_offset_moved_takes_kip405s_path():
    f = fetcher(enabled=False)
    assert f.take_probes(0) == []
    assert f.build_fetch_request(0)["Topics"][0]["Partitions"][0]["FetchOffset"] == 0
    assert f.handle_fetch_response(response(ErrorCode=ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE), 1) == [
        BuildRemoteLogAuxState(KEY, 5)]


def test_compacted_or_untiered_topics_never_probe():
    for tiering in (TopicTiering(tiered=True, compacted=True), TopicTiering(tiered=False)):
        f = fetcher(tiering=tiering)
        assert f.take_probes(0) == []
        assert f.build_fetch_request(0) is not None
        assert f.handle_fetch_response(response(ErrorCode=ErrorCode.OFFSET_OUT_OF_RANGE), 1) == [
            ListLeaderOffset(KEY, 5, -1)]


def test_usual_answer_fetches_from_zero_and_later_errors_probe_again():
    f = fetcher()
    assert f.take_probes(0) == [ProbeTieredStart(KEY, 5)]
    assert f.on_tiered_start(KEY, 5, 0, leader(0, 0, 0, 0), 1) == []      # the leader is empty too
    assert f.take_probes(1) == []
    assert f.build_fetch_request(1)["Topics"][0]["Partitions"][0]["FetchOffset"] == 0
    # Kafka's trigger: the leader moved on meanwhile; either error probes again (still empty) ...
    assert f.handle_fetch_response(response(ErrorCode=ErrorCode.OFFSET_OUT_OF_RANGE), 2) == [
        ProbeTieredStart(KEY, 5)]
    assert f.on_tiered_start(KEY, 5, 0, leader(30, 0, 12, 20), 3) == [BuildRemoteLogAuxState(KEY, 5, 20, 0)]
    f.on_remote_aux_state(KEY, 5, 0, 3)
    # ... and where the rule says "as usual", that error's usual handling follows (no probe loop)
    f.build_fetch_request(4)
    assert f.handle_fetch_response(response(ErrorCode=ErrorCode.OFFSET_OUT_OF_RANGE), 4) == [
        ProbeTieredStart(KEY, 5)]
    assert f.on_tiered_start(KEY, 5, 0, leader(0, 0, 0, 0), 5) == [ListLeaderOffset(KEY, 5, -1)]
    assert f.on_leader_offset(KEY, 5, -1, 0, 0, 5) == [ListLeaderOffset(KEY, 5, -2)]
    assert f.on_leader_offset(KEY, 5, -2, 0, 0, 5) == []
    f.build_fetch_request(6)
    assert f.handle_fetch_response(response(ErrorCode=ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE), 6) == [
        ProbeTieredStart(KEY, 5)]
    assert f.on_tiered_start(KEY, 5, 0, leader(0, 0, 0, 0), 7) == [BuildRemoteLogAuxState(KEY, 5)]


def test_log_start_answer_restarts_the_log_there():
    f = fetcher()
    f.take_probes(0)
    assert f.on_tiered_start(KEY, 5, 0, leader(20, 7, 7, 7), 1) == [TruncateFullyAndStartAt(KEY, 7)]
    assert f.partitions[KEY].status is FetchStatus.FETCHING


def test_unknown_pending_upload_offset_is_asked_again_after_a_backoff():
    f = fetcher()
    f.take_probes(0)
    [act] = f.on_tiered_start(KEY, 5, 0, leader(20, 0, 5, -1), 10)
    assert isinstance(act, Backoff) and act.until_ms == 110
    assert f.take_probes(109) == [] and f.build_fetch_request(109) is None
    assert f.take_probes(110) == [ProbeTieredStart(KEY, 5)]
    [act] = f.on_tiered_start(KEY, 5, ErrorCode.REPLICA_NOT_AVAILABLE, None, 110)   # ListOffsets error
    assert isinstance(act, Backoff) and act.until_ms == 310 and act.error == ErrorCode.REPLICA_NOT_AVAILABLE


def test_a_failed_rebuild_probes_again():
    f = fetcher()
    f.take_probes(0)
    f.on_tiered_start(KEY, 5, 0, leader(20, 0, 6, 10), 0)
    [act] = f.on_remote_aux_state(KEY, 5, ErrorCode.REPLICA_NOT_AVAILABLE, 0)
    assert isinstance(act, Backoff)
    assert f.build_fetch_request(act.until_ms) is None
    assert f.take_probes(act.until_ms) == [ProbeTieredStart(KEY, 5)]


def test_fenced_probe_waits_for_metadata_and_stale_answers_are_ignored():
    fs = ReplicaFetchers(replica_id=2)
    fs.update_last_tiered_offset_enable(True)
    log = FakeLog()
    fs.become_follower(KEY, 1, 5, log, ON)
    f = fs.fetcher_for(KEY)
    assert f.last_tiered_offset_enable
    f.take_probes(0)
    assert f.on_tiered_start(KEY, 5, ErrorCode.FENCED_LEADER_EPOCH, None, 0) == [
        AwaitMetadata(KEY, 5, ErrorCode.FENCED_LEADER_EPOCH)]
    assert fs.become_follower(KEY, 1, 6, log, ON)           # a newer epoch: probe again at it
    assert f.take_probes(0) == [ProbeTieredStart(KEY, 6)]
    assert f.on_tiered_start(KEY, 5, 0, leader(20, 0, 6, 10), 0) == []    # an answer for epoch 5: stale
    assert f.partitions[KEY].status is FetchStatus.PROBING


def test_the_dynamic_config_reaches_every_fetcher_and_the_topic_traits_update():
    fs = ReplicaFetchers(replica_id=2)
    fs.become_follower(KEY, 1, 5, FakeLog(), ON)
    f = fs.fetcher_for(KEY)
    assert f.take_probes(0) == []                           # off by default (Kafka's default)
    fs.update_last_tiered_offset_enable(True)
    assert f.take_probes(0) == [ProbeTieredStart(KEY, 5)]
    fs.become_follower((T1, 1), 3, 5, FakeLog(), TopicTiering(tiered=False))
    assert fs.fetcher_for((T1, 1)).last_tiered_offset_enable
    fs.set_tiering((T1, 1), ON)
    assert fs.fetcher_for((T1, 1)).take_probes(0) == [ProbeTieredStart((T1, 1), 5)]
