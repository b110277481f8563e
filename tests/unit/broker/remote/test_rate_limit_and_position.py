"""The copy rate limit (a token bucket) and the consumed position of a metadata partition."""
import asyncio

from tierlog.broker.remote.metadata_position import ConsumedPosition
from tierlog.broker.remote.rate_limit import UNLIMITED, ByteRateLimit


def test_unlimited_never_waits():
    limit = ByteRateLimit(UNLIMITED, 0.0)
    assert limit.delay_s(10**12, 0.0) == 0.0


def test_a_second_of_bytes_then_waits_for_the_rest():
    limit = ByteRateLimit(1000, 0.0)
    assert limit.delay_s(1000, 0.0) == 0.0
    assert limit.delay_s(500, 0.0) == 0.5            # 500 bytes over the rate: half a second
    assert limit.delay_s(0, 10.0) == 0.0             # refilled, at most one second's worth
    assert limit.delay_s(1500, 10.0) == 0.5


def test_ready_once_the_high_watermark_is_consumed():
    position = ConsumedPosition()
    position.fetched(3)
    assert not position.ready
    position.consumed(3)
    position.fetched(3)
    assert position.ready and position.offset == 3


def test_an_empty_partition_is_ready_at_once():
    position = ConsumedPosition()
    position.fetched(0)
    assert position.ready


def test_wait_past_returns_when_the_offset_is_consumed_or_at_the_deadline():
    async def scenario():
        position = ConsumedPosition()
        waiter = asyncio.ensure_future(position.wait_past(4, 5.0))
        await asyncio.sleep(0)
        position.consumed(3)
        await asyncio.sleep(0)
        assert not waiter.done()
        position.consumed(5)
        assert await waiter is True
        assert await position.wait_past(9, 0.01) is False
    asyncio.run(scenario())


def test_a_restarted_position_consumes_again_and_its_waiters_still_see_progress():
    async def scenario():
        position = ConsumedPosition()
        position.consumed(10)
        position.fetched(10)
        waiter = asyncio.ensure_future(position.wait_past(12, 5.0))
        position.restart()
        assert (position.offset, position.ready) == (0, False)
        position.consumed(13)
        assert await waiter is True
    asyncio.run(scenario())
