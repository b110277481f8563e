"""Outbound Kafka-protocol connections between nodes (Raft, heartbeats, forwarding,
replica fetches), the asyncio shell of ``net.request_pipeline``.

``PeerConnection`` keeps one TCP connection to one peer, pipelines requests
(at most ``inflight_max`` outstanding, Kafka's
``max.in.flight.requests.per.connection``) and hands each response to the
request it answers (``RequestPipeline`` checks correlation ids and order).  A
lost connection or a protocol violation fails every outstanding request with
``PeerUnavailable``; the next request reconnects.  ``Peers`` maps node ids to
addresses and hands out one connection per node.

Bounds: a response frame larger than ``receive.message.max.bytes``
(``RECEIVE_MESSAGE_MAX_BYTES``) closes the connection; every request has a
timeout (the connect included), after which its answer is dropped when it
comes; more than ``inflight_max`` such late answers owed close the connection.

Connections are made by ``net.connect.open_connection`` with the ``Security`` the
``PeerConnection`` (or ``Peers``) was given: TLS when the peer's listener is SSL, and
SASL (``net.sasl_client``) before the first request when it is SASL_*. When the broker
gives the session a lifetime (KIP-368), the connection logs in again on the same socket
before the first request past ``net.sasl_client.REAUTH_AT`` of it: requests already sent
are answered first (a connection serves in order), new ones wait until it is done.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from tierlog.net import sasl_client
from tierlog.net.connect import describe_failure, open_connection
from tierlog.net.request_pipeline import (
    RECEIVE_MESSAGE_MAX_BYTES,
    SIZE,
    PeerUnavailable,
    RequestPipeline,
)
from tierlog.net.security import PLAINTEXT, Security
from tierlog.net.tasks import expire_after
from tierlog.protocol import APIS

__all__ = ["DEFAULT_ROUTE", "PeerConnection", "PeerRoute", "PeerUnavailable", "Peers"]

log = logging.getLogger(__name__)
INFLIGHT_MAX = 64
CONNECT_TIMEOUT_S = 2.0
READY_ATTEMPTS_MAX = 3          # connects / logins one request waits for
REAUTH_TIMEOUT_S = 10.0         # a re-authentication's answers come after those of the requests ahead of it


class _ClientProtocol(asyncio.Protocol):
    def __init__(self, owner: PeerConnection):
        self.owner = owner
        self.buf = bytearray()
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        pipeline = self.owner.pipeline
        while len(self.buf) >= SIZE.size and self.owner._transport is self.transport:
            try:
                size = pipeline.frame_size(self.buf)
            except PeerUnavailable as e:
                self.owner._fail_all(e)
                return
            if len(self.buf) < SIZE.size + size:
                return
            frame = bytes(self.buf[SIZE.size:SIZE.size + size])
            del self.buf[:SIZE.size + size]
            self.owner._on_frame(frame)

    def connection_lost(self, exc) -> None:
        if self.owner._transport is self.transport:     # not one replaced by a newer connection
            self.owner._fail_all(PeerUnavailable(f"connection to {self.owner.address} lost"))


async def _failure_of(login) -> PeerUnavailable | None:
    """Run an open or a login; its failure is the task's result, not its exception. A caller that
    gave up leaves the shielded task running, and a task that ends in an exception while the loop
    shuts down is logged as unhandled (Python 3.11's ``wait_for`` lets a connection closed at that
    moment win over the task's cancellation)."""
    try:
        await login
    except PeerUnavailable as e:
        return e
    return None


class PeerConnection:
    """One pipelined connection to ``host:port``."""

    def __init__(self, host: str, port: int, client_id: str, inflight_max: int = INFLIGHT_MAX,
                 receive_message_max_bytes: int = RECEIVE_MESSAGE_MAX_BYTES, security: Security = PLAINTEXT):
        self.host, self.port = host, port
        self.security = security
        self.client_id = client_id
        self.inflight_max = inflight_max
        self.pipeline = RequestPipeline(client_id, receive_message_max_bytes)
        self._slots = asyncio.Semaphore(inflight_max)
        self._transport: asyncio.Transport | None = None
        self._connecting: asyncio.Future | None = None
        self._pending: dict[int, asyncio.Future] = {}
        self._reauth_at: float | None = None     # loop time to log in again (KIP-368); None: never

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def request(self, api_key: int, version: int, body: dict, timeout_s: float) -> dict:
        """Send one request and return the decoded response body."""
        async with self._slots:
            await self._until_ready(timeout_s)
            cid, answer = self._write(api_key, version, body)
            timer = expire_after(answer, timeout_s, TimeoutError)
            try:
                return await answer
            except TimeoutError:
                self._give_up(cid)
                raise PeerUnavailable(f"{self.address}: api {api_key} timed out after {timeout_s:g}s") \
                    from None
            finally:
                timer.cancel()
                self._pending.pop(cid, None)

    def _write(self, api_key: int, version: int, body: dict) -> tuple[int, asyncio.Future]:
        """Write one request on the open connection: its correlation id and the future of its answer."""
        if self._transport is None:
            raise PeerUnavailable(f"connection to {self.address} closed")
        cid, frame = self.pipeline.request(api_key, version, body)
        answer = self._pending[cid] = asyncio.get_running_loop().create_future()
        self._transport.write(frame)
        return cid, answer

    async def _until_ready(self, timeout_s: float) -> None:
        """Connected and logged in; checked again after each wait, as a login may have begun meanwhile
        (the caller then writes its request at once)."""
        for _ in range(READY_ATTEMPTS_MAX):
            if self._ready():
                return
            try:
                await asyncio.wait_for(self._connect(), min(CONNECT_TIMEOUT_S, timeout_s))
            except TimeoutError:
                raise PeerUnavailable(f"cannot connect to {self.address}: timed out") from None
        if not self._ready():
            raise PeerUnavailable(f"cannot connect to {self.address}: the connection closed while it opened")

    def _give_up(self, cid: int) -> None:
        self.pipeline.abandon(cid)
        if self.pipeline.abandoned > self.inflight_max:
            self._fail_all(PeerUnavailable(f"{self.address}: {self.pipeline.abandoned} answers overdue"))

    def _open_now(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def _ready(self) -> bool:
        """Connected, logged in, and not due to log in again."""
        return self._open_now() and self._connecting is None and \
            (self._reauth_at is None or asyncio.get_running_loop().time() < self._reauth_at)

    async def _connect(self) -> None:
        """Open the connection, or re-authenticate it (KIP-368) when its session is nearly over."""
        if self._ready():
            return
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(_failure_of(
                self._authenticate(REAUTH_TIMEOUT_S) if self._open_now() else self._open()))
        try:
            failure = await asyncio.shield(self._connecting)
        finally:
            if self._connecting is not None and self._connecting.done():
                self._connecting = None
        if failure is not None:     # each waiter raises its own copy (one exception, one traceback)
            raise PeerUnavailable(str(failure), failure.reason)

    async def _open(self) -> None:
        try:
            transport = await open_connection(self.host, self.port, self.security, lambda: _ClientProtocol(self))
        except OSError as e:
            raise PeerUnavailable(f"cannot connect to {self.address}: {describe_failure(e)}") from None
        self.pipeline.reset()
        self._transport, self._reauth_at = transport, None
        if self.security.sasl is not None:
            await self._authenticate(CONNECT_TIMEOUT_S)

    async def _authenticate(self, timeout_s: float) -> None:
        """SASL before anything else (``net.sasl_client``); a refusal fails the connection."""
        creds = self.security.sasl
        assert creds is not None, "only a SASL connection logs in"
        try:
            sasl_client.check_handshake(await self._exchange(*sasl_client.handshake_request(creds),
                                                             timeout_s=timeout_s), creds)
            login = sasl_client.ClientExchange(creds)
            token: bytes | None = login.first()
            while token is not None:
                token = login.next(await self._exchange(*sasl_client.authenticate_request(token),
                                                        timeout_s=timeout_s))
        except PeerUnavailable as e:
            self._fail_all(e)
            raise PeerUnavailable(f"cannot connect to {self.address}: {e.reason}", e.reason) from None
        after_s = sasl_client.reauth_after_s(login.lifetime_ms)
        self._reauth_at = None if after_s is None else asyncio.get_running_loop().time() + after_s

    async def _exchange(self, api_key: int, version: int, body: dict, timeout_s: float = CONNECT_TIMEOUT_S) -> dict:
        """One request of a login (no slot: the caller holds one)."""
        cid, answer = self._write(api_key, version, body)
        timer = expire_after(answer, timeout_s, TimeoutError)
        try:
            return await answer
        except TimeoutError:
            raise PeerUnavailable(f"{self.address}: no SASL answer within {timeout_s:g}s", "timed out") \
                from None
        finally:
            timer.cancel()
            self._pending.pop(cid, None)

    def _on_frame(self, frame: bytes) -> None:
        try:
            cid, body = self.pipeline.complete(frame)
        except PeerUnavailable as e:
            self._fail_all(PeerUnavailable(f"{self.address}: {e}"))
            return
        fut = self._pending.get(cid)
        if body is not None and fut is not None and not fut.done():
            fut.set_result(body)

    def _fail_all(self, exc: Exception) -> None:
        if self._transport is not None:
            self._transport.abort()
            self._transport = None
        self.pipeline.reset()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()

    def close(self) -> None:
        self._fail_all(PeerUnavailable(f"connection to {self.address} closed"))


class Peers:
    """Node id -> address, with one lazily opened connection per node, all with ``security``."""

    def __init__(self, client_id: str, addresses: dict[int, tuple[str, int]] | None = None,
                 security: Security = PLAINTEXT):
        self.client_id = client_id
        self.security = security
        self.addresses: dict[int, tuple[str, int]] = dict(addresses or {})
        self._conns: dict[int, PeerConnection] = {}

    def set_address(self, node_id: int, host: str, port: int) -> None:
        if self.addresses.get(node_id) != (host, port):
            self.addresses[node_id] = (host, port)
            old = self._conns.pop(node_id, None)
            if old is not None:
                old.close()

    async def request(self, node_id: int, api_key: int, body: dict, timeout_s: float,
                      version: int | None = None) -> dict:
        conn = self._conns.get(node_id)
        if conn is None:
            if node_id not in self.addresses:
                raise PeerUnavailable(f"no address for node {node_id}")
            conn = self._conns[node_id] = PeerConnection(*self.addresses[node_id], self.client_id,
                                                                 security=self.security)
        v = APIS[api_key].max_version if version is None else version
        return await conn.request(api_key, v, body, timeout_s)

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


@dataclass(frozen=True, slots=True)
class PeerRoute:
    """How a node reaches other brokers: their endpoint on ``listener``
    (``inter.broker.listener.name``; None: the first one registered) with ``security``."""

    listener: str | None = None
    security: Security = PLAINTEXT

    def address(self, broker) -> tuple[str, int] | None:
        """``broker``'s (host, port) on the listener (a ``BrokerInfo``; None: no endpoint there)."""
        return broker.address(self.listener)

    def connection(self, host: str, port: int, client_id: str) -> PeerConnection:
        return PeerConnection(host, port, client_id, security=self.security)

    def peers(self, client_id: str) -> Peers:
        return Peers(client_id, security=self.security)


DEFAULT_ROUTE = PeerRoute()     # the first registered endpoint, plaintext
