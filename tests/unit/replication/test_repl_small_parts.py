"""Backoff, KIP-1303 report rule and the AlterPartition request grouping."""
import random

import pytest

from tierlog.replication import (
    AlterPartitionItem,
    ExponentialBackoff,
    IsrMember,
    LocalLog,
    build_alter_partition_request,
    changed_materially,
)


def test_backoff_exponential_capped_and_jitter_bounded():
    b = ExponentialBackoff(100, 1000)
    assert [b.delay_ms(i) for i in range(1, 7)] == [100, 200, 400, 800, 1000, 1000]
    j = ExponentialBackoff(100, 1000, jitter=0.2)
    rng = random.Random(1)
    assert all(100 <= j.delay_ms(1, rng) <= 120 for _ in range(50))
    assert j.delay_ms(10, rng) == 1000
    assert b.delay_ms(10_000) == 1000


@pytest.mark.parametrize("old,new,threshold,expected", [
    (LocalLog(5, 1000), LocalLog(5, 1000), -1, False),
    (LocalLog(5, 1000), LocalLog(5, 1099), -1, False),      # under 10 %
    (LocalLog(5, 1000), LocalLog(5, 1101), -1, True),       # over 10 %
    (LocalLog(5, 1000), LocalLog(5, 800), -1, True),        # retention shrank it
    (LocalLog(5, 1000), LocalLog(6, 1000), -1, True),       # start timestamp moved
    (LocalLog(), LocalLog(5, 1000), -1, True),              # first report
    (LocalLog(5, 1000), LocalLog(), -1, True),
    (LocalLog(5, 990), LocalLog(5, 1001), 1000, True),      # crossed the eligibility threshold
    (LocalLog(5, 1001), LocalLog(5, 1050), 1000, False),
])
def test_material_change(old, new, threshold, expected):
    assert changed_materially(old, new, threshold) is expected


def test_alter_partition_request_groups_by_topic():
    m = (IsrMember(1, 10, LocalLog(7, 8)),)
    items = [AlterPartitionItem(b"a" * 16, 0, 3, 4, m, "shrink"), AlterPartitionItem(b"b" * 16, 2, 1, 1, m, "report"),
             AlterPartitionItem(b"a" * 16, 1, 3, 9, m, "expand")]
    req = build_alter_partition_request(1, 10, items)
    assert req["BrokerId"] == 1 and req["BrokerEpoch"] == 10
    assert [(t["TopicId"], [p["PartitionIndex"] for p in t["Partitions"]]) for t in req["Topics"]] == [
        (b"a" * 16, [0, 1]), (b"b" * 16, [2])]
    assert req["Topics"][0]["Partitions"][1]["PartitionEpoch"] == 9
    assert req["Topics"][0]["Partitions"][0]["NewIsrWithEpochs"] == [
        {"BrokerId": 1, "BrokerEpoch": 10, "LocalLogStartTimestamp": 7, "LocalLogSizeBytes": 8}]


def _round_trip(struct, version, value):
    from tierlog.protocol import codec
    out = codec.encode_struct(struct, version, True, value)
    decoded, _ = codec.decode_struct(struct, version, True, bytes(out))
    return decoded


def test_alter_partition_request_round_trips_through_v4_schema():
    from tierlog.protocol.messages import alter_partition as schema
    m = (IsrMember(1, 10, LocalLog(7, 8)), IsrMember(2, 11, LocalLog()))
    req = build_alter_partition_request(1, 10, [AlterPartitionItem(b"a" * 16, 0, 3, 4, m, "expand")])
    decoded = _round_trip(schema.REQUEST, schema.LOCAL_LOG_STATE_VERSION, req)
    part = decoded["Topics"][0]["Partitions"][0]
    assert part["NewIsrWithEpochs"][0]["LocalLogStartTimestamp"] == 7
    assert part["NewIsrWithEpochs"][1]["LocalLogSizeBytes"] == -1
    assert part["PartitionEpoch"] == 4 and part["LeaderEpoch"] == 3


def test_fetch_request_round_trips_through_v19_schema():
    from test_repl_fetcher import FakeLog

    from tierlog.protocol.messages import fetch as schema
    from tierlog.replication import FETCH_VERSION, FetcherState
    f = FetcherState(1, 2, 42)
    f.add_partition((b"a" * 16, 3), 5, FakeLog(log_end_offset=9, latest_epoch=4))
    assert FETCH_VERSION == schema.LOCAL_LOG_STATE_VERSION
    decoded = _round_trip(schema.REQUEST, FETCH_VERSION, f.build_fetch_request(0))
    assert decoded["ReplicaState"] == {"ReplicaId": 2, "ReplicaEpoch": 42}
    p = decoded["Topics"][0]["Partitions"][0]
    assert (p["FetchOffset"], p["LastFetchedEpoch"], p["LocalLogStartTimestamp"], p["LocalLogSizeBytes"]) == (
        9, 4, 1234, 5678)
