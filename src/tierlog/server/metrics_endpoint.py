"""MetricsEndpoint: a node's prometheus-client registry over HTTP (``metrics.prometheus.listener``).

``MetricsEndpoint.start(registry, host, port)`` binds at once (port 0: any free
port; ``bound`` is the real address) and serves ``GET /metrics`` in Prometheus'
text format from prometheus-client's HTTP server, on a daemon thread of its own
(one more thread per scrape), so the event loop never waits for a scraper. The
metrics are updated on the event loop's thread; prometheus-client's metrics are
thread safe. ``close()`` stops the server thread without blocking the loop.
"""
from __future__ import annotations

import asyncio
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from tierlog.config import ConfigError

__all__ = ["MetricsEndpoint"]

CLOSE_JOIN_S = 5.0


class MetricsEndpoint:
    def __init__(self, server: WSGIServer, thread: threading.Thread, host: str):
        self._server = server
        self._thread = thread
        self.bound = (host, server.server_port)

    @classmethod
    def start(cls, registry: CollectorRegistry, host: str, port: int) -> MetricsEndpoint:
        try:
            server, thread = start_http_server(port, host, registry=registry)
        except OSError as e:
            raise ConfigError(f"metrics.prometheus.listener: cannot listen on {host}:{port}: "
                              f"{e.strerror or e}") from None
        return cls(server, thread, host)

    async def close(self) -> None:
        await asyncio.to_thread(self._shutdown)

    def _shutdown(self) -> None:
        self._server.shutdown()          # waits for serve_forever's loop (polls every 0.5 s)
        self._server.server_close()
        self._thread.join(CLOSE_JOIN_S)
