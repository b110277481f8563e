"""ListOffsets by who asks: a consumer gets the high watermark and nothing past it, a replica the
log end offset; a new leader whose high watermark lags its epoch start answers OFFSET_NOT_AVAILABLE."""
import asyncio
from types import SimpleNamespace

from leaders import lead

from tierlog.broker.apis import api_02_list_offsets as list_offsets
from tierlog.broker.partition import Partition
from tierlog.protocol.errors import ErrorCode
from tierlog.records import Record, build_batch
from tierlog.storage import Log, LogConfig

NOW = 1_700_000_000_000
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


class FakeBroker:
    """``led_partition`` as the broker answers it: the leader's replica, else NOT_LEADER_OR_FOLLOWER."""

    def __init__(self, part: Partition, node_id: int):
        self.part, self.node_id = part, node_id
        self.remote = None          # tiering off
        self.authorizer = None      # no ACL checks

    def led_partition(self, topic, index):
        if (topic, index) != self.part.key:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return self.part, 0 if self.part.leader_id == self.node_id else ErrorCode.NOT_LEADER_OR_FOLLOWER


def _partition(tmp_path, records=10, high_watermark=6, leader_id=1) -> Partition:
    log = Log.open(tmp_path / "t-0", LogConfig.from_props({}), NOW)
    batch = build_batch([Record(i, NOW + i, None, b"v") for i in range(records)])
    log.append(bytearray(batch), 3, NOW)
    part = Partition("t", 0, b"\x01" * 16, log, leader_id=leader_id, leader_epoch=3)
    part.follower_hw = high_watermark
    return part


def _ask(broker, replica_id, timestamp, isolation=0, version=7, epoch=-1) -> dict:
    request = {"ReplicaId": replica_id, "IsolationLevel": isolation, "Topics": [
        {"Name": "t", "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": epoch, "Timestamp": timestamp}]}]}
    resp = asyncio.run(list_offsets.handle(broker, SimpleNamespace(api_version=version), request))
    return resp["Topics"][0]["Partitions"][0]


def test_consumer_latest_is_the_high_watermark(tmp_path):
    broker = FakeBroker(_partition(tmp_path), node_id=1)
    for isolation in (0, 1):                # READ_UNCOMMITTED: HW; READ_COMMITTED: LSO (= HW, no transactions)
        answer = _ask(broker, -1, LATEST, isolation)
        assert (answer["ErrorCode"], answer["Offset"], answer["LeaderEpoch"]) == (0, 6, 3)


def test_replica_latest_is_the_log_end_offset(tmp_path):
    broker = FakeBroker(_partition(tmp_path), node_id=1)
    for isolation in (0, 1):                # a replica's IsolationLevel is ignored
        answer = _ask(broker, 2, LATEST, isolation, epoch=3)
        assert (answer["ErrorCode"], answer["Offset"]) == (0, 10)
    assert _ask(broker, 2, EARLIEST, epoch=3)["Offset"] == 0


def test_replica_request_is_fenced_by_current_leader_epoch(tmp_path):
    broker = FakeBroker(_partition(tmp_path), node_id=1)
    assert _ask(broker, 2, LATEST, epoch=2)["ErrorCode"] == ErrorCode.FENCED_LEADER_EPOCH
    assert _ask(broker, 2, LATEST, epoch=4)["ErrorCode"] == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_only_the_debugging_replica_may_ask_a_follower(tmp_path):
    follower = FakeBroker(_partition(tmp_path, leader_id=1), node_id=2)
    assert _ask(follower, -1, LATEST)["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _ask(follower, 3, LATEST)["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    answer = _ask(follower, -2, LATEST)
    assert (answer["ErrorCode"], answer["Offset"]) == (0, 10)
    assert _ask(follower, -2, EARLIEST)["Offset"] == 0


def test_a_consumer_finds_no_offset_past_the_high_watermark(tmp_path):
    broker = FakeBroker(_partition(tmp_path), node_id=1)        # 10 records at NOW + i, HW 6
    for timestamp, offset in ((NOW + 5, 5), (NOW + 6, -1), (NOW + 9, -1), (NOW + 99, -1)):
        answer = _ask(broker, -1, timestamp)
        assert (answer["ErrorCode"], answer["Offset"]) == (0, offset), timestamp
    assert _ask(broker, -1, MAX_TIMESTAMP)["Offset"] == -1        # the max timestamp is at offset 9
    assert _ask(broker, 2, NOW + 9, epoch=3)["Offset"] == 9         # a replica sees the whole log
    assert _ask(broker, 2, MAX_TIMESTAMP, epoch=3)["Offset"] == 9


def test_a_new_leader_below_its_epoch_start_answers_offset_not_available(tmp_path):
    part = _partition(tmp_path)
    # elected at log end 10 with the high watermark 6 it had as a follower: offsets 6-9 are not
    # known to be committed until the followers catch up
    lead(part, replicas=(1, 2))
    broker = FakeBroker(part, node_id=1)
    for target in (LATEST, NOW + 7, NOW + 99, MAX_TIMESTAMP):
        answer = _ask(broker, -1, target)
        assert (answer["ErrorCode"], answer["Offset"]) == (ErrorCode.OFFSET_NOT_AVAILABLE, -1), target
    assert _ask(broker, -1, NOW + 2)["Offset"] == 2                  # below the high watermark: answered
    assert _ask(broker, -1, EARLIEST)["Offset"] == 0
    assert _ask(broker, 2, LATEST, epoch=3)["Offset"] == 10           # replicas are not held back
