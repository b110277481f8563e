"""asyncio framing for Kafka's size-prefixed requests, one connection at a time.

Each connection reads frames (int32 size + body) into a 64 KiB receive buffer;
a frame larger than that gets a buffer of its own that the socket fills
directly, so big produce requests are copied once.  Frames queue up to
``queued_max_requests``; past that the connection stops reading.  One worker
task per connection handles frames strictly in order, as Kafka does, so
responses go out in request order without reordering logic.

The handler is ``handle(frame: bytearray, client_host: str) -> parts | awaitable[parts] | None``
(``client_host``: the peer's IP address, "" when it has none):
``parts`` is a list of bytes-like objects and file regions (objects with
``__len__`` and ``read()``/``fd``/``offset``), ``None`` means no response
(acks=0).  A handler raising ``CloseConnection`` closes this connection only;
any other exception is logged and closes it too.  Nothing a peer sends can stop
the server.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections import deque
from collections.abc import Awaitable, Callable

__all__ = ["CloseConnection", "Limits", "Server", "bind"]

log = logging.getLogger(__name__)

RECV_BUFFER_BYTES = 65536
SENDFILE_MIN_BYTES = 65536          # smaller regions are cheaper to pread and write
BACKLOG = 1024


class CloseConnection(Exception):
    """Raised by a handler to drop the connection (framing or protocol violation)."""


class Limits:
    def __init__(self, request_max_bytes: int, queued_max_requests: int, max_connections: int):
        self.request_max_bytes = request_max_bytes
        self.queued_max_requests = max(1, queued_max_requests)
        self.max_connections = max_connections


Handler = Callable[[bytearray, str], "list | Awaitable[list] | None"]


class _Connection(asyncio.BufferedProtocol):
    def __init__(self, server: Server):
        self._server = server
        self._limits = server.limits
        self._rbuf = bytearray(RECV_BUFFER_BYTES)
        self._rlen = 0
        self._frame: bytearray | None = None     # a large frame being filled directly
        self._frame_fill = 0
        self._queue: deque[bytearray] = deque()
        self._wake = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._reading_paused = False
        self._closed = False
        self.transport = None
        self._worker = None

    # -- asyncio protocol callbacks -------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.peer = transport.get_extra_info("peername")
        self.client_host = self.peer[0] if isinstance(self.peer, tuple) else ""
        if not self._server.admit(self):
            log.warning("max.connections reached; refusing %s", self.peer)
            transport.abort()
            return
        self._worker = asyncio.get_running_loop().create_task(self._run())

    def connection_lost(self, exc):
        self._closed = True
        self._server.forget(self)
        self._wake.set()
        self._can_write.set()
        if self._worker is not None:
            self._worker.cancel()

    def pause_writing(self):
        self._can_write.clear()

    def resume_writing(self):
        self._can_write.set()

    def get_buffer(self, sizehint):
        if self._frame is not None:
            return memoryview(self._frame)[self._frame_fill:]
        return memoryview(self._rbuf)[self._rlen:]

    def buffer_updated(self, nbytes):
        if self._frame is not None:
            self._frame_fill += nbytes
            if self._frame_fill == len(self._frame):
                self._enqueue(self._frame)
                self._frame = None
            return
        self._rlen += nbytes
        self._parse_frames()

    # -- framing -------------------------------------------------------------------
    def _parse_frames(self):
        buf, pos, end = self._rbuf, 0, self._rlen
        while end - pos >= 4 and not self._closed:
            size = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
            if size < 0 or size > self._limits.request_max_bytes:
                log.warning("closing %s: frame of %d bytes (socket.request.max.bytes=%d)",
                            self.peer, size, self._limits.request_max_bytes)
                self.close()
                return
            if end - pos - 4 >= size:
                self._enqueue(bytearray(buf[pos + 4:pos + 4 + size]))
                pos += 4 + size
            elif size + 4 > len(buf):
                self._frame = bytearray(size)
                have = end - pos - 4
                self._frame[:have] = buf[pos + 4:end]
                self._frame_fill = have
                pos = end
            else:
                break
        if pos:
            buf[:end - pos] = buf[pos:end]
            self._rlen = end - pos

    def _enqueue(self, frame: bytearray):
        self._queue.append(frame)
        self._wake.set()
        if len(self._queue) >= self._limits.queued_max_requests and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()

    # -- the worker: one request at a time, responses in order ---------------------
    async def _run(self):
        handle = self._server.handler
        try:
            while not self._closed:
                if not self._queue:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                frame = self._queue.popleft()
                if self._reading_paused and len(self._queue) < self._limits.queued_max_requests // 2 + 1:
                    self._reading_paused = False
                    self.transport.resume_reading()
                result = handle(frame, self.client_host)
                if result is not None and not isinstance(result, list):
                    result = await result
                if result is not None and not self._closed:
                    await self._send(result)
        except CloseConnection as e:
            log.info("closing %s: %s", self.peer, e)
            self.close()
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing %s after an unexpected error", self.peer)
            self.close()

    async def _send(self, parts: list):
        size = sum(len(p) for p in parts)
        out = [size.to_bytes(4, "big")]
        for p in parts:
            if isinstance(p, (bytes, bytearray, memoryview)):
                out.append(p)
                continue
            if len(p) >= SENDFILE_MIN_BYTES:
                self.transport.writelines(out)
                out = []
                if self.transport.get_write_buffer_size() == 0:
                    self._sendfile(p)
                    continue
            out.append(p.read())
        if out:
            self.transport.writelines(out)
        if not self._can_write.is_set():
            await self._can_write.wait()

    def _sendfile(self, region):
        """Send a file region from the page cache; only called while the transport's buffer is empty."""
        sock = self.transport.get_extra_info("socket")
        offset, remaining = region.offset, len(region)
        try:
            sent = os.sendfile(sock.fileno(), region.fd, offset, remaining)
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < remaining:
            self.transport.write(os.pread(region.fd, remaining - sent, offset + sent))

    def close(self):
        if not self._closed:
            self._closed = True
            self._wake.set()
            if self.transport is not None:
                self.transport.close()


class Server:
    """Listens on one host:port and feeds frames of every connection to ``handler``."""

    def __init__(self, handler: Handler, limits: Limits):
        self.handler = handler
        self.limits = limits
        self._connections: set[_Connection] = set()
        self._server: asyncio.base_events.Server | None = None

    def admit(self, conn: _Connection) -> bool:
        if len(self._connections) >= self.limits.max_connections:
            return False
        self._connections.add(conn)
        return True

    def forget(self, conn: _Connection) -> None:
        self._connections.discard(conn)

    async def start(self, host: str, port: int) -> int:
        """Listen on host:port and serve; the bound port."""
        return await self.serve(bind(host, port))

    async def serve(self, sock: socket.socket) -> int:
        """Serve the connections of a listening socket from ``bind``; the bound port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), sock=sock, backlog=BACKLOG)
        return sock.getsockname()[1]

    async def stop(self) -> None:
        """Stop listening, close every connection and wait until their workers have ended."""
        if self._server is not None:
            self._server.close()
        workers = []
        for conn in list(self._connections):
            conn.close()
            if conn._worker is not None:
                conn._worker.cancel()
                workers.append(conn._worker)
        await asyncio.gather(*workers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket: host "" is every interface, port 0 any free port.

    Binding before serving lets a node learn its ports (it registers them) before
    it builds what answers the requests, as Kafka's SocketServer binds its
    acceptors before request processing is enabled.
    """
    if not host:
        if socket.has_dualstack_ipv6():
            return socket.create_server(("", port), family=socket.AF_INET6, backlog=BACKLOG, dualstack_ipv6=True)
        return socket.create_server(("", port), backlog=BACKLOG)
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    return socket.create_server(address, family=family, backlog=BACKLOG)
