"""The share coordinator on the coordinator runtime, with its partition's log faked in memory:
the share-state requests write ShareSnapshot / ShareUpdate records to ``__share_group_state``,
a new leader loads them back to the same state, a refused write reloads the partition from the
log, and a key of a partition not led here answers NOT_COORDINATOR."""
import asyncio
import struct
from types import SimpleNamespace

from tierlog.broker.coordinator_runtime import Hosted
from tierlog.broker.partition import AppendOutcome
from tierlog.broker.share_coordinator import SHARE_STATE_TOPIC, ShareCoordinator, coordinator_key
from tierlog.group.share_state import ShareStateShard
from tierlog.group.share_state_records import SHARE_SNAPSHOT, SHARE_UPDATE, SharePartitionKey, decode_key
from tierlog.protocol.errors import ErrorCode
from tierlog.records import decode_batches

CONFIG = {"share.coordinator.state.topic.num.partitions": 1, "share.coordinator.state.topic.replication.factor": 1,
          "share.coordinator.state.topic.min.isr": 1, "share.coordinator.state.topic.segment.bytes": 1 << 20,
          "share.coordinator.snapshot.update.records.per.snapshot": 3, "share.coordinator.write.timeout.ms": 1000,
          "share.coordinator.state.topic.prune.interval.ms": 3_600_000}
KEY = SharePartitionKey("g", bytes(range(16)), 0)
ACKED = {"FirstOffset": 0, "LastOffset": 1, "DeliveryState": 2, "DeliveryCount": 1}
RELEASED = {"FirstOffset": 2, "LastOffset": 2, "DeliveryState": 0, "DeliveryCount": 1}


class Config(dict):
    node_id = 1


class Log:
    """The partition's log: appended batches get consecutive offsets; reads serve them back."""

    def __init__(self):
        self.batches: list[bytes] = []
        self.log_end_offset = 0
        self.log_start_offset = 0
        self.refuse = 0

    def delete_records(self, part, offset, timeout_ms):
        assert offset <= self.log_end_offset, "past the high watermark"
        self.log_start_offset = max(self.log_start_offset, offset)
        return ErrorCode.NONE, offset, None

    def append_records(self, part, records, origin, acks, timeout_ms):
        if self.refuse:
            self.refuse -= 1
            return AppendOutcome(ErrorCode.NOT_ENOUGH_REPLICAS), None
        data = bytearray(records)
        struct.pack_into(">q", data, 0, self.log_end_offset)          # the base offset, outside the CRC
        (header, recs), = decode_batches(bytes(data))
        self.batches.append(bytes(data))
        self.log_end_offset += len(recs)
        return AppendOutcome(ErrorCode.NONE, end_offset=self.log_end_offset, appended=True), None

    def read(self, offset, max_bytes, isolation):
        data = b"".join(b for b in self.batches if struct.unpack_from(">q", b)[0] >= offset)
        return SimpleNamespace(error=ErrorCode.NONE, parts=[SimpleNamespace(read=lambda: data)])

    def types(self):
        return [decode_key(r.key)[0] for b in self.batches for _h, recs in decode_batches(b) for r in recs]


class Part:
    topic, index, local_log_start_offset = SHARE_STATE_TOPIC, 0, 0
    config = SimpleNamespace(max_message_bytes=1 << 20)

    def __init__(self, log, leader_epoch=7):
        self.log, self.leader_epoch = log, leader_epoch

    @property
    def log_end_offset(self):
        return self.log.log_end_offset

    high_watermark = log_end_offset         # every append commits at once here

    @property
    def log_start_offset(self):
        return self.log.log_start_offset

    def read(self, offset, max_bytes, isolation):
        return self.log.read(offset, max_bytes, isolation)

    def leads(self, epoch):
        return epoch == self.leader_epoch


def coordinator(log):
    c = ShareCoordinator(Config(CONFIG), log, lambda: 1000)
    part = Part(log)
    c.runtime._hosted[0] = Hosted(part, part.leader_epoch, None, ShareStateShard(3))     # loaded, empty
    return c, part


async def until(predicate):
    for _ in range(200):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("never happened")


def test_coordinator_key_is_kafkas():
    assert coordinator_key(KEY) == "g:AAECAwQFBgcICQoLDA0ODw:0"


def test_state_written_is_loaded_back_by_the_next_leader():
    async def run():
        log = Log()
        c, part = coordinator(log)
        assert await c.read_state(KEY, 0) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        assert await c.initialize_state(KEY, 0, 0) == ErrorCode.NONE
        for batches in ([RELEASED], [ACKED], [], [RELEASED]):
            assert await c.write_state(KEY, 0, 1, -1, batches) == ErrorCode.NONE
        assert log.types() == [SHARE_SNAPSHOT, SHARE_UPDATE, SHARE_UPDATE, SHARE_SNAPSHOT, SHARE_UPDATE]
        error, state = await c.read_state(KEY, 1)
        assert error == ErrorCode.NONE and state["StartOffset"] == 2 and state["StateBatches"] == [RELEASED]
        await c.close()

        again = ShareCoordinator(Config(CONFIG), log, lambda: 2000)       # another broker takes over
        again.runtime.on_leader(Part(log, leader_epoch=8))
        await until(lambda: again.runtime.locate(0)[1] == ErrorCode.NONE)
        assert await again.read_state(KEY, 2) == (ErrorCode.NONE, state)
        assert await again.read_state_summary(KEY) == (ErrorCode.NONE, {"StateEpoch": 0, "LeaderEpoch": 2,
                                                                        "StartOffset": 2})
        assert await again.write_state(KEY, 0, 1, -1, []) == ErrorCode.FENCED_LEADER_EPOCH   # the old leader
        assert await again.delete_state(KEY) == ErrorCode.NONE
        assert await again.read_state(KEY, 2) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        await again.close()
    asyncio.run(run())


def test_pruning_keeps_what_a_reload_needs():
    async def run():
        log = Log()
        c, _part = coordinator(log)
        other = SharePartitionKey("g2", bytes(16), 1)
        for key in (KEY, other):
            await c.initialize_state(key, 0, 0)                   # snapshots at 0 and 1
        for batches in ([RELEASED], [ACKED], [], [RELEASED]):  # KEY: updates at 2, 3, snapshot at 4, update 5
            await c.write_state(KEY, 0, 1, -1, batches)
        assert await c.prune(c.runtime.hosted(0)) == 1           # the other key's snapshot holds it
        await c.write_state(other, 0, 1, -1, [ACKED])
        await c.write_state(other, 0, 1, -1, [])
        await c.write_state(other, 0, 1, -1, [RELEASED])         # its snapshot at 8
        assert await c.prune(c.runtime.hosted(0)) == 4
        states = [await c.read_state(key, 1) for key in (KEY, other)]
        await c.close()

        again = ShareCoordinator(Config(CONFIG), log, lambda: 2000)
        again.runtime.on_leader(Part(log, leader_epoch=8))
        await until(lambda: again.runtime.locate(0)[1] == ErrorCode.NONE)
        assert [await again.read_state(key, 1) for key in (KEY, other)] == states
        assert states[0][1]["StateBatches"] == [RELEASED] and states[1][1]["StartOffset"] == 2
        await again.delete_state(KEY)
        await again.delete_state(other)
        assert await again.prune(again.runtime.hosted(0)) == log.log_end_offset == 13
        await again.close()
    asyncio.run(run())


def test_a_refused_write_is_not_kept_the_partition_reloads():
    async def run():
        log = Log()
        c, _part = coordinator(log)
        await c.initialize_state(KEY, 0, 0)
        log.refuse = 1
        assert await c.write_state(KEY, 0, 1, -1, [ACKED]) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert c.runtime.locate(0)[1] in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NONE)
        await until(lambda: c.runtime.locate(0)[1] == ErrorCode.NONE)
        error, state = await c.read_state(KEY, 1)
        assert error == ErrorCode.NONE and state == {"StateEpoch": 0, "StartOffset": 0, "StateBatches": []}
        await c.close()
    asyncio.run(run())


def test_a_key_of_a_partition_not_led_here_answers_not_coordinator():
    async def run():
        c = ShareCoordinator(Config(CONFIG), Log(), lambda: 1000)
        assert await c.initialize_state(KEY, 0, 0) == ErrorCode.NOT_COORDINATOR
        assert await c.read_state(KEY, 0) == (ErrorCode.NOT_COORDINATOR, None)
        await c.close()
    asyncio.run(run())
