"""Errors the `tierlog` command reports to its user as one line.

`CliError` is an operating error the user can act on (bad input, a broker that
cannot be reached, a topic that does not exist). `UsageError` is a command
line that does not parse; it exits with status 2 like argparse does.
`describe_exception` turns any handled exception into the one-line message
that `main` prints as ``tierlog: error: <message>``.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

__all__ = ["ERROR_PREFIX", "CliError", "UsageError", "describe_exception", "describe_kafka_error"]

ERROR_PREFIX = "tierlog: error: "      # what starts every error line of the command


class CliError(Exception):
    """An error the user can act on; `main` prints it on one line, exit 1."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(CliError):
    """A command line that does not parse; exit 2 as argparse would."""

    exit_code = 2


def describe_kafka_error(error: KafkaError) -> str:
    """``<librdkafka's text> (<Kafka error name>)`` on one line."""
    text = error.str().strip() or "no details"
    name = error.name()
    if name and name not in text:
        return f"{text} ({name})"
    return text


def describe_exception(exc: BaseException) -> str:
    """The one-line message for a handled exception."""
    if isinstance(exc, CliError):
        return exc.message
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return describe_kafka_error(exc.args[0])
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__
