"""A handler that releases the connection (``net.pipelining``) lets the next request begin before
it answers; the answers still go out in request order, and released ones are bounded."""
import asyncio

from tierlog.net.connection_quotas import ConnectionQuotas
from tierlog.net.memory_pool import MemoryPool
from tierlog.net.pipelining import release_connection
from tierlog.net.server import Limits, Server, bind


def _frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


async def _read_answers(reader, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        size = int.from_bytes(await reader.readexactly(4), "big")
        out.append(await reader.readexactly(size))
    return out


def _serve(handler, queued_max_requests: int = 16):
    """Run ``handler`` on a server; send ``frames`` from one connection; the answers in order."""
    async def run(frames: list[bytes], n_answers: int, during=None):
        server = Server(handler, Limits(1 << 20, queued_max_requests, ConnectionQuotas(8, 8), MemoryPool(1 << 22)))
        port = await server.serve(bind("127.0.0.1", 0))
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(_frame(f) for f in frames))
        if during is not None:
            await during()
        answers = await asyncio.wait_for(_read_answers(reader, n_answers), 10)
        writer.close()
        await server.stop()
        return answers
    return run


def test_a_released_request_lets_the_next_begin_and_is_answered_first():
    began, gate = [], asyncio.Event

    async def main():
        release = gate()

        async def handler(frame, *_):
            name = bytes(frame)
            began.append(name)
            if name == b"slow":
                release_connection()
                await release.wait()
            return [b"re:" + name]

        async def open_the_gate():
            while b"fast" not in began:         # "fast" began while "slow" waits
                await asyncio.sleep(0.01)
            release.set()
        return await _serve(handler)([b"slow", b"fast", b"sync"], 3, open_the_gate)
    assert asyncio.run(main()) == [b"re:slow", b"re:fast", b"re:sync"]
    assert began == [b"slow", b"fast", b"sync"]


def test_without_release_requests_run_one_at_a_time():
    running, overlaps = [0], []

    async def handler(frame, *_):
        running[0] += 1
        overlaps.append(running[0])
        await asyncio.sleep(0.01)
        running[0] -= 1
        return [bytes(frame)]
    answers = asyncio.run(_serve(handler)([b"a", b"b", b"c"], 3))
    assert answers == [b"a", b"b", b"c"] and overlaps == [1, 1, 1]


def test_released_requests_are_bounded_by_queued_max_requests():
    waiting, most = [0], [0]

    async def main():
        release = asyncio.Event()

        async def handler(frame, *_):
            release_connection()
            waiting[0] += 1
            most[0] = max(most[0], waiting[0])
            await release.wait()
            waiting[0] -= 1
            return [bytes(frame)]

        async def open_later():
            while waiting[0] < 2:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)           # a third would have begun by now if unbounded
            release.set()
        return await _serve(handler, queued_max_requests=2)([b"1", b"2", b"3", b"4"], 4, open_later)
    assert asyncio.run(main()) == [b"1", b"2", b"3", b"4"]
    assert most[0] == 2
