"""Offsets committed in a transaction (TxnOffsetCommit, KIP-98 / KIP-447) take effect only with
the transaction's COMMIT marker, are dropped by its ABORT, come back from the log on load, and
make a RequireStable OffsetFetch answer UNSTABLE_OFFSET_COMMIT while they wait."""
import random

from tierlog.group import GroupConfig, GroupShard
from tierlog.protocol.errors import ErrorCode as E

PID, EPOCH = 42, 3


def shard() -> GroupShard:
    return GroupShard(0, GroupConfig(), random.Random(1))


def txn_commit(s: GroupShard, offset: int, pid: int = PID):
    req = {"TransactionalId": "tx", "GroupId": "g", "ProducerId": pid, "ProducerEpoch": EPOCH, "GenerationId": -1,
           "MemberId": "", "GroupInstanceId": None,
           "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": offset,
                                                     "CommittedMetadata": ""}]}]}
    return s.txn_commit_offsets(req, "tok", 10)


def committed(s: GroupShard, stable: bool = False):
    topics = s.fetch_offsets("g", None if not stable else [{"Name": "t", "PartitionIndexes": [0]}], stable)["Topics"]
    return [(p["CommittedOffset"], p["ErrorCode"]) for t in topics for p in t["Partitions"]]


def test_offsets_wait_for_the_commit_marker_and_an_abort_drops_them():
    s = shard()
    out = txn_commit(s, 7)
    assert out.txn_producer == (PID, EPOCH) and len(out.records) == 1
    assert out.answers[0][1]["Topics"][0]["Partitions"][0]["ErrorCode"] == E.NONE
    s.apply_committed(out.on_commit, PID)               # the transactional batch is replicated
    assert committed(s) == []
    assert committed(s, stable=True) == [(-1, E.UNSTABLE_OFFSET_COMMIT)]
    s.complete_txn(PID, commit=True)
    assert committed(s) == [(7, E.NONE)]
    s.apply_committed(txn_commit(s, 9).on_commit, PID)
    s.complete_txn(PID, commit=False)
    assert committed(s, stable=True) == [(7, E.NONE)]


def test_the_load_replays_transactional_offsets_and_markers():
    s = shard()
    key, value = txn_commit(s, 5).records[0]
    loaded = shard()
    loaded.replay_txn(PID, key, value)
    loaded.replay_txn(PID + 1, *txn_commit(s, 8, PID + 1).records[0])
    loaded.complete_txn(PID, commit=True)
    assert committed(loaded) == [(5, E.NONE)]
    loaded.complete_txn(PID + 1, commit=False)
    assert committed(loaded) == [(5, E.NONE)]
