"""A follower's fetch that parked and woke reads again only what changed meanwhile.

The fetches below name every partition at the follower's log end (its position moved) and park;
while one waits, a partition gets a record, or a partition's high watermark moves with nothing
new to read (another replica caught up). The answer must carry the record and the new high
watermark; a partition not marked meanwhile is not read again, nor one whose watermarks alone
moved.
"""
import asyncio
from types import SimpleNamespace

from fetch_fakes import FakeBroker, FakeReplicas
from leaders import lead

from tierlog.broker.apis import api_01_fetch as fetch
from tierlog.broker.partition import Partition
from tierlog.protocol.errors import ErrorCode
from tierlog.records import Record, build_batch
from tierlog.storage import Log, LogConfig

NOW = 1_700_000_000_000
FOLLOWER = 2
CAUGHT_UP = {0: 2, 1: 2, 2: 2}      # the follower names every partition at its log end (2 records each)


def _batch(n: int = 1) -> bytearray:
    return bytearray(build_batch([Record(i, NOW, None, b"v%d" % i) for i in range(n)]))


def _partition(tmp_path, index: int, replicas=(1, FOLLOWER)) -> Partition:
    log = Log.open(tmp_path / f"t-{index}", LogConfig.from_props({}), NOW)
    part = Partition("t", index, b"\x01" * 16, log, leader_id=1, leader_epoch=4)
    lead(part, replicas=replicas)
    part.log.append(_batch(2), 4, NOW)
    return part


class CountingReplicas(FakeReplicas):
    """Counts the partitions' log reads; moves watermarks or appends while parked (``while_parked``)."""

    def __init__(self, parts, sessions, while_parked):
        super().__init__(parts)
        self.sessions, self.while_parked, self.reads = sessions, while_parked, []
        for part in parts:
            read = part.log.read
            part.log.read = lambda *a, _read=read, _key=part.key, **k: (self.reads.append(_key), _read(*a, **k))[1]

    def on_follower_fetch(self, part, replica_id, fetched, epoch, moved):
        part.on_follower_fetch(replica_id, fetched.fetch_offset, NOW)
        return ErrorCode.NONE

    async def wait(self, keys, timeout_s, replica_id=None, view=None):
        self.while_parked(self)


def _broker(parts, while_parked) -> FakeBroker:
    broker = FakeBroker(FakeReplicas([]))
    broker.replicas = CountingReplicas(parts, broker.fetch_sessions, while_parked)
    return broker


def _fetch(broker, session_id, epoch, offsets: dict[int, int]) -> dict:
    request = {"ReplicaId": FOLLOWER, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 1 << 20, "IsolationLevel": 0,
               "SessionId": session_id, "SessionEpoch": epoch, "ForgottenTopicsData": [], "RackId": "",
               "Topics": [{"Topic": "t", "Partitions": [
                   {"Partition": i, "FetchOffset": o, "PartitionMaxBytes": 1 << 20, "CurrentLeaderEpoch": 4,
                    "LastFetchedEpoch": -1, "LogStartOffset": 0} for i, o in offsets.items()]}]}
    return asyncio.run(fetch.handle(broker, SimpleNamespace(api_version=12, listener=None), request))


def _by_partition(response) -> dict[int, dict]:
    return {p["PartitionIndex"]: p for t in response["Responses"] for p in t["Partitions"]}


def _after_first_pass(broker) -> list:
    """The reads once woken (the first pass read every named partition once, in the session's order)."""
    reads = broker.replicas.reads
    assert sorted(reads[:3]) == [("t", 0), ("t", 1), ("t", 2)], reads
    return reads[3:]


def _session(tmp_path, while_parked, replicas=(1, FOLLOWER)):
    parts = [_partition(tmp_path, i, replicas) for i in range(3)]
    broker = _broker(parts, while_parked)
    opened = _fetch(broker, 0, 0, {0: 0, 1: 0, 2: 0})       # the full fetch: every partition's records
    assert {i: len(p["Records"]) > 0 for i, p in _by_partition(opened).items()} == {0: True, 1: True, 2: True}
    broker.replicas.reads.clear()
    return broker, parts, opened["SessionId"]


def test_a_woken_fetch_reads_the_marked_partition_and_keeps_the_named_one(tmp_path):
    def append_to_1(replicas):
        part = replicas.parts[("t", 1)]
        part.log.append(_batch(), 4, NOW)
        replicas.sessions.mark_changed([("t", 1)])

    broker, _, session = _session(tmp_path, append_to_1)
    answer = _by_partition(_fetch(broker, session, 1, CAUGHT_UP))
    assert answer[1]["Records"] and answer[1]["ErrorCode"] == ErrorCode.NONE
    assert answer[0]["HighWatermark"] == answer[2]["HighWatermark"] == 2 and not answer[0]["Records"]
    assert _after_first_pass(broker) == [("t", 1)]                # read again once woken: 1 alone


def test_a_named_partition_marked_while_parked_gets_its_new_high_watermark_without_a_read(tmp_path):
    def third_replica_catches_up_on_0(replicas):
        part = replicas.parts[("t", 0)]
        part.on_follower_fetch(3, 2, NOW)
        replicas.sessions.mark_changed([("t", 0)], records=False)

    broker, parts, session = _session(tmp_path, third_replica_catches_up_on_0, replicas=(1, FOLLOWER, 3))
    answer = _by_partition(_fetch(broker, session, 1, CAUGHT_UP))
    assert parts[0].high_watermark == 2 and answer[0]["HighWatermark"] == 2 and not answer[0]["Records"]
    assert _after_first_pass(broker) == []                        # 0's watermarks taken again, not read


def test_a_named_partition_with_a_record_appended_while_parked_is_read_again(tmp_path):
    def append_to_0(replicas):
        replicas.parts[("t", 0)].log.append(_batch(), 4, NOW)
        replicas.sessions.mark_changed([("t", 0)])

    broker, _, session = _session(tmp_path, append_to_0)
    answer = _by_partition(_fetch(broker, session, 1, CAUGHT_UP))
    assert answer[0]["Records"] and answer[0]["HighWatermark"] == 2
    assert _after_first_pass(broker) == [("t", 0)]


def test_a_sessionless_fetch_reads_everything_again_once_woken(tmp_path):
    """Without a session nothing marks what changed while it waited (the replica manager watches
    its partitions instead): every partition is read again."""
    parts = [_partition(tmp_path, i) for i in range(2)]
    broker = _broker(parts, lambda replicas: replicas.parts[("t", 1)].log.append(_batch(), 4, NOW))
    answer = _by_partition(_fetch(broker, 0, -1, {0: 2, 1: 2}))
    assert answer[1]["Records"] and not answer[0]["Records"]
    assert sorted(broker.replicas.reads) == [("t", 0), ("t", 0), ("t", 1), ("t", 1)]
