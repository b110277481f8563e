"""MetricsEndpoint: a node's prometheus-client registry over HTTP (``metrics.prometheus.listener``).

``await MetricsEndpoint.start(registry, host, port)`` binds at once (port 0: any
free port; ``bound`` is the real address; a bind failure is a ConfigError) and
serves ``GET /metrics`` in Prometheus' text format from the node's own event loop:
no threads, and every limit named. At most ``CONNECTIONS_MAX`` scrapes at a time
(more are closed at once), a request head of at most ``REQUEST_HEAD_MAX_BYTES``
read within ``READ_TIMEOUT_S``, one response per connection. Another path is 404,
another method 405, a malformed head 400. ``close()`` stops listening and ends the
scrapes in progress.
"""
from __future__ import annotations

import asyncio
import contextlib

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from tierlog.config import ConfigError
from tierlog.net.server import bind

__all__ = ["CONNECTIONS_MAX", "READ_TIMEOUT_S", "REQUEST_HEAD_MAX_BYTES", "MetricsEndpoint"]

CONNECTIONS_MAX = 8
REQUEST_HEAD_MAX_BYTES = 8192
READ_TIMEOUT_S = 5.0


class MetricsEndpoint:
    def __init__(self, registry: CollectorRegistry, host: str, port: int):
        self._registry = registry
        self.bound = (host, port)
        self._server: asyncio.Server | None = None
        self._scrapes: set[asyncio.Task] = set()

    @classmethod
    async def start(cls, registry: CollectorRegistry, host: str, port: int) -> MetricsEndpoint:
        try:
            sock = bind(host, port)
        except OSError as e:
            raise ConfigError(f"metrics.prometheus.listener: cannot listen on {host}:{port}: "
                              f"{e.strerror or e}") from None
        endpoint = cls(registry, host, sock.getsockname()[1])
        endpoint._server = await asyncio.start_server(endpoint._accept, sock=sock, limit=REQUEST_HEAD_MAX_BYTES)
        return endpoint

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._scrapes):
            task.cancel()
        await asyncio.gather(*self._scrapes, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._scrapes) >= CONNECTIONS_MAX:
            writer.close()
            return
        task = asyncio.current_task()
        self._scrapes.add(task)
        try:
            status, body, content_type = await self._answer(reader)
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n")
            writer.write(head.encode("ascii") + body)
            await asyncio.wait_for(writer.drain(), READ_TIMEOUT_S)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            self._scrapes.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[str, bytes, str]:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except (asyncio.LimitOverrunError, ValueError):
            return "431 Request Header Fields Too Large", b"request head too large\n", "text/plain"
        words = head.split(b"\r\n", 1)[0].split()
        if len(words) != 3 or not words[2].startswith(b"HTTP/"):
            return "400 Bad Request", b"bad request line\n", "text/plain"
        method, target = words[0], words[1].split(b"?", 1)[0]
        if target != b"/metrics":
            return "404 Not Found", b"see /metrics\n", "text/plain"
        if method != b"GET":
            return "405 Method Not Allowed", b"GET /metrics\n", "text/plain"
        return "200 OK", generate_latest(self._registry), CONTENT_TYPE_LATEST
