"""Kafka requests the CLI sends itself, for APIs librdkafka does not offer.

confluent-kafka has no DescribeTopicPartitions (75), ListPartitionReassignments
(46) or DescribeQuorum (55), so commands that want them speak the protocol with
tierlog's codec over ``net.blocking.BlockingConnection`` (tierlog's one client
connection) to the first bootstrap server that answers ApiVersions. Every wait
ends at the command's deadline (--timeout). Failing to reach any server is a
`CliError` in the same words as librdkafka's path (`cli.connect_failure`): a refused login, a
TLS listener spoken to in plaintext, else ``cannot reach bootstrap server HOST:PORT (reason)``.

The connection speaks what --command-config asks for (``security.protocol``,
``ssl.*`` and SASL/PLAIN's or SCRAM's ``sasl.*``, Kafka's client names or librdkafka's;
`BrokerWire.from_args`), through ``net.connect`` like every tierlog connection.
What it cannot speak (GSSAPI, OAUTHBEARER) `usable` says, and a command that can
keeps to librdkafka.
"""

from __future__ import annotations

import argparse
from typing import Self

from tierlog.cli.connect_failure import login_refused, not_logged_in, unreachable
from tierlog.cli.errors import CliError
from tierlog.clock import monotonic_s
from tierlog.net.blocking import BlockingConnection
from tierlog.net.client_security import client_security
from tierlog.net.request_pipeline import AuthenticationFailed, PeerUnavailable
from tierlog.net.security import PLAINTEXT, Security, SecurityConfigError
from tierlog.protocol import APIS, ApiKey

__all__ = ["BrokerWire", "security_of", "usable"]

_CLIENT_ID = "tierlog-cli"


def usable(args: argparse.Namespace) -> bool:
    """Whether tierlog's own connection can speak what --command-config asks for (plaintext,
    TLS, SASL/PLAIN and SCRAM; not a mechanism librdkafka may still speak, such as GSSAPI)."""
    try:
        client_security(dict(args.command_config))
    except SecurityConfigError:
        return False
    return True


def security_of(args: argparse.Namespace) -> Security:
    """The connection security --command-config asks for; a `CliError` naming a setting it cannot honour."""
    try:
        return client_security(dict(args.command_config))
    except SecurityConfigError as exc:
        raise CliError(f"--command-config: {exc}") from None


def _split_host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CliError(f"bad bootstrap server {text!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


class BrokerWire:
    """One connection to a broker; requests in turn, all within one deadline."""

    def __init__(self, bootstrap: str, timeout_s: float, security: Security = PLAINTEXT) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.security = security
        self.deadline = monotonic_s() + timeout_s
        self.address = ""
        self.versions: dict[int, tuple[int, int]] = {}   # api key -> (min, max) the broker serves
        self._conn: BlockingConnection | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """A wire to --bootstrap-server within --timeout, with --command-config's security."""
        return cls(args.bootstrap_server, args.timeout, security_of(args))

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
            except AuthenticationFailed as exc:
                self.close()
                raise CliError(login_refused(address, exc.reason)) from None
            except (PeerUnavailable, ValueError) as exc:
                self.close()
                failures.append(exc.reason if isinstance(exc, PeerUnavailable) else str(exc))
        reason = "; ".join(dict.fromkeys(failures)) or "no bootstrap server given"
        raise CliError(unreachable(self.bootstrap, reason, spoke_tls=self.security.ssl is not None,
                                   spoke_sasl=self.security.sasl is not None))

    def _open(self, address: str) -> None:
        host, port = _split_host_port(address)
        self._conn = BlockingConnection(host, port, client_id=_CLIENT_ID, timeout_s=self._remaining_or_raise(),
                                        security=self.security)
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
        except PeerUnavailable as exc:
            # a SASL listener answers ApiVersions before a login, then closes on anything else
            refused = None if self.security.sasl is not None else not_logged_in(*_split_host_port(self.address))
            raise CliError(refused or f"{what} from {self.address} failed: {exc.reason}") from None

    def request(self, api_key: int, body: dict, version: int) -> dict:
        """Send one request and return the decoded response body (PeerUnavailable if not)."""
        assert self._conn is not None, "request before connect"
        return self._conn.request(api_key, version, body, self._remaining_or_raise())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def remaining_s(self) -> float:
        """Seconds left before the command's deadline (TimeoutError when none)."""
        remaining = self.deadline - monotonic_s()
        if remaining <= 0:
            raise TimeoutError("timed out")
        return remaining

    def _remaining_or_raise(self) -> float:
        try:
            return self.remaining_s()
        except TimeoutError:
            raise PeerUnavailable("timed out") from None
