"""MetricsEndpoint: a node's prometheus-client registry over HTTP (``metrics.prometheus.listener``).

``await MetricsEndpoint.start(registry, host, port)`` binds at once (port 0: any
free port; ``bound`` is the real address; a bind failure is a ConfigError) and
serves ``/metrics`` from the node's own event loop: ``prepare()`` (the scrape-time
collectors' snapshots of the broker's state, taken where that state changes) runs
on the loop, then the collection, encoding and compression on a worker thread, so
a large scrape does not stall the loop for its encoding. The answer is
prometheus-client's own exposition (``make_wsgi_app``, called with the request
as a WSGI environ): the Prometheus text format, or OpenMetrics when the scraper's
``Accept`` asks for it, gzip when its ``Accept-Encoding`` allows, ``name[]=``
filters, OPTIONS, and 405 for methods other than GET; HEAD is answered as the GET
without its body. This module only frames HTTP/1.1 around it, with every limit
named: at most ``CONNECTIONS_MAX`` scrapes at a time (more are closed at once), a
request head of at most ``REQUEST_HEAD_MAX_BYTES`` read within ``READ_TIMEOUT_S``,
one response per connection. Another path is 404, a malformed head 400, a head too
large 431, a collector that raises 500 (logged; the node goes on). ``close()`` stops listening and ends the scrapes in progress.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging

from prometheus_client import CollectorRegistry, make_wsgi_app

from tierlog.config import ConfigError
from tierlog.net.server import bind

__all__ = ["CONNECTIONS_MAX", "PATH", "READ_TIMEOUT_S", "REQUEST_HEAD_MAX_BYTES", "MetricsEndpoint"]

log = logging.getLogger(__name__)
CONNECTIONS_MAX = 8
REQUEST_HEAD_MAX_BYTES = 8192
READ_TIMEOUT_S = 5.0
PATH = "/metrics"


class MetricsEndpoint:
    def __init__(self, registry: CollectorRegistry, host: str, port: int, prepare=None):
        self._app = make_wsgi_app(registry)
        self._prepare = prepare or (lambda: None)
        self.bound = (host, port)
        self._server: asyncio.Server | None = None
        self._scrapes: set[asyncio.Task] = set()

    @classmethod
    async def start(cls, registry: CollectorRegistry, host: str, port: int, prepare=None) -> MetricsEndpoint:
        """``prepare()``: called on the event loop before each scrape is collected."""
        try:
            sock = bind(host, port)
        except OSError as e:
            raise ConfigError(f"metrics.prometheus.listener: cannot listen on {host}:{port}: "
                              f"{e.strerror or e}") from None
        endpoint = cls(registry, host, sock.getsockname()[1], prepare)
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
        assert task is not None                 # a connection callback runs in its own task
        self._scrapes.add(task)
        try:
            status, headers, body, with_body = await self._answer(reader)
            lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers),
                     f"Content-Length: {len(body)}", "Connection: close", "", ""]
            writer.write("\r\n".join(lines).encode("latin-1"))
            if with_body:
                writer.write(body)
            await asyncio.wait_for(writer.drain(), READ_TIMEOUT_S)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            self._scrapes.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[str, list, bytes, bool]:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except (asyncio.LimitOverrunError, ValueError):
            return _text("431 Request Header Fields Too Large", "request head too large")
        environ = parse_head(head)
        if environ is None:
            return _text("400 Bad Request", "bad request line")
        if environ["PATH_INFO"] != PATH:
            return _text("404 Not Found", f"see {PATH}")
        try:
            self._prepare()
        except Exception:
            log.exception("preparing the metrics failed")
            return _text("500 Internal Server Error", "collecting metrics failed (see the node's log)")
        return await asyncio.to_thread(self.respond, environ)

    def respond(self, environ: dict) -> tuple[str, list, bytes, bool]:
        """prometheus-client's answer to ``environ`` (status, headers, body, whether to send the
        body): a HEAD is its GET's status and headers, Content-Length included, without the body."""
        head_only = environ["REQUEST_METHOD"] == "HEAD"
        if head_only:
            environ = {**environ, "REQUEST_METHOD": "GET"}
        answer: list = []
        try:
            body = b"".join(self._app(environ, lambda status, headers: answer.extend((status, headers))))
        except Exception:
            log.exception("collecting metrics failed")
            return _text("500 Internal Server Error", "collecting metrics failed (see the node's log)")
        return answer[0], answer[1], body, not head_only


def parse_head(head: bytes) -> dict | None:
    """A WSGI environ of what prometheus-client reads, or None for a malformed request line."""
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split()
    if len(words) != 3 or not words[2].startswith("HTTP/"):
        return None
    path, _, query = words[1].partition("?")
    environ = {"REQUEST_METHOD": words[0], "PATH_INFO": path, "QUERY_STRING": query}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            environ["HTTP_" + name.strip().upper().replace("-", "_")] = value.strip()
    return environ


def _text(status: str, message: str) -> tuple[str, list, bytes, bool]:
    return status, [("Content-Type", "text/plain")], (message + "\n").encode(), True
