"""CleanLimits: a cleaner thread's read of the partitions' last stable offsets runs on the event loop."""
import asyncio
import threading

from tierlog.broker.clean_limits import CleanLimits


def test_a_cleaner_thread_reads_on_the_loop_and_gets_zero_when_the_loop_does_not_answer():
    async def scenario():
        readers = []

        def read(key):
            readers.append(threading.get_ident())
            return {("t", 0): 42}.get(key)

        limits = CleanLimits(asyncio.get_running_loop(), read, timeout_s=0.5)
        answers = [await asyncio.to_thread(limits.limits_of, [("t", 0), ("t", 1)])]
        assert answers == [{("t", 0): 42, ("t", 1): None}] and readers == [threading.get_ident()] * 2
        assert limits.limits_of([("t", 0)]) == {("t", 0): 42}          # on the loop itself: at once
        stuck = CleanLimits(asyncio.get_running_loop(), read, timeout_s=0.05)
        worker = threading.Thread(target=lambda: answers.append(stuck.limits_of([("t", 0)])))
        worker.start()
        worker.join()            # the loop is blocked in join(): it cannot answer, so nothing is cleaned
        assert answers[-1] == {("t", 0): 0}
        waiting = CleanLimits(asyncio.get_running_loop(), read, timeout_s=60)
        worker = threading.Thread(target=lambda: answers.append(waiting.limits_of([("t", 0)])))
        worker.start()
        while not waiting._pending:                      # the read is in flight (the loop cannot answer yet)
            threading.Event().wait(0.001)
        waiting.close()          # the replica manager stops: the read in flight answers 0 at once, not in 60 s
        worker.join(5)
        assert answers[-1] == {("t", 0): 0} and not worker.is_alive()
        assert await asyncio.to_thread(waiting.limits_of, [("t", 0)]) == {("t", 0): 0}

    asyncio.run(scenario())
