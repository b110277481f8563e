"""TaskSet: tasks are held until they end, closed sets cancel and wait, late spawns do not run."""
import asyncio
import logging

from tierlog.net.tasks import TaskSet, cancel_and_wait


def test_a_finished_task_is_let_go():
    async def main():
        tasks = TaskSet("test")
        done = asyncio.Event()
        tasks.spawn(done.wait())
        assert len(tasks) == 1
        done.set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return len(tasks)
    assert asyncio.run(main()) == 0


def test_close_cancels_and_waits_for_every_task():
    ended = []

    async def forever(i):
        try:
            await asyncio.Event().wait()
        finally:
            ended.append(i)

    async def main():
        tasks = TaskSet("test")
        spawned = [tasks.spawn(forever(i)) for i in range(3)]
        await asyncio.sleep(0)
        await tasks.close()
        return spawned
    spawned = asyncio.run(main())
    assert sorted(ended) == [0, 1, 2]
    assert all(t.cancelled() for t in spawned)


def test_spawn_after_close_does_not_run_the_coroutine():
    ran = []

    async def work():
        ran.append(1)

    async def main():
        tasks = TaskSet("test")
        await tasks.close()
        return tasks.spawn(work())
    assert asyncio.run(main()) is None
    assert ran == []


def test_a_failed_task_is_logged(caplog):
    async def fail():
        raise ValueError("boom")

    async def main():
        tasks = TaskSet("owner")
        task = tasks.spawn(fail(), name="failing")
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, logger="tierlog.net.tasks"):
        asyncio.run(main())
    assert "owner: background task failing failed: ValueError('boom')" in caplog.text


def test_close_cancels_again_a_task_that_swallowed_one_cancellation():
    # What asyncio.wait_for does on Python 3.11 when its inner awaitable finishes in the
    # same iteration as the cancellation: the loop around it runs on.
    swallowed = []

    async def loop_that_swallows_once():
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed.append(1)

    async def main():
        tasks = TaskSet("test")
        task = tasks.spawn(loop_that_swallows_once(), name="swallower")
        await asyncio.sleep(0)
        await asyncio.wait_for(tasks.close(), 5)
        return task
    task = asyncio.run(main())
    assert swallowed == [1] and task.cancelled()


def test_a_task_that_ignores_cancellation_is_named_and_left_behind(caplog):
    async def stubborn():
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue

    async def main():
        task = asyncio.get_running_loop().create_task(stubborn(), name="stubborn")
        await asyncio.sleep(0)
        with caplog.at_level(logging.WARNING):
            await cancel_and_wait([task], "test", timeout_s=0.2)
        running = not task.done()
        task.get_coro().close()   # end it for good so the loop can close
        return running
    assert asyncio.run(main())
    assert "stubborn" in caplog.text and "still running" in caplog.text


def test_wait_until_asks_again_at_each_change_and_gives_up_at_the_deadline():
    from tierlog.net.tasks import wait_until

    async def scenario():
        state, changed = {"n": 0}, asyncio.Event()
        waiter = asyncio.ensure_future(wait_until(lambda: state["n"] >= 2, changed, 5.0))
        for _ in range(2):
            await asyncio.sleep(0)
            state["n"] += 1
            changed.set()
        reached = await waiter
        return reached, await wait_until(lambda: False, changed, 0.01)

    assert asyncio.run(scenario()) == (True, False)
