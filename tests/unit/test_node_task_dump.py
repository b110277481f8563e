"""SIGUSR1 makes a node log every asyncio task's stack (what a hung node waits for)."""
import asyncio
import logging

from tierlog.node import _log_task_stacks


def test_the_dump_names_every_pending_task_and_where_it_waits(caplog):
    async def parked_forever():
        await asyncio.Event().wait()

    async def main():
        task = asyncio.get_running_loop().create_task(parked_forever(), name="parked-forever")
        await asyncio.sleep(0)
        with caplog.at_level(logging.WARNING):
            _log_task_stacks()
        task.cancel()
    asyncio.run(main())
    assert "parked-forever" in caplog.text and "parked_forever" in caplog.text
