"""bind() then Server.serve(): the port is known before the handler exists, and frames are served."""
import asyncio

from tierlog.net.connection_quotas import ConnectionQuotas
from tierlog.net.memory_pool import MemoryPool
from tierlog.net.server import Limits, Server, bind


def limits() -> Limits:
    return Limits(1 << 20, 16, ConnectionQuotas(8, 8), MemoryPool(1 << 22))


def test_a_socket_bound_first_serves_frames_once_the_server_runs():
    async def main():
        sock = bind("127.0.0.1", 0)
        port = sock.getsockname()[1]
        server = Server(lambda frame, host, *_: [b"re:" + bytes(frame)], limits())
        assert await server.serve(sock) == port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write((5).to_bytes(4, "big") + b"hello")
        size = int.from_bytes(await reader.readexactly(4), "big")
        body = await reader.readexactly(size)
        writer.close()
        await server.stop()
        return port, body
    port, body = asyncio.run(main())
    assert port > 0
    assert body == b"re:hello"


def test_every_interface_when_the_host_is_empty():
    sock = bind("", 0)
    try:
        assert sock.getsockname()[1] > 0
    finally:
        sock.close()


def test_stop_ends_the_worker_of_a_connection_waiting_in_its_handler():
    async def main():
        entered, ended = asyncio.Event(), []

        async def slow(frame, host, *_):
            entered.set()
            try:
                await asyncio.Event().wait()
            finally:
                ended.append(bytes(frame))

        sock = bind("127.0.0.1", 0)
        server = Server(slow, limits())
        port = await server.serve(sock)
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write((4).to_bytes(4, "big") + b"wait")
        await entered.wait()
        await server.stop()
        after_stop = list(ended)
        writer.close()
        return after_stop
    assert asyncio.run(main()) == [b"wait"]
