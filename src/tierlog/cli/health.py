"""Watches librdkafka's global errors so a command fails fast, not hangs.

librdkafka retries a refused connection forever and only tells the program
through the ``error_cb`` callback, which runs inside the client's ``poll``.
`BrokerHealth` is that callback: it remembers when every broker is down (or
a fatal error happened) and `check` turns that into a `CliError` such as
``cannot reach bootstrap server 127.0.0.1:9092 (Connection refused)`` (a refused login or a
TLS listener spoken to in plaintext is named as such: `cli.connect_failure`).

Losing every broker only fails the command before the cluster first
answered (`mark_connected`); afterwards a restarting broker is librdkafka's
to ride out, within the command's own timeouts.
"""

from __future__ import annotations

import re

from confluent_kafka import KafkaError

from tierlog.cli.connect_failure import login_refused, unreachable
from tierlog.cli.errors import CliError, describe_kafka_error

__all__ = ["BrokerHealth"]

_CONNECTION_CODES = frozenset(
    {KafkaError._TRANSPORT, KafkaError._RESOLVE, KafkaError._SSL, KafkaError._AUTHENTICATION}
)
_BROKER_PREFIX = re.compile(r"^\S+/(?:bootstrap|\d+): ")
_ELAPSED_SUFFIX = re.compile(r"\s*\(after \d+ms in state \w+\)\s*$")


def _short_reason(text: str) -> str:
    """librdkafka's connection error without the broker prefix and timing."""
    return _ELAPSED_SUFFIX.sub("", _BROKER_PREFIX.sub("", text.strip()))


class BrokerHealth:
    """The ``error_cb`` of one client, and the check that reports it."""

    def __init__(self, bootstrap: str, *, security_protocol: str) -> None:
        self.bootstrap = bootstrap
        self.security_protocol = security_protocol.lower()      # the client's: plaintext, ssl, sasl_ssl...
        self._all_down = False
        self._reason = ""
        self._login_refused = False
        self._fatal: KafkaError | None = None
        self._connected = False

    def mark_connected(self) -> None:
        """The cluster answered once: from now on only fatal errors fail."""
        self._connected = True
        self._all_down = False

    def __call__(self, error: KafkaError) -> None:
        code = error.code()
        if code == KafkaError._ALL_BROKERS_DOWN:
            self._all_down = not self._connected
        elif code in _CONNECTION_CODES:
            self._reason = _short_reason(error.str())
            self._login_refused = code == KafkaError._AUTHENTICATION
        elif error.fatal():
            self._fatal = error

    @property
    def reason(self) -> str:
        """The last connection failure librdkafka reported, or ''."""
        return self._reason

    @property
    def connected(self) -> bool:
        return self._connected

    def unreachable_message(self, fallback: str = "") -> str:
        if self._login_refused:
            return login_refused(self.bootstrap, self._reason)
        return unreachable(self.bootstrap, self._reason or fallback,
                           spoke_tls=self.security_protocol.endswith("ssl"),
                           spoke_sasl=self.security_protocol.startswith("sasl"))

    def check(self) -> None:
        """Raise `CliError` if the client hit a fatal error or lost every broker."""
        if self._fatal is not None:
            raise CliError(describe_kafka_error(self._fatal))
        if self._all_down:
            raise CliError(self.unreachable_message())
