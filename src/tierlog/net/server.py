"""asyncio framing for Kafka's size-prefixed requests, one connection at a time.

Each connection reads frames (int32 size + body) into a small receive buffer
(``RECV_BUFFER_BYTES``); a frame larger than that gets a buffer of its own that
the socket fills directly and that grows only as bytes arrive (from
``FRAME_CHUNK_MIN_BYTES``, doubling, by at most ``FRAME_CHUNK_MAX_BYTES`` a
step), never to the size a peer declares before sending it.  Frames queue up to
``queued_max_requests``; past that the connection stops reading.  One worker
task per connection begins requests strictly in order, as Kafka does, and
answers go out in request order; a handler may let the next request begin
before it answers (``net.pipelining``: an acks=all Produce once appended), its
answer then waits in line (at most ``queued_max_requests`` of them).  While the
worker idles, the frames of a read are begun in the read's callback: answers
given at once leave in one write per read, no task switch per request; the first
awaitable, throttled answer or full write buffer hands the rest to the worker.

Bounds (``Limits``; what happens at each):

- ``socket.request.max.bytes``: a larger declared frame closes the connection;
- ``queued.max.request.bytes``: the node's ``MemoryPool`` of buffered request
  bytes (shared by its listeners); while it is exhausted connections stop
  reading until handled requests give memory back;
- ``max.connections`` / ``max.connections.per.ip`` (+ overrides): the node's
  ``ConnectionQuotas``; a connection over a limit is closed when accepted;
- ``connections.max.idle.ms`` / ``socket.request.read.timeout.ms``: per
  listener ``ConnectionDeadlines``; a connection idle that long, or with a frame
  started that long ago and still incomplete, is closed;
- connection creation rates (KIP-612, ``Limits.creation_rate``: ``net.connection_rates``
  bound to the listener): a new connection over the broker's or the listener's rate is
  held (muted) until the rate is back within it; one over its IP's rate is closed once its
  throttle time has passed, reading nothing meanwhile.

A closed connection drops its buffers and queued frames and gives their bytes
back to the pool.

Transport security: a ``Server`` given an ``ssl.SSLContext`` (an SSL listener,
``net.ssl_context.server_context``) serves TLS; asyncio completes the handshake
before ``connection_made``, and a failed handshake (a plaintext client, an
untrusted client certificate) ends the connection with a debug line, no
traceback; the handshake has ``socket.request.read.timeout.ms`` to finish.
File regions go out with ``os.sendfile`` on plaintext connections only:
on TLS they are read and written through the transport (sendfile would put
cleartext on the socket, past the encryption).

The handler is ``handle(frame: bytearray, client_host: str, received_ns: int) -> parts | awaitable[parts] | None``
(``client_host``: the peer's IP address, "" when it has none; ``received_ns``: ``tierlog.clock.monotonic_ns()``
when the whole frame had arrived, for the request metrics):
``parts`` is a list of bytes-like objects and file regions (objects with
``__len__`` and ``read()``/``fd``/``offset``), ``None`` means no response
(acks=0).  ``session``, when given, wraps the handler once per connection (SASL
listeners: ``net.sasl_gate``); ``principal_of``, when given (TLS listeners), names the
connection's principal from its peer certificate once the handshake is done, and the
handler gets it as ``principal=`` (None refuses the connection).  A handler raising ``CloseConnection`` closes this connection
only (after sending its ``response``, when it has one);
any other exception is logged and closes it too.  Nothing a peer sends can stop
the server.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import socket
import ssl
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from tierlog.clock import monotonic_ms, monotonic_ns

from . import pipelining
from .answer_order import AnswerOrder, Throttled
from .connection_deadlines import ConnectionDeadlines
from .connection_quotas import ConnectionQuotas
from .memory_pool import MemoryPool

__all__ = ["CloseConnection", "Limits", "Server", "Throttled", "bind"]

log = logging.getLogger(__name__)

RECV_BUFFER_BYTES = 16384           # per connection; frames that fit are parsed in place
FRAME_CHUNK_MIN_BYTES = 16384       # a large frame's first buffer and smallest growth step
FRAME_CHUNK_MAX_BYTES = 8 << 20     # its largest growth step (it doubles up to this)
BACKLOG = 1024
_QUEUE, _MEMORY = "queued.max.requests", "queued.max.request.bytes"   # why a connection stopped reading
_THROTTLED = "throttled"


class CloseConnection(Exception):
    """Raised by a handler to drop the connection (framing or protocol violation); with
    ``response`` (encoded parts), that answer is sent first (a failed SASL authentication)."""

    def __init__(self, message: str, response: list | None = None, linger_s: float = 0.0, logged: bool = False):
        super().__init__(message)
        self.response = response
        self.linger_s = linger_s        # after the answer, before the close (connection.failed.authentication.delay.ms)
        self.logged = logged            # the raiser logged it (a failed SASL login, rate limited)


class Limits:
    """A listener's bounds; ``quotas`` and ``pool`` are the node's, shared by its listeners."""

    def __init__(self, request_max_bytes: int, queued_max_requests: int, quotas: ConnectionQuotas,
                 pool: MemoryPool, idle_ms: int = 600_000, read_ms: int = 30_000,
                 creation_rate: Callable[[str, int], tuple[int, int]] | None = None):
        self.creation_rate = creation_rate      # (ip, now_ms) -> (hold ms, close after ms); None: no rates
        self.request_max_bytes = request_max_bytes
        self.queued_max_requests = max(1, queued_max_requests)
        self.quotas = quotas
        self.pool = pool
        self.idle_ms = idle_ms
        self.read_ms = read_ms


Handler = Callable[[bytearray, str, int], "list | Awaitable[list] | None"]


class _Connection(AnswerOrder, asyncio.BufferedProtocol):
    def __init__(self, server: Server):
        self._server = server
        self._limits = server.limits
        self._pool = server.limits.pool
        self._rbuf = bytearray(RECV_BUFFER_BYTES)
        self._rlen = 0
        self._frame: bytearray | None = None     # a large frame being filled directly
        self._frame_size = 0                     # ... its declared size
        self._frame_fill = 0
        self._grow = 0                           # bytes reserved for the frame buffer's next growth
        self._reserved = 0                       # bytes this connection holds in the pool
        self._queue: deque[tuple[bytearray, int]] = deque()   # (frame, monotonic ns when complete)
        self._wake = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._pauses: set[str] = set()
        self._closed = False
        self._admitted = False
        self.transport: asyncio.Transport | None = None
        self._worker: asyncio.Task | None = None
        self._answers: deque = deque()          # released requests' tasks, then answers behind them, in order
        self._answered = asyncio.Event()
        self._handling: set[asyncio.Task] = set()   # handlers' tasks not ended yet
        self._zero_copy = server.ssl_context is None      # sendfile bypasses TLS
        self._handle: Callable[..., Any] = server.session(server.handler) if server.session else server.handler
        self._unmuted = asyncio.Event()         # clear while throttled (KIP-219)
        self._unmuted.set()
        self._idle = False                      # the worker waits for frames: a read may begin them itself
        self._handoff: tuple[Any, int] | None = None    # a request begun in a read that awaits: the worker's next
        self._failed: BaseException | None = None       # what a handler begun in a read raised: the worker ends

    # -- asyncio protocol callbacks -------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.peer = transport.get_extra_info("peername")
        self.client_host = self.peer[0] if isinstance(self.peer, tuple) else ""
        if self._server.principal_of is not None and not self._bind_principal(transport):
            return
        refused_by = self._limits.quotas.admit(self.client_host)
        if refused_by is not None:
            log.info("refusing a connection from %s: %s reached", self.peer, refused_by)
            self._closed = True
            transport.abort()
            return
        self._admitted = True
        self._server.opened(self)
        if self._limits.creation_rate is not None:
            self._throttle_creation()
        self._worker = asyncio.get_running_loop().create_task(self._run())

    def _throttle_creation(self) -> None:
        """KIP-612: hold a connection over the broker's or listener's rate; close one over its IP's."""
        assert self._limits.creation_rate is not None
        hold_ms, close_ms = self._limits.creation_rate(self.client_host, monotonic_ms())
        if close_ms > 0:
            log.info("closing %s in %d ms: connection_creation_rate of %s reached", self.peer, close_ms, self.client_host)
            self._mute(close_ms)
            asyncio.get_running_loop().call_later(close_ms / 1000, self.abort)
        elif hold_ms > 0:
            self._mute(hold_ms)

    def _bind_principal(self, transport) -> bool:
        """Requests of this connection carry its certificate's principal (Kafka's SSL principal builder)."""
        assert self._server.principal_of is not None
        principal = self._server.principal_of(transport)
        if principal is None:
            log.info("refusing a connection from %s: no ssl.principal.mapping.rules rule applies", self.peer)
            self._closed = True
            transport.abort()
            return False
        self._handle = functools.partial(self._handle, principal=principal)
        return True

    def connection_lost(self, exc):
        self._closed = True
        if self._admitted:
            self._admitted = False
            self._limits.quotas.release(self.client_host)
            self._server.forget(self)
        self._free_buffers()
        self._wake.set()
        self._answered.set()
        self._can_write.set()
        self._unmuted.set()
        for task in self.tasks():
            task.cancel()

    def tasks(self) -> list[asyncio.Task]:
        """The worker, the answer writer and the handlers in progress."""
        return [t for t in (self._worker, *self._handling) if t is not None]

    def _free_buffers(self) -> None:
        self._pool.forget(self)
        self._release(self._reserved)
        self._rbuf, self._rlen, self._frame, self._grow = bytearray(), 0, None, 0
        self._queue.clear()
        self._answers.clear()

    def pause_writing(self):
        self._can_write.clear()

    def get_buffer(self, sizehint):
        if self._frame is not None:
            if self._grow:
                self._grow_frame()
            return memoryview(self._frame)[self._frame_fill:]
        return memoryview(self._rbuf)[self._rlen:]

    def buffer_updated(self, nbytes):
        if self._closed:
            return
        if self._frame is not None:
            self._frame_fill += nbytes
            self._frame_progress()
        else:
            self._rlen += nbytes
            self._parse_frames()
        self._server.received(self, self._frame is not None or self._rlen > 0)
        if self._idle and self._queue:
            self._begin_in_read()
        if self._pool.exhausted and not self._closed and not self._may_read_on():
            self._wait_for_memory()

    # -- framing -------------------------------------------------------------------
    def _parse_frames(self):
        buf, pos, end = self._rbuf, 0, self._rlen
        while end - pos >= 4 and not self._closed and not self._pool.exhausted:   # else parsed once memory is back
            size = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
            if size < 0 or size > self._limits.request_max_bytes:
                log.warning("closing %s: frame of %d bytes (socket.request.max.bytes=%d)",
                            self.peer, size, self._limits.request_max_bytes)
                self.close()
                return
            if end - pos - 4 >= size:
                self._reserve(size)
                self._enqueue(bytearray(buf[pos + 4:pos + 4 + size]))
                pos += 4 + size
            elif size + 4 > len(buf):
                self._start_frame(size, buf[pos + 4:end])
                pos = end
                break
            else:
                break
        if pos:
            buf[:end - pos] = buf[pos:end]
            self._rlen = end - pos

    def _start_frame(self, size: int, head: bytearray) -> None:
        """A frame too large for the receive buffer: a buffer of its own, sized by what arrived."""
        first = min(size, max(len(head), FRAME_CHUNK_MIN_BYTES))
        self._reserve(first)
        self._frame, self._frame_size, self._frame_fill = bytearray(first), size, len(head)
        self._frame[:len(head)] = head
        self._frame_progress()

    def _frame_progress(self) -> None:
        """After bytes arrived in the frame buffer: queue the frame when complete, else plan room."""
        frame = self._frame
        assert frame is not None
        if self._frame_fill < len(frame):
            return
        if len(frame) == self._frame_size:
            self._frame = None
            self._pool.end_overdraft(self)
            self._enqueue(frame)
        elif not self._grow and self._pool.may_grow(self):
            self._plan_growth()

    def _plan_growth(self) -> None:
        assert self._frame is not None
        current = len(self._frame)
        step = min(self._frame_size - current, max(FRAME_CHUNK_MIN_BYTES, min(current, FRAME_CHUNK_MAX_BYTES)))
        self._reserve(step)
        self._grow = step

    def _grow_frame(self) -> None:
        """Apply the planned growth (here, where the event loop holds no view of the buffer)."""
        frame = self._frame
        assert frame is not None
        try:
            frame.extend(bytes(self._grow))
        except BufferError:          # a view of it is still alive somewhere: copy instead
            grown = bytearray(len(frame) + self._grow)
            grown[:self._frame_fill] = frame[:self._frame_fill]
            self._frame = grown
        self._grow = 0

    def _enqueue(self, frame: bytearray):
        self._queue.append((frame, monotonic_ns()))
        self._wake.set()
        if len(self._queue) >= self._limits.queued_max_requests:
            self._pause(_QUEUE)

    # -- request memory --------------------------------------------------------------
    def _reserve(self, nbytes: int) -> None:
        self._pool.reserve(nbytes)
        self._reserved += nbytes

    def _release(self, nbytes: int) -> None:
        nbytes = min(nbytes, self._reserved)     # nothing once the connection gave all back
        self._reserved -= nbytes
        for waiter in self._pool.release(nbytes):
            waiter.memory_available()

    def _may_read_on(self) -> bool:
        """With the pool exhausted: only the frame holding (or taking) the overdraft reads on."""
        return self._frame is not None and self._pool.may_grow(self)

    def _wait_for_memory(self) -> None:
        self._pause(_MEMORY)
        self._pool.wait(self)

    def memory_available(self) -> None:
        """The pool has room again: plan the frame buffer's growth if it is full, read on."""
        if self._closed:
            return
        if self._frame is None:
            self._parse_frames()
        elif self._frame_fill == len(self._frame) and not self._grow and self._pool.may_grow(self):
            self._plan_growth()
        if self._pool.exhausted and not self._may_read_on():
            self._pool.wait(self)
            return
        self._resume(_MEMORY)

    def _pause(self, reason: str) -> None:
        if not self._pauses and not self._closed and self.transport is not None:
            self.transport.pause_reading()
            self._server.reading_paused(self)
        self._pauses.add(reason)

    def _resume(self, reason: str) -> None:
        if reason in self._pauses:
            self._pauses.discard(reason)
            if not self._pauses and not self._closed and self.transport is not None:
                self.transport.resume_reading()
                self._server.reading_resumed(self)

    # -- the worker: requests begin in order, answers go out in order ------------------
    async def _run(self):
        try:
            while not self._closed:
                if self._failed is not None:
                    raise self._failed
                if self._handoff is not None:
                    result, nbytes = self._handoff
                    self._handoff = None
                    await self._answer_in_turn(result, nbytes)
                    continue
                if not self._queue:
                    self._wake.clear()
                    self._idle = True
                    await self._wake.wait()
                    self._idle = False
                    continue
                await self._room_to_begin()
                if not self._unmuted.is_set():
                    await self._unmuted.wait()
                if self._closed:
                    break
                result, nbytes = self._begin()
                await self._answer_in_turn(result, nbytes)
        except BaseException as e:       # noqa: BLE001 - CloseConnection, cancellation or a bug: see _ended
            await self._ended(e)

    def _begin(self) -> tuple[Any, int]:
        """Hand the first queued frame to the handler: (what it returned, the frame's bytes)."""
        frame, received_ns = self._queue.popleft()
        if len(self._queue) < self._limits.queued_max_requests // 2 + 1:
            self._resume(_QUEUE)
        self._server.request_started(self)
        nbytes = len(frame)
        try:
            return self._handle(frame, self.client_host, received_ns), nbytes
        finally:
            del frame

    async def _answer_in_turn(self, result, nbytes: int) -> None:
        if type(result) is pipelining.Released:
            self._answer_later(self._start_released(result, nbytes))
            return
        if result is not None and not isinstance(result, list):
            result = await self._until_released(result, nbytes)
        else:
            self._release(nbytes)
        if self._answers or isinstance(result, asyncio.Task):
            self._answer_later(result)
        else:
            await self._answer(result)

    def _begin_in_read(self) -> None:
        """The frames of a read, begun in the read's callback while the worker is idle: the answers of
        handlers that answer at once go out in one write, with no task switch per request.  The first
        handler that returns an awaitable, a throttled answer or a full write buffer hands the rest to
        the worker, which then goes on in order as it would have."""
        out: list = []
        try:
            while self._queue and not self._closed and self._unmuted.is_set() and self._can_write.is_set() \
                    and len(self._answers) < self._limits.queued_max_requests:
                result, nbytes = self._begin()
                if type(result) is pipelining.Released:
                    self._flush(out)
                    self._answer_later(self._start_released(result, nbytes))
                    continue
                if result is not None and not isinstance(result, list):
                    self._handoff = (result, nbytes)
                    break
                self._release(nbytes)
                if self._answers:           # behind a released request's answer
                    self._answer_later(result)
                    continue
                if result is not None:
                    self._put_whole(out, result)
                    if type(result) is Throttled:
                        self._flush(out)
                        self._mute(result.throttle_ms)
                self._server.request_done(self)
        except BaseException as e:       # noqa: BLE001 - as in _run: the worker ends the connection
            self._failed = e
        self._flush(out)
        if self._handoff is not None or self._failed is not None or self._queue:
            self._idle = False
            self._wake.set()

    async def _until_released(self, awaitable, nbytes: int):
        """Run a handler's awaitable until it answers (its parts) or releases the connection
        (``net.pipelining``: its task, answered later); its frame's bytes go back when it ends."""
        task, released = pipelining.start(awaitable)
        self._handling.add(task)
        task.add_done_callback(lambda t: self._request_ended(t, nbytes))
        await released
        return task.result() if task.done() else task

    def _start_released(self, released: pipelining.Released, nbytes: int) -> asyncio.Task:
        """The task of a request released before its handler returned (``pipelining.Released``)."""
        task = asyncio.get_running_loop().create_task(released.coroutine)
        self._handling.add(task)
        task.add_done_callback(lambda t: self._request_ended(t, nbytes))
        return task

    def _request_ended(self, task: asyncio.Task, nbytes: int) -> None:
        self._handling.discard(task)
        self._release(nbytes)
        if not task.cancelled():
            task.exception()        # seen here when the connection closed first (no answer to send)

    async def _room_to_begin(self) -> None:
        """Wait while ``queued.max.requests`` answers are pending (released requests and the ones behind)."""
        while len(self._answers) >= self._limits.queued_max_requests and not self._closed:
            self._answered.clear()
            await self._answered.wait()

    def _mute(self, throttle_ms: int) -> None:
        """Read and begin nothing more for ``throttle_ms`` (KIP-219: the client backs off meanwhile)."""
        if _THROTTLED in self._pauses:
            return
        self._pause(_THROTTLED)
        self._unmuted.clear()
        asyncio.get_running_loop().call_later(throttle_ms / 1000, self._unmute)

    def _unmute(self) -> None:
        self._unmuted.set()
        self._resume(_THROTTLED)

    async def _ended(self, e: BaseException) -> None:
        if isinstance(e, CloseConnection):
            # an answered close or a failed SASL login is logged by its raiser (rate limited)
            (log.debug if e.response is not None or e.logged else log.info)("closing %s: %s", self.peer, e)
            if e.response is not None and not self._closed:
                await self._send(e.response)
            if e.linger_s > 0 and not self._closed:
                await asyncio.sleep(e.linger_s)
            self.close()
        elif isinstance(e, asyncio.CancelledError):
            pass
        elif isinstance(e, ConnectionError):       # the peer went away mid-send (sendfile, a write)
            log.info("closing %s: the peer went away (%s)", self.peer, e)
            self.close()
        elif isinstance(e, Exception):
            log.error("closing %s after an unexpected error", self.peer, exc_info=e)
            self.close()
        else:
            raise e

    def close(self):
        """Close after the responses already written are sent; the buffers go at once."""
        if not self._closed:
            self._closed = True
            self._free_buffers()
            self._wake.set()
            self._answered.set()
            if self.transport is not None:
                self.transport.close()

    def abort(self):
        """Close now, dropping anything still unsent (a peer past a deadline)."""
        self.close()
        if self.transport is not None:
            self.transport.abort()


class Server:
    """Listens on one host:port and feeds frames of every connection to ``handler``
    (over TLS when given ``ssl_context``)."""

    def __init__(self, handler: Handler, limits: Limits, ssl_context: ssl.SSLContext | None = None,
                 session: Callable[[Handler], Handler] | None = None,
                 principal_of: Callable[[asyncio.BaseTransport], str | None] | None = None):
        self.handler = handler
        self.limits = limits
        self.ssl_context = ssl_context
        self.session = session          # per-connection wrapper of the handler (a SASL gate)
        self.principal_of = principal_of    # TLS: the peer certificate's principal (None: refused)
        self.deadlines: ConnectionDeadlines[_Connection] = ConnectionDeadlines(limits.idle_ms, limits.read_ms)
        self._connections: set[_Connection] = set()
        self._server: asyncio.base_events.Server | None = None
        self._sweeper: asyncio.Task | None = None

    def opened(self, conn: _Connection) -> None:
        self._connections.add(conn)
        self.deadlines.opened(conn, monotonic_ms())

    def forget(self, conn: _Connection) -> None:
        self._connections.discard(conn)
        self.deadlines.forget(conn)

    def received(self, conn: _Connection, frame_open: bool) -> None:
        if conn in self._connections:
            self.deadlines.received(conn, monotonic_ms(), frame_open)

    def request_started(self, conn: _Connection) -> None:
        self.deadlines.request_started(conn)

    def reading_paused(self, conn: _Connection) -> None:
        self.deadlines.paused(conn)

    def reading_resumed(self, conn: _Connection) -> None:
        if conn in self._connections:
            self.deadlines.resumed(conn, monotonic_ms())

    def request_done(self, conn: _Connection) -> None:
        if conn in self._connections:
            self.deadlines.request_done(conn, monotonic_ms())

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def start(self, host: str, port: int) -> int:
        """Listen on host:port and serve; the bound port."""
        return await self.serve(bind(host, port))

    async def serve(self, sock: socket.socket) -> int:
        """Serve the connections of a listening socket from ``bind``; the bound port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), sock=sock, backlog=BACKLOG,
                                                **self._tls_options())
        self._sweeper = loop.create_task(self._sweep(), name=f"deadlines-{sock.getsockname()[1]}")
        return sock.getsockname()[1]

    def _tls_options(self) -> dict:
        """A TLS handshake gets ``socket.request.read.timeout.ms`` to finish, as a frame does."""
        if self.ssl_context is None:
            return {}
        return {"ssl": self.ssl_context, "ssl_handshake_timeout": self.limits.read_ms / 1000}

    async def _sweep(self) -> None:
        """Close the connections past ``connections.max.idle.ms`` or ``socket.request.read.timeout.ms``."""
        while True:
            await asyncio.sleep(self.deadlines.poll_interval_ms / 1000)
            for conn, config in self.deadlines.expired(monotonic_ms()):
                log.info("closing %s: %s passed", conn.peer, config)
                conn.abort()

    async def stop(self) -> None:
        """Stop listening, close every connection and wait until their tasks (workers, handlers) have ended."""
        if self._server is not None:
            self._server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        tasks = [self._sweeper] if self._sweeper is not None else []
        for conn in list(self._connections):
            conn.close()
            for task in conn.tasks():
                task.cancel()
                tasks.append(task)
        await asyncio.gather(*tasks, return_exceptions=True)
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
