"""The request bounds: sans-IO cores (pool, quotas, deadlines) and the server that applies them."""
import asyncio

import pytest

from tierlog.net.connection_deadlines import IDLE, READ, ConnectionDeadlines
from tierlog.net.connection_quotas import ConnectionQuotas
from tierlog.net.memory_pool import MemoryPool
from tierlog.net.server import FRAME_CHUNK_MIN_BYTES, Limits, Server, bind


def test_pool_resumes_its_waiters_once_below_capacity():
    pool = MemoryPool(100)
    pool.reserve(60)
    pool.reserve(60)
    assert pool.exhausted
    pool.wait("a")
    pool.wait("b")
    assert pool.release(10) == []               # 110 >= 100: still exhausted
    assert pool.release(20) == ["a", "b"] and pool.used == 90
    assert pool.release(90) == []               # nobody waits any more


def test_quotas_name_the_limit_that_refuses():
    quotas = ConnectionQuotas(3, 2, {"10.0.0.9": 0})
    assert quotas.admit("10.0.0.1") is None and quotas.admit("10.0.0.1") is None
    assert quotas.admit("10.0.0.1") == "max.connections.per.ip"
    assert quotas.admit("10.0.0.9") == "max.connections.per.ip.overrides"
    assert quotas.admit("10.0.0.2") is None
    assert quotas.admit("10.0.0.3") == "max.connections"
    quotas.release("10.0.0.1")
    assert quotas.admit("10.0.0.3") is None and quotas.total == 3


def test_deadlines_idle_read_and_busy():
    d = ConnectionDeadlines(idle_ms=1000, read_ms=300)
    for conn in ("idle", "slow", "busy"):
        d.opened(conn, 0)
    d.received("slow", 100, frame_open=True)
    d.request_started("busy")
    assert d.expired(399) == []
    assert d.expired(400) == [("slow", READ)]
    assert d.expired(1000) == [("idle", IDLE)]
    assert d.expired(10_000) == []              # a request in progress is never idle
    d.request_done("busy", 10_000)
    assert d.expired(11_000) == [("busy", IDLE)]


def test_a_frame_completed_in_time_clears_its_read_deadline():
    d = ConnectionDeadlines(idle_ms=10_000, read_ms=300)
    d.opened("c", 0)
    d.received("c", 100, frame_open=True)
    d.received("c", 200, frame_open=False)
    d.received("c", 350, frame_open=True)       # the next frame starts its own clock
    assert d.expired(600) == [] and d.expired(650) == [("c", READ)]


def test_the_read_clock_stops_while_the_server_does_not_read():
    """A client pipelining to a busy broker (request queue full) is not a slow sender."""
    d = ConnectionDeadlines(idle_ms=100_000, read_ms=300)
    d.opened("c", 0)
    d.received("c", 100, frame_open=True)
    d.paused("c")                               # queued.max.requests reached: no reads
    assert d.expired(5_000) == []
    d.resumed("c", 5_000)                       # the frame gets read_ms from here
    assert d.expired(5_299) == [] and d.expired(5_300) == [("c", READ)]


def test_a_frame_begun_in_the_read_that_paused_waits_for_the_resume():
    d = ConnectionDeadlines(idle_ms=100_000, read_ms=300)
    d.opened("c", 0)
    d.paused("c")                               # the queue filled while this read was parsed
    d.received("c", 100, frame_open=True)
    assert d.expired(5_000) == []
    d.resumed("c", 5_000)
    assert d.expired(5_300) == [("c", READ)]


def test_a_pause_between_frames_leaves_no_read_clock():
    d = ConnectionDeadlines(idle_ms=100_000, read_ms=300)
    d.opened("c", 0)
    d.paused("c")
    d.resumed("c", 1_000)
    assert d.expired(50_000) == []


# -- the server ------------------------------------------------------------------------------

def _serve(handler, pool_bytes=1 << 24, idle_ms=600_000, read_ms=30_000, quotas=None):
    limits = Limits(100 << 20, 16, quotas or ConnectionQuotas(100, 100), MemoryPool(pool_bytes), idle_ms, read_ms)
    return Server(handler, limits)


async def _start(server):
    return await server.serve(bind("127.0.0.1", 0))


async def _until(predicate, timeout_s=10.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def test_a_declared_size_allocates_nothing_until_bytes_arrive():
    async def main():
        server = _serve(lambda frame, host, *_: [bytes(frame[:4])])
        port = await _start(server)
        pool = server.limits.pool
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write((100 << 20).to_bytes(4, "big") + b"x" * 3000)
        await _until(lambda: pool.used > 0)
        assert pool.used == FRAME_CHUNK_MIN_BYTES           # not 100 MiB
        writer.close()
        await _until(lambda: pool.used == 0)                # given back on close
        await server.stop()
    asyncio.run(main())


def test_a_large_frame_arriving_in_pieces_is_handled_whole():
    async def main():
        server = _serve(lambda frame, host, *_: [len(frame).to_bytes(4, "big"), bytes(frame[-3:])])
        port = await _start(server)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = bytes(range(256)) * 4096 + b"end"            # 1 MiB + 3
        writer.write(len(body).to_bytes(4, "big"))
        for i in range(0, len(body), 100_000):
            writer.write(body[i:i + 100_000])
            await writer.drain()
        size = int.from_bytes(await reader.readexactly(4), "big")
        answer = await reader.readexactly(size)
        assert int.from_bytes(answer[:4], "big") == len(body) and answer[4:] == b"end"
        await _until(lambda: server.limits.pool.used == 0)
        writer.close()
        await server.stop()
    asyncio.run(main())


def test_an_exhausted_pool_stops_reading_until_memory_comes_back():
    async def main():
        gate, handled = asyncio.Event(), []

        async def held(frame, host, *_):
            handled.append(len(frame))
            await gate.wait()
            return [b"ok"]

        server = _serve(held, pool_bytes=100_000)
        port = await _start(server)
        pool = server.limits.pool
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        w1.write((150_000).to_bytes(4, "big") + b"a" * 150_000)         # held by its handler
        await _until(lambda: handled == [150_000])
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        w2.write((20).to_bytes(4, "big") + b"b" * 20)
        await asyncio.sleep(0.2)            # a chance to be read, which it must not take
        assert handled == [150_000] and pool.exhausted
        gate.set()
        assert await r1.readexactly(6) == (2).to_bytes(4, "big") + b"ok"
        assert await r2.readexactly(6) == (2).to_bytes(4, "big") + b"ok"
        assert handled == [150_000, 20]
        await _until(lambda: pool.used == 0)
        w1.close()
        w2.close()
        await server.stop()
    asyncio.run(main())


def test_a_client_pipelining_to_a_busy_server_is_not_closed_as_a_slow_sender():
    """queued.max.requests full: the server stops reading, and a frame begun meanwhile may wait
    longer than socket.request.read.timeout.ms without the connection being closed."""
    async def main():
        gate, handled = asyncio.Event(), []

        async def held(frame, host, *_):
            await gate.wait()
            handled.append(bytes(frame))
            return [b"ok"]

        server = _serve(held, read_ms=200)          # queued.max.requests 16
        port = await _start(server)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        frames = [(1).to_bytes(4, "big") + bytes([i]) for i in range(20)]
        writer.write(b"".join(frames) + (3).to_bytes(4, "big") + b"e")      # and half a frame
        await asyncio.sleep(0.6)                    # three read timeouts while the server is full
        assert server.connection_count == 1
        gate.set()
        writer.write(b"nd")
        for _ in range(21):
            assert await reader.readexactly(6) == (2).to_bytes(4, "big") + b"ok"
        assert handled[-1] == b"end"
        writer.close()
        await server.stop()
    asyncio.run(main())


@pytest.mark.parametrize("idle_ms, read_ms, payload", [
    (200, 60_000, b""),                                   # says nothing
    (60_000, 200, (1000).to_bytes(4, "big") + b"x" * 10),  # starts a frame and stalls
])
def test_lingering_connections_are_closed(idle_ms, read_ms, payload):
    async def main():
        server = _serve(lambda frame, host, *_: [b"ok"], idle_ms=idle_ms, read_ms=read_ms)
        port = await _start(server)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(payload)
        assert await asyncio.wait_for(reader.read(1), 10) == b""    # closed by the server
        await _until(lambda: server.connection_count == 0 and server.limits.pool.used == 0)
        writer.close()
        await server.stop()
    asyncio.run(main())


def test_connections_over_the_per_ip_limit_are_closed_when_accepted():
    async def main():
        server = _serve(lambda frame, host, *_: [b"ok"], quotas=ConnectionQuotas(100, 2))
        port = await _start(server)
        kept = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await _until(lambda: server.connection_count == 2)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            assert await asyncio.wait_for(reader.read(1), 10) == b""
        except ConnectionResetError:
            pass
        kept[0][1].close()
        await _until(lambda: server.connection_count == 1)
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write((1).to_bytes(4, "big") + b"?")
        assert await r.readexactly(6) == (2).to_bytes(4, "big") + b"ok"
        for _, w_ in [*kept[1:], (r, w), (reader, writer)]:
            w_.close()
        await server.stop()
    asyncio.run(main())


def test_one_frame_may_grow_past_an_exhausted_pool():
    pool = MemoryPool(100)
    pool.reserve(100)
    assert pool.may_grow("big") and pool.may_grow("big") and not pool.may_grow("other")
    pool.end_overdraft("big")
    assert pool.may_grow("other")
