"""The node's CommitApplier: applies what Raft committed in order, one item per turn of the
event loop, reports what its metadata loader applied to ApplyMetrics, and releases the
waiters of AppliedOffset."""
import asyncio
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from tierlog.clock import wall_clock_ms
from tierlog.metadata.apply_metrics import PREFIX, ApplyMetrics
from tierlog.metadata.cluster_records import (
    BrokerEndpoint,
    FenceBrokerRecord,
    RegisterBrokerRecord,
    encode,
)
from tierlog.metadata.loader import MetadataLoader
from tierlog.metadata.snapshot_generator import SnapshotGenerator
from tierlog.raft import CommittedBatch, LeaderAndEpoch
from tierlog.server.applied_offset import AppliedOffset
from tierlog.server.commit_applier import CommitApplier


@dataclass
class Batch:
    records: list
    last_offset: int
    append_timestamp: int
    epoch: int = 1


def register(broker: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker, bytes(16), 10, (BrokerEndpoint("PLAINTEXT", "h", 9092),))


def _applier(queue=None, applied=None, on_applied=lambda offset: None):
    registry = CollectorRegistry()
    metrics = ApplyMetrics(registry, live_since_ms=wall_clock_ms())
    return registry, CommitApplier(queue or asyncio.Queue(), MetadataLoader(cluster_id="c"),
                                   SnapshotGenerator(lambda *a: None), metrics, applied or AppliedOffset(), None,
                                   on_applied)


def _listener():
    return _applier()


def _value(registry, name):
    return registry.get_sample_value(PREFIX + name)


def test_every_applied_batch_is_recorded_with_its_lag():
    registry, listener = _listener()
    appended = wall_clock_ms()
    listener.handle_commit(Batch([encode(register(1))], 0, appended))
    listener.handle_commit(Batch([encode(register(2))], 3, appended))
    assert _value(registry, "last_applied_record_offset") == 3
    assert _value(registry, "last_applied_record_timestamp") == appended
    assert _value(registry, "apply_lag_ms_count") == 2
    assert 0 <= _value(registry, "last_applied_record_lag_ms") <= wall_clock_ms() - appended


def test_a_batch_the_loader_skips_is_not_recorded():
    registry, listener = _listener()
    listener.handle_commit(Batch([encode(register(1))], 4, wall_clock_ms()))
    listener.handle_commit(Batch([encode(FenceBrokerRecord(1, 11))], 4, wall_clock_ms()))   # already contained
    assert _value(registry, "apply_lag_ms_count") == 1


def test_records_the_loader_could_not_replay_are_load_errors():
    registry, listener = _listener()
    listener.handle_commit(Batch([b"\x01\x63\x00", encode(register(1)), b"\x01\x63\x00"], 2, wall_clock_ms()))
    assert _value(registry, "metadata_load_error_count") == 2
    assert _value(registry, "last_applied_record_offset") == 2


def test_a_subscriber_that_fails_is_an_apply_error():
    registry, listener = _listener()

    def broken(image, delta):
        raise RuntimeError("boom")
    listener.loader.subscribe(broken)
    listener.handle_commit(Batch([encode(register(1))], 0, wall_clock_ms()))
    assert _value(registry, "metadata_apply_error_count") == 1
    assert _value(registry, "last_applied_record_offset") == 0


def test_the_task_applies_queued_items_in_order_and_releases_the_waiters():
    async def scenario():
        queue, applied, told = asyncio.Queue(), AppliedOffset(), []
        _, applier = _applier(queue, applied, told.append)
        task = asyncio.create_task(applier.run())
        waiter = asyncio.create_task(applied.wait(1, 5))
        for item in (CommittedBatch(0, 0, 1, wall_clock_ms(), [encode(register(1))]),
                     LeaderAndEpoch(3, 1),
                     CommittedBatch(1, 1, 1, wall_clock_ms(), [encode(register(2))])):
            queue.put_nowait(item)
        await asyncio.wait_for(waiter, 5)
        image = applier.loader.image
        assert sorted(image.brokers) == [1, 2] and image.controller_id == 3 and applied.value == 2
        await asyncio.sleep(0)
        assert told[-1] == 2                   # the Raft core learns what was applied (its hand-out bound)
        late = asyncio.create_task(applied.wait(5, 5))
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert isinstance(await asyncio.gather(late, return_exceptions=True), list) and late.done()
        assert isinstance(late.exception(), ConnectionError)     # the node stops: nobody waits forever

    asyncio.run(scenario())
