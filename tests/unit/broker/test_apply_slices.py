"""ApplySlices: changes run in order, each to its end, in slices that give the event loop turns."""
import asyncio

from tierlog.broker.apply_slices import ApplySlices


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def steps(record: list, name: str, n: int, clock: Clock | None = None):
    for i in range(n):
        record.append(f"{name}{i}")
        if clock is not None:
            clock.now += 1.0
        yield


def test_without_an_event_loop_everything_runs_at_once():
    done, record = [], []
    slices = ApplySlices(slice_s=0.0)
    slices.submit(steps(record, "a", 5), lambda: done.append("a"))
    assert record == [f"a{i}" for i in range(5)] and done == ["a"] and not slices.pending


def test_a_long_change_yields_to_the_loop_and_the_next_waits_for_it():
    clock, record, done, turns = Clock(), [], [], []

    async def scenario():
        slices = ApplySlices(slice_s=5.0, clock=clock)
        slices.submit(steps(record, "a", 12, clock), lambda: done.append("a"))
        slices.submit(steps(record, "b", 3, clock), lambda: done.append("b"))
        first_slice = list(record)
        while slices.pending:
            turns.append(len(record))            # the loop got a turn here
            await asyncio.sleep(0)
        return first_slice

    first = asyncio.run(scenario())
    assert first == [f"a{i}" for i in range(5)]                 # 5 steps of 1 s fill a 5 s slice
    assert record == [f"a{i}" for i in range(12)] + [f"b{i}" for i in range(3)]
    assert done == ["a", "b"] and turns == [5, 10, 15]          # a0-a4 | a5-a9 | a10, a11, b0-b2 | (b ends)


def test_steps_slower_than_a_slice_get_a_turn_of_the_loop_each():
    clock, record = Clock(), []

    async def scenario():
        slices = ApplySlices(slice_s=0.5, clock=clock)
        slices.submit(steps(record, "a", 3, clock), lambda: None)     # each step takes 1 s
        seen = [len(record)]
        while slices.pending:
            await asyncio.sleep(0)
            seen.append(len(record))
        return seen

    assert asyncio.run(scenario())[:3] == [1, 2, 3]     # the loop runs between any two slow steps


def test_a_failing_step_skips_the_rest_of_its_change_only():
    record, done = [], []

    def failing():
        record.append("x")
        yield
        raise OSError("disk")

    slices = ApplySlices()
    slices.submit(failing(), lambda: done.append("x"))
    slices.submit(steps(record, "b", 2), lambda: done.append("b"))
    assert record == ["x", "b0", "b1"] and done == ["x", "b"] and not slices.pending


def test_close_drops_what_is_left_and_takes_no_more():
    clock, record, done = Clock(), [], []

    async def scenario():
        slices = ApplySlices(slice_s=2.0, clock=clock)
        slices.submit(steps(record, "a", 10, clock), lambda: done.append("a"))
        slices.close()
        slices.submit(steps(record, "b", 1, clock), lambda: done.append("b"))
        await asyncio.sleep(0.01)
        return slices.pending

    assert asyncio.run(scenario()) is False
    assert record == ["a0", "a1"] and done == []
