"""``FetchPurgatory``: a parked fetch returns on news of a partition it reads (its session's, or
without a session the partitions it names), on a partition moving to its follower, or at its
timeout; woken futures leave no watcher behind."""
import asyncio
import random

from tierlog.broker.fetch_purgatory import FetchPurgatory
from tierlog.broker.fetch_session import FetchSessionCache, SessionPartition

KEY, ID_KEY = ("t", 0), (b"\x01" * 16, 0)


def _purgatory() -> FetchPurgatory:
    return FetchPurgatory(FetchSessionCache(10, random.Random(1)))


async def _parked(purgatory, *args, **kwargs):
    task = asyncio.ensure_future(purgatory.wait(*args, **kwargs))
    await asyncio.sleep(0)
    return task


def test_a_sessionless_fetch_wakes_on_news_of_a_partition_it_reads():
    async def scenario():
        purgatory = _purgatory()
        task = await _parked(purgatory, [KEY, ("t", 1)], 30)
        assert len(purgatory) == 2
        purgatory.changed(("t", 2), (b"\x01" * 16, 2))
        await asyncio.sleep(0)
        assert not task.done()
        purgatory.changed(KEY, ID_KEY)
        await asyncio.wait_for(task, 1)
        assert len(purgatory) == 0
    asyncio.run(scenario())


def test_a_session_fetch_wakes_on_its_session_and_a_follower_on_a_move():
    async def scenario():
        purgatory = _purgatory()
        view = purgatory.sessions.open(0, 0, [SessionPartition(ID_KEY[0], 0, 0, 1024)], [], replica=True)
        task = await _parked(purgatory, [], 30, replica_id=2, view=view)
        purgatory.changed(KEY, ID_KEY, records=False)       # a watermark only: a follower is not woken
        await asyncio.sleep(0)
        assert not task.done()
        purgatory.changed(KEY, ID_KEY)
        await asyncio.wait_for(task, 1)
        view = purgatory.sessions.open(view.session_id, 1, [], [], replica=True)
        task = await _parked(purgatory, [], 30, replica_id=2, view=view)
        purgatory.wake_replica(3)
        await asyncio.sleep(0)
        assert not task.done()
        purgatory.wake_replica(2)                           # a partition it follows moved here
        await asyncio.wait_for(task, 1)
        assert len(purgatory) == 0
    asyncio.run(scenario())


def test_a_parked_fetch_returns_at_its_timeout():
    async def scenario():
        purgatory = _purgatory()
        await asyncio.wait_for(purgatory.wait([KEY], 0.01), 1)
        assert len(purgatory) == 0
    asyncio.run(scenario())
