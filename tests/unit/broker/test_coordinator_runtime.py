"""The coordinator runtime with a minimal coordinator: hosting and the lease, loading, batched
writes handed back once written, and timers that fire at their deadline (not at a sweep)."""
import asyncio

from leaders import lead

from tierlog.broker.coordinator_runtime import CoordinatorRuntime
from tierlog.broker.partition import AppendOrigin, Partition
from tierlog.protocol.errors import ErrorCode as E
from tierlog.storage import Log, LogConfig

TOPIC = "__test_state"


class Replicas:
    """acks=all answered at once: the follower has everything."""

    def __init__(self):
        self.batches = 0

    def append_records(self, part, records, origin, required_acks, timeout_ms):
        assert origin is AppendOrigin.COORDINATOR
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        # the runtime's clock (the loop's), as the batch's timestamps: with now 0 the partition saw
        # them message.timestamp.after.max.ms (1 h) ahead once the machine had been up an hour
        now_ms = int(loop.time() * 1000)
        outcome = part.append_as_leader(records, origin, required_acks, now_ms, waiter, timeout_ms)
        self.batches += 1
        part.on_follower_fetch(2, part.log_end_offset, 0)
        waiter.set_result(E.NONE)
        return outcome, waiter


class Counter:
    """A coordinator whose state is the number of records in its partition."""

    def __init__(self):
        self.done: list[tuple[list, E]] = []
        self.unloads = 0

    def new_local(self):
        return None

    def loader(self, hosted):
        count = [0]

        class Loader:
            def replay(self, header, records):
                count[0] += len(records)

            def finish(self, now_ms):
                return count[0]
        return Loader()

    def loaded(self, hosted):
        pass

    def unloaded(self, hosted):
        self.unloads += 1

    def written(self, hosted, payloads, error, end_offset, producer):
        self.done.append((payloads, error))


def _partition(tmp_path) -> Partition:
    log = Log.open(tmp_path / f"{TOPIC}-0", LogConfig.from_props({}), 0)
    part = Partition(TOPIC, 0, b"\x07" * 16, log, leader_id=1, leader_epoch=1)
    lead(part, now_ms=0)
    return part


def _run(tmp_path, scenario):
    async def main():
        loop = asyncio.get_running_loop()
        counter, replicas = Counter(), Replicas()
        runtime = CoordinatorRuntime(TOPIC, counter, replicas, lambda: int(loop.time() * 1000), node_id=1,
                                     write_timeout_ms=1000)
        part = _partition(tmp_path)
        runtime.on_leader(part)
        assert runtime.locate(0)[1] == E.COORDINATOR_LOAD_IN_PROGRESS
        while runtime.locate(0)[1] == E.COORDINATOR_LOAD_IN_PROGRESS:
            await asyncio.sleep(0)
        try:
            await scenario(runtime, counter, replicas, part)
        finally:
            await runtime.close()
    asyncio.run(main())


def test_the_writes_of_a_round_are_one_batch_handed_back_once_committed(tmp_path):
    async def scenario(runtime, counter, replicas, part):
        hosted, _ = runtime.locate(0)
        runtime.write(hosted, [(b"k1", b"v")], "a")
        runtime.write(hosted, [(b"k2", b"v")], "b")
        runtime.write(hosted, [], "read")           # no records: answered with the round's batch
        assert counter.done == []
        while not counter.done:
            await asyncio.sleep(0)
        assert counter.done == [(["a", "b", "read"], E.NONE)] and replicas.batches == 1
    _run(tmp_path, scenario)


def test_a_new_leader_epoch_ends_the_lease_and_a_timer_of_the_old_one_never_fires(tmp_path):
    async def scenario(runtime, counter, replicas, part):
        hosted, _ = runtime.locate(0)
        fired = []
        runtime.schedule(hosted, "k", int(asyncio.get_running_loop().time() * 1000), fired.append)
        lead(part, epoch=2, now_ms=0)               # led again at a new epoch: another lease
        assert not runtime.leading(hosted)
        assert runtime.locate(0)[1] == E.NOT_COORDINATOR
        await asyncio.sleep(0.01)
        assert fired == []
    _run(tmp_path, scenario)


def test_a_timer_fires_at_its_deadline_and_a_rescheduled_one_only_once(tmp_path):
    async def scenario(runtime, counter, replicas, part):
        loop = asyncio.get_running_loop()
        hosted, _ = runtime.locate(0)
        deadline = int(loop.time() * 1000) + 50
        fired = []
        runtime.schedule(hosted, "k", deadline + 1000, fired.append)
        runtime.schedule(hosted, "k", deadline, fired.append)        # replaces the first
        armed = hosted.timers["k"].when()
        assert armed <= max(deadline / 1000, loop.time()) + 0.001    # for the deadline (or now, once past it)
        while not fired:
            await asyncio.sleep(0.01)
        assert len(fired) == 1 and fired[0] >= deadline and "k" not in hosted.timers
    _run(tmp_path, scenario)


def test_dropping_a_partition_cancels_its_timers_and_unloads_it(tmp_path):
    async def scenario(runtime, counter, replicas, part):
        hosted, _ = runtime.locate(0)
        runtime.schedule(hosted, "k", int(asyncio.get_running_loop().time() * 1000) + 10, lambda now: None)
        timer = hosted.timers["k"]
        runtime.on_follower(part)
        assert timer.cancelled() and counter.unloads == 1
        assert runtime.locate(0)[1] == E.NOT_COORDINATOR
    _run(tmp_path, scenario)
