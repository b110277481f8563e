"""High watermarks in ``replication-offset-checkpoint`` (Kafka's name and format)."""

import asyncio
from types import SimpleNamespace

from storage_helpers import NOW, batch, config

from tierlog.broker.replica_manager import ReplicaManager
from tierlog.metadata import TopicInfo
from tierlog.metadata.image import PartitionInfo
from tierlog.storage import LogManager
from tierlog.storage.checkpoint import (
    REPLICATION_OFFSET_CHECKPOINT,
    read_offsets,
    write_offsets,
)

TOPIC_ID = bytes(range(16))
FILE = REPLICATION_OFFSET_CHECKPOINT


def _manager_with_log(tmp_path, records=30, topic="t", partition=0):
    manager = LogManager([tmp_path], NOW)
    log = manager.create(topic, partition, TOPIC_ID, config(), NOW)
    for _ in range(records // 3):
        log.append(batch(3), 0, NOW)
    return manager


def test_checkpoint_round_trip_and_format(tmp_path):
    path = tmp_path / FILE
    write_offsets(path, {("b", 1): 7, ("a", 0): 12})
    assert path.read_text() == "0\n2\na 0 12\nb 1 7\n"
    assert read_offsets(path) == {("a", 0): 12, ("b", 1): 7}
    assert not list(tmp_path.glob("*.tmp"))


def test_high_watermark_restored_after_reopen(tmp_path):
    manager = _manager_with_log(tmp_path)
    manager.write_high_watermarks({("t", 0): 21})
    manager.wait_for_writes()     # written on the log dir's writer thread
    assert read_offsets(tmp_path / FILE) == {("t", 0): 21}
    manager.close()
    again = LogManager([tmp_path], NOW)
    assert again.get("t", 0).log_end_offset == 30
    assert again.checkpointed_high_watermark("t", 0) == 21
    again.close()
    assert read_offsets(tmp_path / FILE) == {("t", 0): 21}    # kept while nobody rewrites it


def test_high_watermark_capped_at_log_end_offset(tmp_path):
    manager = _manager_with_log(tmp_path, records=9)
    manager.close()
    write_offsets(tmp_path / FILE, {("t", 0): 500})
    again = LogManager([tmp_path], NOW)
    assert again.checkpointed_high_watermark("t", 0) == 9
    again.close()


def test_missing_or_corrupt_file_means_zero(tmp_path):
    manager = _manager_with_log(tmp_path)
    manager.close()
    (tmp_path / FILE).unlink(missing_ok=True)
    again = LogManager([tmp_path], NOW)
    assert again.checkpointed_high_watermark("t", 0) == 0
    assert again.checkpointed_high_watermark("unknown", 0) == 0
    again.close()
    (tmp_path / FILE).write_text("garbage\n")
    third = LogManager([tmp_path], NOW)
    assert third.checkpointed_high_watermark("t", 0) == 0
    third.close()


def test_deleted_log_leaves_the_checkpoint(tmp_path):
    manager = _manager_with_log(tmp_path)
    manager.create("u", 0, TOPIC_ID, config(), NOW)
    manager.write_high_watermarks({("t", 0): 30, ("u", 0): 0})
    manager.delete("t", 0, NOW)
    manager.write_high_watermarks({})
    manager.wait_for_writes()
    assert read_offsets(tmp_path / FILE) == {("u", 0): 0}
    manager.close()


class _Fetchers:
    """Just enough of ReplicaFetchers for ``_transition`` (replication started)."""

    def stop_following(self, key):
        pass

    def become_follower(self, key, leader, epoch, log):
        return True

    def use_replica_epoch(self, broker_epoch):
        pass


def _replicas(manager, clock=lambda: NOW):
    rm = ReplicaManager(1, manager, {}, clock, controller_channel=None, broker_epoch=lambda: 1,
                        image_fn=lambda: None)
    rm.fetchers = rm.transitions.fetchers = _Fetchers()
    return rm


def _topic(leader, isr=(1, 2), epoch=1):
    return TopicInfo("t", TOPIC_ID, (PartitionInfo(0, leader, epoch, (1, 2), isr, partition_epoch=1),))


def test_restarted_replica_starts_from_checkpointed_hw(tmp_path):
    manager = _manager_with_log(tmp_path)
    manager.write_high_watermarks({("t", 0): 12})
    manager.close()
    # follower: min(checkpoint, LEO) until the leader tells it more
    rm = _replicas(LogManager([tmp_path], NOW))
    topic = _topic(leader=2)
    part = rm._ensure(topic, topic.partitions[0], rm.log_config(topic))
    assert part.log.log_end_offset == 30 and part.high_watermark == 12
    rm.logs.close()
    # leader with a follower whose LEO is unknown: the LeaderState starts from the checkpoint
    manager = LogManager([tmp_path], NOW)
    rm = _replicas(manager)
    topic = _topic(leader=1)
    part = rm._ensure(topic, topic.partitions[0], rm.log_config(topic))
    image = SimpleNamespace(brokers={1: SimpleNamespace(usable=True), 2: SimpleNamespace(usable=True)},
                            topics={"t": topic}, config=lambda name, t, default: default)
    rm.transitions.transition(image, part, topic.partitions[0])
    assert part.leads(topic.partitions[0].leader_epoch) and part.high_watermark == 12
    rm.hw_checkpoints.write(NOW)
    manager.wait_for_writes()
    assert read_offsets(tmp_path / FILE) == {("t", 0): 12}
    manager.close()


def test_tick_writes_checkpoint_every_interval(tmp_path):
    manager = _manager_with_log(tmp_path)
    rm = _replicas(manager)
    topic = _topic(leader=2)
    part = rm._ensure(topic, topic.partitions[0], rm.log_config(topic))
    assert part.high_watermark == 0      # no checkpoint yet
    part.follower_hw = 27
    rm.tick(NOW + 4_999)
    manager.wait_for_writes()
    assert read_offsets(tmp_path / FILE) == {}
    rm.tick(NOW + 5_000)
    manager.wait_for_writes()
    assert read_offsets(tmp_path / FILE) == {("t", 0): 27}
    part.follower_hw = 29
    asyncio.run(_start_and_stop(rm))     # clean shutdown writes too
    manager.wait_for_writes()
    assert read_offsets(tmp_path / FILE) == {("t", 0): 29}
    manager.close()


async def _start_and_stop(rm):
    rm.start()
    await rm.stop()


def test_a_checkpoint_carries_only_the_high_watermarks_that_moved(tmp_path):
    manager = _manager_with_log(tmp_path)
    rm = _replicas(manager)
    asked = []
    write = manager.write_high_watermarks
    manager.write_high_watermarks = lambda hws: (asked.append(dict(hws)), write(hws))
    topic = _topic(leader=2)
    part = rm._ensure(topic, topic.partitions[0], rm.log_config(topic))     # a follower of t-0
    rm.hw_checkpoints.write(NOW)
    part.update_follower_high_watermark(20, 0)      # the leader's answer moves it
    rm.hw_checkpoints.write(NOW)
    part.update_follower_high_watermark(20, 0)      # and again to the same value
    rm.hw_checkpoints.write(NOW)
    manager.wait_for_writes()
    assert asked == [{("t", 0): 0}, {("t", 0): 20}, {}]     # an idle broker's checkpoint visits nothing
    assert read_offsets(tmp_path / FILE) == {("t", 0): 20}
    part.truncate_to(9)                             # a diverging follower: the high watermark follows
    rm.hw_checkpoints.write(NOW)
    manager.wait_for_writes()
    assert read_offsets(tmp_path / FILE) == {("t", 0): 9}
    manager.close()
