"""Options shared by the client commands, and their value parsers.

Every client command takes the connection options below (they sit on each
subcommand, so they can be written after it, as with Kafka's tools):

``--bootstrap-server HOST:PORT``
    Default: the ``TIERLOG_BOOTSTRAP`` environment variable, else 127.0.0.1:9092.
``--command-config KEY=VALUE | FILE``
    Client settings, repeatable. A value without ``=`` names a Java
    properties file (read as ``server.properties`` is), the form Kafka's
    ``--command-config`` takes. ``security.protocol=SSL`` with Kafka's client
    ``ssl.*`` names (``ssl.truststore.location``, ``ssl.keystore.location``, types
    PEM or PKCS12) or librdkafka's (``ssl.ca.location``, ...) connects over TLS,
    librdkafka's clients and tierlog's own connection alike; other keys are
    librdkafka settings.
``--timeout SECONDS``
    Upper bound on any wait for the cluster.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tierlog.config import ConfigError, parse_properties

__all__ = [
    "BOOTSTRAP_ENV",
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_TIMEOUT_S",
    "add_command_config",
    "connection_options",
    "key_value",
    "non_negative_int",
    "positive_float",
    "positive_int",
]

BOOTSTRAP_ENV = "TIERLOG_BOOTSTRAP"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_TIMEOUT_S = 15.0


def key_value(text: str) -> tuple[str, str]:
    """Parse ``KEY=VALUE`` (the value may be empty or contain ``=``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _properties_pairs(path: Path) -> list[tuple[str, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return list(parse_properties(text).items())
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(f"{path}: {exc}") from None


def _command_config(text: str) -> list[tuple[str, str]]:
    """``KEY=VALUE`` or the path of a properties file, as a list of pairs."""
    if "=" in text:
        return [key_value(text)]
    return _properties_pairs(Path(text))


def positive_int(text: str) -> int:
    value = _int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def add_command_config(group) -> None:
    """``--command-config`` on a parser or argument group (every command that connects has it)."""
    group.add_argument(
        "--command-config",
        metavar="KEY=VALUE|FILE",
        action="extend",
        type=_command_config,
        default=[],
        help="client setting or properties file (Kafka's client names: security.protocol, ssl.*, sasl.*; "
             "or librdkafka's); repeatable",
    )


def connection_options() -> argparse.ArgumentParser:
    """A parent parser holding the options every client command shares."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("connection options")
    group.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        default=os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP,
        help=f"broker to connect to (env {BOOTSTRAP_ENV})",
    )
    add_command_config(group)
    group.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=positive_float,
        default=DEFAULT_TIMEOUT_S,
        help="give up waiting for the cluster after this long",
    )
    return parent
