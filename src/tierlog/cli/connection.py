"""One librdkafka client bound to the user's bootstrap server and --timeout.

Every wait on the cluster goes through `Connection`: it polls the client in
short slices so librdkafka's error callback runs, fails fast with
``cannot reach bootstrap server X`` once every broker is down, and gives up
with a clear message at the deadline instead of hanging.

--command-config settings go to librdkafka as given, except Kafka's (Java)
client ssl.* names, which are translated (``net.client_security.to_librdkafka``), so one
client.properties file serves every command. librdkafka's own log lines are silenced (``log_level=0``); its errors reach
the user through `BrokerHealth`. ``--command-config debug=...`` turns its
logging back on.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from tierlog.cli.errors import CliError
from tierlog.cli.health import BrokerHealth
from tierlog.clock import monotonic_s
from tierlog.net.client_security import to_librdkafka
from tierlog.net.security import SecurityConfigError

__all__ = ["Connection"]

_SLICE_FIRST_S = 0.25  # first metadata attempt; later ones double
_FUTURE_SLICE_S = 0.1
_FUTURE_GRACE_S = 1.0
_TOPIC_RETRY_BACKOFF_S = 0.1
_RETRIABLE_METADATA = frozenset({KafkaError._TRANSPORT, KafkaError._TIMED_OUT})


def _client_config(args: argparse.Namespace, settings: dict) -> dict:
    timeout_ms = max(1000, int(args.timeout * 1000))
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap_server,
        "log_level": 0,
        "socket.connection.setup.timeout.ms": timeout_ms,
        # Kafka's tools back off at most 1 s between connection attempts (reconnect.backoff.max.ms);
        # librdkafka's 10 s default made a command wait that long to ask again for a group's
        # coordinator after a kill -9 of the old one (librdkafka asks on a failed reconnect).
        "reconnect.backoff.max.ms": 1000,
    }
    config.update(settings)
    user = _librdkafka_settings(dict(args.command_config))
    if "debug" in user and "log_level" not in user:
        config["log_level"] = 7
    config.update(user)
    return config


def _librdkafka_settings(user: dict) -> dict:
    """--command-config with Kafka's client ssl.* names translated (a `CliError` if not honourable)."""
    try:
        return to_librdkafka(user)
    except SecurityConfigError as exc:
        raise CliError(f"--command-config: {exc}") from None


class Connection:
    """A client (AdminClient, Producer or Consumer) with deadline-bound waits."""

    def __init__(self, client_class: type, args: argparse.Namespace, **settings: Any) -> None:
        self.bootstrap = args.bootstrap_server
        self.timeout_s: float = args.timeout
        config = _client_config(args, settings)
        self.health = BrokerHealth(self.bootstrap, security_protocol=str(config.get("security.protocol", "plaintext")))
        self.client = client_class({**config, "error_cb": self.health})

    def deadline(self) -> float:
        """A monotonic deadline --timeout seconds from now."""
        return monotonic_s() + self.timeout_s

    def timed_out(self, what: str) -> CliError:
        if not self.health.connected:
            return CliError(self.health.unreachable_message(f"no answer within {self.timeout_s:g}s"))
        detail = f"; last error: {self.health.reason}" if self.health.reason else ""
        return CliError(
            f"timed out after {self.timeout_s:g}s waiting for {what} "
            f"from bootstrap server {self.bootstrap}{detail}"
        )

    def metadata(self):
        """Metadata of the cluster and all its topics; fails fast if unreachable.

        Polls the client between attempts, so on a Consumer call it only
        before assign() (a poll could otherwise swallow a record).
        """
        deadline = self.deadline()
        slice_s = _SLICE_FIRST_S
        while True:
            remaining = deadline - monotonic_s()
            try:
                metadata = self.client.list_topics(timeout=max(0.05, min(slice_s, remaining)))
                self.health.mark_connected()
                return metadata
            except KafkaException as exc:
                if exc.args[0].code() not in _RETRIABLE_METADATA:
                    raise
            self.client.poll(0)
            self.health.check()
            if monotonic_s() >= deadline:
                raise self.timed_out("metadata")
            slice_s *= 2

    def topic_metadata(self, topic: str):
        """One topic's metadata; `CliError` if the topic does not exist.

        Asks for every topic: a Metadata request naming the topic would let
        a broker with auto.create.topics.enable create it as a side effect.
        A retriable topic error (a new topic without a leader yet) is asked
        again until the deadline.
        """
        deadline = self.deadline()
        while True:
            found = self.metadata().topics.get(topic)
            if found is None:
                raise CliError(f"topic {topic!r} does not exist")
            if found.error is None:
                return found
            if not found.error.retriable() or monotonic_s() >= deadline:
                raise KafkaException(found.error)
            time.sleep(_TOPIC_RETRY_BACKOFF_S)  # backoff between two metadata requests

    def wait(self, futures: Iterable[concurrent.futures.Future], what: str) -> None:
        """Wait until every future is done (not necessarily successful).

        The deadline has a grace period over --timeout, which admin calls
        also get as their request timeout, so librdkafka's own, more
        specific, timeout error normally comes first.
        """
        pending = set(futures)
        deadline = self.deadline() + _FUTURE_GRACE_S
        while pending:
            _, pending = concurrent.futures.wait(pending, timeout=_FUTURE_SLICE_S)
            self.client.poll(0)
            self.health.check()
            if pending and monotonic_s() >= deadline:
                raise self.timed_out(what)
