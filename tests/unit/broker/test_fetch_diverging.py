"""A follower's Fetch whose last fetched epoch diverges from the leader's log is answered at once.

After a leadership move the old leader holds records the new leader never got; its
first Fetch to the new leader names its last epoch, and the answer (DivergingEpoch)
tells it where to truncate. Parking that Fetch for replica.fetch.wait.max.ms, as one
with no new data is, held every acks=all produce to the partition for 500 ms
(Kafka's ReplicaManager.fetchMessages answers a diverging epoch at once too).
"""
import asyncio
from types import SimpleNamespace

from fetch_fakes import FakeBroker, FakeReplicas

from tierlog.broker.apis import api_01_fetch as fetch
from tierlog.broker.partition import Partition
from tierlog.protocol.errors import ErrorCode
from tierlog.records import Record, build_batch
from tierlog.storage import Log, LogConfig

NOW = 1_700_000_000_000
FOLLOWER = 2


class ParkCounting(FakeReplicas):
    def __init__(self, part: Partition):
        super().__init__([part])
        self.parked = 0

    async def wait(self, keys, timeout_s, replica_id=None, view=None):
        self.parked += 1


def _leader(tmp_path) -> Partition:
    """Epoch 3 wrote offsets 0-9; this broker leads at epoch 5 (epoch 4 wrote nothing here)."""
    log = Log.open(tmp_path / "t-0", LogConfig.from_props({}), NOW)
    log.append(bytearray(build_batch([Record(i, NOW, None, b"v") for i in range(10)])), 3, NOW)
    log.assign_epoch_start_offset(5, 10)
    return Partition("t", 0, b"\x01" * 16, log, leader_id=1, leader_epoch=5)


def _follower_fetch(broker, fetch_offset, last_fetched_epoch) -> tuple[dict, int]:
    request = {"ReplicaId": FOLLOWER, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 1 << 20, "IsolationLevel": 0,
               "SessionId": 0, "SessionEpoch": -1, "ForgottenTopicsData": [], "RackId": "",
               "Topics": [{"Topic": "t", "Partitions": [
                   {"Partition": 0, "FetchOffset": fetch_offset, "PartitionMaxBytes": 1 << 20,
                    "CurrentLeaderEpoch": 5, "LastFetchedEpoch": last_fetched_epoch, "LogStartOffset": 0}]}]}
    resp = asyncio.run(fetch.handle(broker, SimpleNamespace(api_version=12, listener=None), request))
    return resp["Responses"][0]["Partitions"][0], broker.replicas.parked


def test_diverging_epoch_is_answered_without_parking(tmp_path):
    broker = FakeBroker(ParkCounting(_leader(tmp_path)))
    # the old leader appended offsets 10-11 at epoch 4, which this leader never got
    answer, parked = _follower_fetch(broker, fetch_offset=12, last_fetched_epoch=4)
    assert answer["DivergingEpoch"] == {"Epoch": 3, "EndOffset": 10}
    assert parked == 0


def test_caught_up_follower_is_parked(tmp_path):
    broker = FakeBroker(ParkCounting(_leader(tmp_path)))
    answer, parked = _follower_fetch(broker, fetch_offset=10, last_fetched_epoch=3)
    assert answer["ErrorCode"] == ErrorCode.NONE and parked == 1
