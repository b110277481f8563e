"""Frames of one read are begun in the read's callback while the worker idles: the answers of
handlers that answer at once leave in one write, and the first awaitable, throttled answer or
failure hands the rest to the worker, in order."""
import asyncio

from tierlog.net import server as server_module
from tierlog.net.connection_quotas import ConnectionQuotas
from tierlog.net.memory_pool import MemoryPool
from tierlog.net.pipelining import Released
from tierlog.net.server import CloseConnection, Limits, Server, Throttled, bind


def _frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


async def _answers(reader, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        size = int.from_bytes(await reader.readexactly(4), "big")
        out.append(await reader.readexactly(size))
    return out


async def _exchange(handler, frames: list[bytes], n_answers: int, on_server=None) -> tuple[list[bytes], bool]:
    """Send ``frames`` in one write; (the answers, whether the server closed the connection after them)."""
    server = Server(handler, Limits(1 << 20, 16, ConnectionQuotas(8, 8), MemoryPool(1 << 22)))
    port = await server.serve(bind("127.0.0.1", 0))
    if on_server is not None:
        on_server(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"".join(_frame(f) for f in frames))
    answers = await asyncio.wait_for(_answers(reader, n_answers), 10)
    closed = await asyncio.wait_for(reader.read(1), 0.5) == b"" if n_answers < len(frames) else False
    writer.close()
    await server.stop()
    return answers, closed


def _count_writes(server: Server, writes: list[int]) -> None:
    """Count the writes each connection makes (wrapping its transport once it exists)."""
    real_opened = server.opened

    def opened(conn):
        real_opened(conn)
        real = conn.transport.writelines

        def writelines(data):
            writes.append(len(data))
            real(data)
        conn.transport.writelines = writelines
    server.opened = opened


def test_answers_given_at_once_leave_in_request_order_in_one_write():
    writes: list[int] = []
    frames = [f"r{i}".encode() for i in range(6)]
    answers, _ = asyncio.run(_exchange(lambda f, *_: [b"re:" + bytes(f)], frames, 6,
                                       lambda s: _count_writes(s, writes)))
    assert answers == [b"re:" + f for f in frames]
    assert writes == [12]        # one write: a size and a part per answer


def test_an_awaitable_hands_the_rest_to_the_worker_in_order():
    began = []

    def handler(frame, *_):
        name = bytes(frame)
        began.append(name)
        if name.startswith(b"wait"):
            async def later():
                await asyncio.sleep(0.01)
                return [b"re:" + name]
            return later()
        return [b"re:" + name]

    frames = [b"a", b"wait1", b"b", b"wait2", b"c"]
    answers, _ = asyncio.run(_exchange(handler, frames, 5))
    assert answers == [b"re:" + f for f in frames]
    assert began == frames


def test_a_handler_that_closes_ends_the_connection_after_the_answers_before_it():
    def handler(frame, *_):
        if bytes(frame) == b"bad":
            raise CloseConnection("a protocol violation")
        return [b"re:" + bytes(frame)]

    answers, closed = asyncio.run(_exchange(handler, [b"a", b"b", b"bad", b"never"], 2))
    assert answers == [b"re:a", b"re:b"]
    assert closed


def test_a_throttled_answer_mutes_the_connection_before_the_next_request_begins(monkeypatch):
    seen: list[bytes] = []
    unmute = server_module._Connection._unmute

    def unmuted(conn):
        seen.append(b"<unmuted>")
        unmute(conn)
    monkeypatch.setattr(server_module._Connection, "_unmute", unmuted)

    def handler(frame, *_):
        seen.append(bytes(frame))
        if bytes(frame) == b"over":
            return Throttled([b"re:over"], 50)
        return [b"re:" + bytes(frame)]

    answers, _ = asyncio.run(_exchange(handler, [b"a", b"over", b"after"], 3))
    assert answers == [b"re:a", b"re:over", b"re:after"]
    assert seen == [b"a", b"over", b"<unmuted>", b"after"]


def test_released_requests_begin_the_next_at_once_and_answer_in_order():
    """A handler that returns ``Released`` (its ordered part done) lets the next request begin in
    the same read; answers behind it wait for it and leave together once it ends."""
    began: list[bytes] = []
    gates: dict[bytes, asyncio.Event] = {}

    def handler(frame, *_):
        name = bytes(frame)
        began.append(name)
        if name.startswith(b"acks-all"):
            gate = gates.setdefault(name, asyncio.Event())

            async def replicated():
                await gate.wait()
                return [b"re:" + name]
            return Released(replicated())
        return [b"re:" + name]

    async def main():
        frames = [b"acks-all-1", b"a", b"acks-all-2", b"b"]

        async def open_gates():
            while len(began) < len(frames):     # every request began while the first still waits
                await asyncio.sleep(0.01)
            gates[b"acks-all-2"].set()          # the second ends first: its answer waits for the first's
            await asyncio.sleep(0)
            gates[b"acks-all-1"].set()
        server = Server(handler, Limits(1 << 20, 16, ConnectionQuotas(8, 8), MemoryPool(1 << 22)))
        port = await server.serve(bind("127.0.0.1", 0))
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(_frame(f) for f in frames))
        await asyncio.wait_for(open_gates(), 10)
        answers = await asyncio.wait_for(_answers(reader, 4), 10)
        writer.close()
        await server.stop()
        return answers
    assert asyncio.run(main()) == [b"re:acks-all-1", b"re:a", b"re:acks-all-2", b"re:b"]
    assert began == [b"acks-all-1", b"a", b"acks-all-2", b"b"]


class _Unreadable:
    """A file region whose file was closed before its answer went out."""

    def __len__(self):
        return 10

    def read(self):
        raise OSError(9, "Bad file descriptor")


def test_a_send_that_fails_behind_a_pending_answer_ends_the_connection():
    """An answer sent from the callback of the task before it (a file region that cannot be read)
    ends the connection, as a failed send of the worker does, not the event loop's callback."""
    def handler(frame, *_):
        if bytes(frame) == b"acks-all":
            async def replicated():
                await asyncio.sleep(0)
                return [b"re:acks-all"]
            return Released(replicated())
        return [_Unreadable()]

    answers, closed = asyncio.run(_exchange(handler, [b"acks-all", b"region"], 1))
    assert answers == [b"re:acks-all"]
    assert closed


def test_a_send_that_fails_in_the_read_ends_the_connection_after_the_answers_before_it():
    def handler(frame, *_):
        if bytes(frame) == b"region":
            return [b"head", _Unreadable()]
        return [b"re:" + bytes(frame)]

    answers, closed = asyncio.run(_exchange(handler, [b"a", b"region", b"never"], 1))
    assert answers == [b"re:a"]
    assert closed


def test_a_peer_gone_mid_send_closes_the_connection_with_one_line_not_a_traceback(caplog):
    """A client that closes while its answer is sent (sendfile's EPIPE, a reset) is an ordinary end
    of a connection: one INFO line naming the peer, no ERROR with a traceback (the soak's
    "unexpected error" lines, issue 40)."""
    def handler(frame, *_):
        if bytes(frame) == b"gone":
            raise BrokenPipeError(32, "Broken pipe")
        return [b"re:" + bytes(frame)]

    with caplog.at_level("INFO", logger=server_module.__name__):
        answers, closed = asyncio.run(_exchange(handler, [b"a", b"gone", b"never"], 1))
    assert answers == [b"re:a"] and closed
    ours = [r for r in caplog.records if r.name == server_module.__name__ and "went away" in r.getMessage()]
    assert [(r.levelname, r.exc_info) for r in ours] == [("INFO", None)]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
