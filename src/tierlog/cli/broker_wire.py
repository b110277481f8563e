"""Kafka requests the CLI sends itself, for APIs librdkafka does not offer.

confluent-kafka has no DescribeTopicPartitions (75) or ListPartitionReassignments
(46), so commands that want them speak the protocol with tierlog's codec over
one plaintext connection to the first bootstrap server that answers ApiVersions.
Every wait ends at the command's deadline (--timeout). Failing to reach any
server is a `CliError` in the same words as librdkafka's path:
``cannot reach bootstrap server HOST:PORT (reason)``.

A command whose --command-config asks for TLS or SASL cannot use this (it
speaks plaintext only): `usable` says so, and the command keeps to librdkafka.
"""

from __future__ import annotations

import argparse
import socket
import struct
import time
from typing import Self

from tierlog.cli.errors import CliError
from tierlog.protocol import APIS, ProtocolError, decode_response, encode_request
from tierlog.protocol.api import ApiKey

__all__ = ["BrokerWire", "usable"]

_CLIENT_ID = "tierlog-cli"
_MAX_RESPONSE_BYTES = 100 * 1024 * 1024     # a bigger size prefix is not a Kafka response
_PLAINTEXT = "plaintext"


def usable(args: argparse.Namespace) -> bool:
    """Whether the connection settings allow a plaintext connection of our own."""
    settings = dict(args.command_config)
    protocol = settings.get("security.protocol", _PLAINTEXT).strip().lower()
    return protocol == _PLAINTEXT and not any(k.startswith(("sasl.", "ssl.")) for k in settings)


def _split_host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CliError(f"bad bootstrap server {text!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class BrokerWire:
    """One connection to a broker; requests in turn, all within one deadline."""

    def __init__(self, bootstrap: str, timeout_s: float) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.address = ""
        self.versions: dict[int, tuple[int, int]] = {}   # api key -> (min, max) the broker serves
        self._sock: socket.socket | None = None
        self._correlation = 0

    def __enter__(self) -> Self:
        self.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def connect(self) -> None:
        """Connect to the first bootstrap server that answers ApiVersions."""
        failures = []
        for address in [a.strip() for a in self.bootstrap.split(",") if a.strip()]:
            try:
                self._open(address)
                return
            except (OSError, ValueError, ProtocolError) as exc:
                self.close()
                failures.append(_reason(exc))
        reason = "; ".join(dict.fromkeys(failures)) or "no bootstrap server given"
        raise CliError(f"cannot reach bootstrap server {self.bootstrap} ({reason})")

    def _open(self, address: str) -> None:
        host, port = _split_host_port(address)
        self._sock = socket.create_connection((host, port), timeout=self.remaining_s())
        self.address = address
        answer = self.request(ApiKey.API_VERSIONS, {}, version=0)
        if answer.get("ErrorCode"):
            raise ValueError(f"ApiVersions refused with error {answer['ErrorCode']}")
        self.versions = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in answer["ApiKeys"]}

    def version(self, api_key: int) -> int | None:
        """The highest version of ``api_key`` both the broker and tierlog's codec speak, or None."""
        served, ours = self.versions.get(api_key), APIS.get(api_key)
        if served is None or ours is None:
            return None
        high = min(served[1], ours.max_version)
        return high if high >= max(served[0], ours.min_version) else None

    def call(self, api_key: int, body: dict, version: int, what: str) -> dict:
        """`request`, with a lost connection, a timeout or a garbled answer as a `CliError`."""
        try:
            return self.request(api_key, body, version)
        except (OSError, ValueError, ProtocolError) as exc:
            raise CliError(f"{what} from {self.address} failed: {_reason(exc)}") from None

    def request(self, api_key: int, body: dict, version: int) -> dict:
        """Send one request and return the decoded response body."""
        assert self._sock is not None, "request before connect"
        self._correlation += 1
        frame = encode_request(api_key, version, self._correlation, _CLIENT_ID, body)
        self._sock.settimeout(self.remaining_s())
        self._sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", self._read(4))
        if not 0 < size <= _MAX_RESPONSE_BYTES:
            raise ValueError(f"bad response size {size}")
        correlation, response = decode_response(api_key, version, self._read(size))
        if correlation != self._correlation:
            raise ValueError(f"response to request {correlation}, expected {self._correlation}")
        return response

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def remaining_s(self) -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        return remaining

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            self._sock.settimeout(self.remaining_s())
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            buf += chunk
        return bytes(buf)
