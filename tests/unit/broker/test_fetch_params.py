"""The Fetch handler's typed parameters: who fetches (ReplicaState from v15, ReplicaId before),
the broker's caps on MaxWaitMs and MaxBytes, topics by name or id, a follower's log start and
KIP-1303 local log per partition, the forgotten partitions, and the isolation it reads at."""
from tierlog.broker.apis.api_01_fetch import fetch_params
from tierlog.broker.partition import FetchIsolation

TID = b"\x03" * 16


def _partition(**extra):
    return {"Partition": 2, "FetchOffset": 10, "PartitionMaxBytes": 4096, "CurrentLeaderEpoch": 5,
            "LastFetchedEpoch": 4, **extra}


def test_a_followers_fetch_by_topic_id():
    request = {"ReplicaState": {"ReplicaId": 3, "ReplicaEpoch": 77}, "MaxWaitMs": 9_000, "MinBytes": 1,
               "MaxBytes": 1 << 30, "IsolationLevel": 0, "SessionId": 12, "SessionEpoch": 4,
               "Topics": [{"TopicId": TID, "Partitions": [_partition(LogStartOffset=3, LocalLogStartTimestamp=9,
                                                                     LocalLogSizeBytes=100)]}],
               "ForgottenTopicsData": [{"TopicId": TID, "Partitions": [7]}]}
    params = fetch_params(request, 19, 1 << 20, 500)
    assert (params.replica_id, params.replica_epoch, params.from_follower) == (3, 77, True)
    assert (params.max_wait_ms, params.max_bytes, params.session_id, params.session_epoch) == (500, 1 << 20, 12, 4)
    assert params.isolation is FetchIsolation.LOG_END and not params.read_committed_consumer
    [sp] = params.partitions
    assert (sp.topic_key, sp.partition, sp.fetch_offset, sp.max_bytes) == (TID, 2, 10, 4096)
    assert (sp.current_leader_epoch, sp.last_fetched_epoch) == (5, 4)
    assert (sp.log_start_offset, sp.local_log_start_timestamp, sp.local_log_size_bytes) == (3, 9, 100)
    assert params.forgotten == [(TID, 7)]


def test_a_read_committed_consumers_fetch_by_topic_name():
    request = {"ReplicaId": -1, "MaxWaitMs": 100, "MinBytes": 1, "MaxBytes": 1000, "IsolationLevel": 1,
               "Topics": [{"Topic": "t", "Partitions": [_partition(LogStartOffset=3)]}]}
    params = fetch_params(request, 12, 1 << 20, 500)
    assert (params.replica_id, params.replica_epoch, params.from_follower, params.by_topic_id) == (-1, -1, False, False)
    assert (params.max_wait_ms, params.max_bytes, params.session_epoch) == (100, 1000, -1)
    assert params.isolation is FetchIsolation.TXN_COMMITTED and params.read_committed_consumer
    [sp] = params.partitions
    assert sp.topic_key == "t" and sp.log_start_offset == -1       # a consumer's log start is not kept
    assert params.forgotten == []
