"""The write side of a server connection: answers leave in request order, with no task of their own.

An answer given at once goes out at once when none is pending (``_send``; the connection's reads
gather several in one write: ``_put`` then ``_flush``).  A request that released the connection
(``net.pipelining``) leaves its task in ``_answers``, and the answers of the requests begun after
it queue behind it; whenever the head's task ends, the callback of that task writes the head and
every answer behind it that is ready (``_drain_answers``), in one write, and a connection whose
transport stopped taking bytes (``pause_writing``) drains again once it takes them.  A throttled
answer (``Throttled``) mutes the connection once sent (KIP-219); a handler's task that failed ends
the connection as the worker would (``_ended``), and so does a send that fails there (a peer gone
during sendfile, a file region that cannot be read), after the whole answers before it.

A mixin of ``net.server._Connection``: it works on the connection's transport and state.
"""
from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from typing import Any

__all__ = ["SENDFILE_MIN_BYTES", "AnswerOrder", "Throttled"]

log = logging.getLogger(__name__)

SENDFILE_MIN_BYTES = 65536          # smaller regions are cheaper to pread and write


class Throttled(list):
    """An answer's parts from a client over its quota: once sent, the connection is muted
    (reads and begins nothing) for ``throttle_ms`` (KIP-219)."""

    def __init__(self, parts: list, throttle_ms: int):
        super().__init__(parts)
        self.throttle_ms = throttle_ms


class AnswerOrder:
    # The state of ``_Connection`` this mixin works on (its ``__init__`` sets it), declared for the type checker.
    transport: asyncio.Transport | None
    _answers: deque
    _answered: asyncio.Event
    _can_write: asyncio.Event
    _closed: bool
    _zero_copy: bool
    _handling: set[asyncio.Task]
    _server: Any

    def _mute(self, throttle_ms: int) -> None: ...

    async def _ended(self, e: BaseException) -> None: ...

    def resume_writing(self):
        self._can_write.set()
        if self._answers:
            self._drain_answers()

    async def _send(self, parts: list):
        out: list = []
        self._put(out, parts)
        self._flush(out)
        if not self._can_write.is_set():
            await self._can_write.wait()

    async def _answer(self, result) -> None:
        """Send one request's answer given at once (None: no answer, acks=0), none pending before it."""
        if result is not None and not self._closed:
            await self._send(result)
            if type(result) is Throttled:
                self._mute(result.throttle_ms)
        self._server.request_done(self)

    def _answer_later(self, result) -> None:
        """Queue an answer (parts, None, or the task that gives them) behind the ones pending."""
        self._answers.append(result)
        if isinstance(result, asyncio.Future):
            result.add_done_callback(self._answer_ready)
        if len(self._answers) == 1:
            self._drain_answers()

    def _answer_ready(self, _task: asyncio.Future) -> None:
        self._drain_answers()

    def _drain_answers(self) -> None:
        """Send the answers at the head that are ready, in one write; stop at one still pending, at a
        full transport (``resume_writing`` goes on) or at a throttled one (muted from then on).  Run
        from callbacks: what a send raises (a peer gone during sendfile, a file region that cannot
        be read) ends the connection as the worker's sends do (``_ended``), not the event loop's."""
        out: list = []
        try:
            self._drain(out)
        except Exception as e:           # noqa: BLE001 - handed to _ended, which logs and closes
            self._end_with(e)

    def _drain(self, out: list) -> None:
        answers = self._answers
        while answers and not self._closed and self._can_write.is_set():
            head = answers[0]
            if isinstance(head, asyncio.Future):
                if not head.done():
                    break
                failed = head.exception() if not head.cancelled() else asyncio.CancelledError()
                if failed is not None:
                    answers.popleft()
                    self._flush(out)
                    self._end_with(failed)
                    return
                head = head.result()
            answers.popleft()
            self._answered.set()
            if head is not None:
                self._put_whole(out, head)
                if type(head) is Throttled:
                    self._flush(out)
                    self._mute(head.throttle_ms)
            self._server.request_done(self)
        self._flush(out)

    def _end_with(self, failed: BaseException) -> None:
        """A handler's task failed: end the connection as the worker does (``_ended``)."""
        if isinstance(failed, asyncio.CancelledError):
            failed = RuntimeError("a handler's task was cancelled")
        task = asyncio.get_running_loop().create_task(self._ended(failed))
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    def _put_whole(self, out: list, parts: list) -> None:
        """``_put``; when it fails, the answers before it in ``out`` go out whole, then it raises."""
        mark = len(out)
        try:
            self._put(out, parts)
        except Exception:
            del out[mark:]
            self._flush(out)
            raise

    def _put(self, out: list, parts: list) -> None:
        """Add one answer (its size, then its parts) to ``out``, the bytes of a write to come; a large
        file region is sent at once (after what ``out`` held), from the page cache when it may."""
        transport = self.transport
        assert transport is not None, "answers are sent once connected"
        out.append(sum(len(p) for p in parts).to_bytes(4, "big"))
        for p in parts:
            if isinstance(p, (bytes, bytearray, memoryview)):
                out.append(p)
                continue
            if self._zero_copy and len(p) >= SENDFILE_MIN_BYTES:
                self._flush(out)
                if transport.get_write_buffer_size() == 0:
                    self._sendfile(p)
                    continue
            out.append(_whole(p, p.read()))

    def _flush(self, out: list) -> None:
        """One write of what ``out`` holds, emptied."""
        if out:
            transport = self.transport
            assert transport is not None, "answers are sent once connected"
            transport.writelines(out)
            out.clear()

    def _sendfile(self, region):
        """Send a file region from the page cache; only called while the transport's buffer is empty,
        on a plaintext connection."""
        transport = self.transport
        assert transport is not None, "answers are sent once connected"
        sock = transport.get_extra_info("socket")
        offset, remaining = region.offset, len(region)
        try:
            sent = os.sendfile(sock.fileno(), region.fd, offset, remaining)
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < remaining:
            transport.write(_whole(region, os.pread(region.fd, remaining - sent, offset + sent), sent))


def _whole(region, data: bytes, before: int = 0) -> bytes:
    """``data``, the rest of ``region`` after ``before`` bytes; a region cut short (its segment
    truncated since the read) raises, ending the connection, rather than send a misframed answer."""
    if before + len(data) != len(region):
        raise OSError(f"{region!r} was truncated since it was read ({before + len(data)} bytes left)")
    return data
