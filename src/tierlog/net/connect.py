"""Every outbound connection tierlog makes starts here: ``connect`` (a blocking socket,
for the CLI, tierlog's client and the Spark source) and ``open_connection`` (an asyncio
transport, for nodes: replica fetchers, controller channels, Raft, the remote log
metadata manager). Both take the peer's (host, port) and a ``Security``; with SSL
they finish the TLS handshake (server verified per ``ssl.endpoint.identification.algorithm``,
our certificate offered when there is a keystore) before returning, so callers
never see a half-made connection or plaintext where TLS was asked for.

Contexts are built once per ``SslSettings`` and kept (``_context``): building one reads
the stores from disk.  Failures raise ``OSError`` subclasses (``ssl.SSLError`` for the
handshake, ``TimeoutError``), which the callers turn into ``PeerUnavailable``.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl

from tierlog.net.security import Security, SslSettings
from tierlog.net.ssl_context import client_context

__all__ = ["connect", "describe_failure", "open_connection", "speaks_tls"]

_RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024


def connect(host: str, port: int, security: Security, timeout_s: float) -> socket.socket:
    """A connected (and, for SSL, handshaken) blocking socket with TCP_NODELAY."""
    sock = socket.create_connection((host, port), timeout=timeout_s)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RECEIVE_BUFFER_BYTES)
        if security.ssl is not None:
            context = _context(security.ssl)
            sock = context.wrap_socket(sock, server_hostname=_server_hostname(context, host))
        return sock
    except BaseException:
        sock.close()
        raise


async def open_connection(host: str, port: int, security: Security, protocol_factory) -> asyncio.Transport:
    """An asyncio transport to host:port served by ``protocol_factory()`` (TLS handshake done)."""
    loop = asyncio.get_running_loop()
    if security.ssl is None:
        transport, _ = await loop.create_connection(protocol_factory, host, port)
    else:
        context = _context(security.ssl)
        transport, _ = await loop.create_connection(protocol_factory, host, port, ssl=context,
                                                    server_hostname=_server_hostname(context, host))
    return transport


def describe_failure(exc: OSError) -> str:
    """A connection failure in a few words (a certificate problem says which)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed: {exc.verify_message or exc.reason}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake failed: {exc.reason or exc}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return exc.strerror or str(exc) or type(exc).__name__


def speaks_tls(host: str, port: int, timeout_s: float) -> bool:
    """Whether host:port finishes a TLS handshake (nothing verified: this only tells a TLS listener
    from a plaintext one, to explain why a plaintext connection to it was closed)."""
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    probe.check_hostname = False
    probe.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock, probe.wrap_socket(sock):
            return True
    except OSError:             # refused, timed out, or not TLS (ssl.SSLError)
        return False


@functools.lru_cache(maxsize=16)
def _context(settings: SslSettings) -> ssl.SSLContext:
    return client_context(settings)


def _server_hostname(context: ssl.SSLContext, host: str) -> str | None:
    """SNI and the name checked: the host connected to (None only when nothing is verified)."""
    return host if context.check_hostname or context.verify_mode != ssl.CERT_NONE else None
