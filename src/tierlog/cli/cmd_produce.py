"""`tierlog produce`: one record per input line, like kafka-console-producer.

Lines are bytes, passed through as they are, less the line ending (``\\n`` or
``\\r\\n``). With ``--key-separator SEP`` each line is ``KEY SEP VALUE``, split
at the first SEP; a line without SEP is an error. ``--header`` and
``--timestamp`` apply to every record. The topic must exist: unlike the
console producer, this command never creates one by accident.
kafka-console-producer's ``--topic`` and ``--property parse.key=true`` (with
``key.separator``, a tab by default) work too (`tierlog.cli.console_compat`).

Prints ``produced N records`` on stderr once every record is acknowledged
(``--json``: one JSON document on stdout with, per partition, the records and
the first and last offsets they got; null offsets with ``--acks 0``); exits 1
with the first delivery error if any record failed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import BinaryIO

from confluent_kafka import KafkaError, Producer

from tierlog.cli.connection import Connection
from tierlog.cli.console_compat import add_producer_properties, add_topic
from tierlog.cli.errors import CliError, describe_kafka_error
from tierlog.cli.options import (
    connection_options,
    key_value,
    non_negative_int,
    positive_int,
)
from tierlog.cli.producing import drain, send
from tierlog.cli.render import add_json_option, note, print_json

__all__ = ["ACKS", "COMPRESSIONS", "register"]

ACKS = ("all", "1", "0")
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
_POLL_EVERY = 1000  # serve delivery reports every this many records
_DRAIN_GRACE_S = 5.0  # on top of message.timeout.ms, for the last reports to arrive

_EPILOG = """\
examples:
  echo hello | tierlog produce greetings
  tierlog produce orders --file orders.txt --key-separator : --header source=import
  tierlog produce --topic orders --property parse.key=true --property key.separator=:
"""


class _BadLine(CliError):
    """An input line that cannot become a record."""


class _Tally:
    """Delivery callback: counts sent and acknowledged records, keeps the first error and,
    per partition, the records acknowledged and the lowest and highest offsets they got."""

    def __init__(self) -> None:
        self.sent = 0
        self.delivered = 0
        self.failed = 0
        self.first_error: KafkaError | None = None
        self.partitions: dict[int, list] = {}      # partition -> [records, first offset, last offset]

    def __call__(self, error: KafkaError | None, message) -> None:
        if error is None:
            self.delivered += 1
            self._acknowledged(message.partition(), message.offset())
            return
        self.failed += 1
        if self.first_error is None:
            self.first_error = error


    def _acknowledged(self, partition: int, offset: int | None) -> None:
        entry = self.partitions.setdefault(partition, [0, None, None])
        entry[0] += 1
        if offset is not None and offset >= 0:      # no offset with acks=0
            entry[1] = offset if entry[1] is None else min(entry[1], offset)
            entry[2] = offset if entry[2] is None else max(entry[2], offset)

    def document(self, topic: str) -> dict:
        return {"topic": topic, "records": self.delivered,
                "partitions": [{"partition": p, "records": n, "first_offset": first, "last_offset": last}
                               for p, (n, first, last) in sorted(self.partitions.items())]}


def _record(line: bytes, number: int, args: argparse.Namespace, headers: list) -> dict:
    value = line.removesuffix(b"\n").removesuffix(b"\r")
    record: dict = {"value": value, "headers": headers or None, "timestamp": args.timestamp or 0}
    if args.partition is not None:
        record["partition"] = args.partition
    if args.key_separator is not None:
        key, sep, rest = value.partition(args.key_separator.encode())
        if not sep:
            raise _BadLine(f"line {number}: no key separator {args.key_separator!r}")
        record["key"], record["value"] = key, rest
    return record


def _produce_lines(conn: Connection, args: argparse.Namespace, lines: BinaryIO, tally: _Tally) -> None:
    headers = [(k, v.encode()) for k, v in args.header]
    for number, line in enumerate(lines, start=1):
        send(conn, args.topic, on_delivery=tally, **_record(line, number, args, headers))
        tally.sent += 1
        if tally.sent % _POLL_EVERY == 0:
            conn.client.poll(0)
            conn.health.check()


def _check_partition(conn: Connection, args: argparse.Namespace) -> None:
    partitions = conn.topic_metadata(args.topic).partitions
    if args.partition is not None and args.partition not in partitions:
        raise CliError(f"topic {args.topic!r} has no partition {args.partition} "
                       f"(it has {len(partitions)})")


def _finish(conn: Connection, tally: _Tally) -> None:
    pending = drain(conn, conn.deadline() + _DRAIN_GRACE_S)
    if tally.first_error is not None:
        raise CliError(f"{tally.failed} of {tally.sent} records not produced: "
                       f"{describe_kafka_error(tally.first_error)}")
    if pending:
        raise conn.timed_out(f"acknowledgement of {pending} of {tally.sent} records")


def _open_input(path: str | None) -> contextlib.AbstractContextManager[BinaryIO]:
    if path is None or path == "-":
        return contextlib.nullcontext(sys.stdin.buffer)
    return open(path, "rb")


def run(args: argparse.Namespace) -> int:
    conn = Connection(
        Producer, args,
        **{"acks": args.acks, "compression.type": args.compression,
           "message.timeout.ms": max(1000, int(args.timeout * 1000))},
    )
    _check_partition(conn, args)
    tally = _Tally()
    with _open_input(args.file) as lines:
        try:
            _produce_lines(conn, args, lines, tally)
        except _BadLine as exc:
            _finish(conn, tally)
            raise CliError(f"{exc.message}; {tally.delivered} records before it were produced") from None
    _finish(conn, tally)
    if args.json:
        print_json(tally.document(args.topic))
    else:
        note(f"produced {tally.delivered} records")
    return 0


def _separator(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "produce", parents=[connection_options()],
        help="write records to a topic, one per input line",
        description="Produce one record per line of a file or stdin.", epilog=_EPILOG,
    )
    add_topic(parser, "an existing topic")
    parser.add_argument("--file", metavar="PATH", help="read lines from PATH instead of stdin")
    parser.add_argument("--key-separator", type=_separator, metavar="SEP", help="split each line into KEY SEP VALUE")
    parser.add_argument("--header", type=key_value, action="append", default=[], metavar="K=V",
                        help="add this header to every record; repeatable")
    parser.add_argument("--partition", type=non_negative_int, metavar="N",
                        help="write to this partition (default: the partitioner's choice)")
    parser.add_argument("--acks", choices=ACKS, default="all", help="acknowledgements to wait for")
    parser.add_argument("--compression", choices=COMPRESSIONS, default="none",
                        help="batch compression codec")
    parser.add_argument("--timestamp", type=positive_int, metavar="MS",
                        help="record timestamp, ms since the epoch (default: now)")
    add_producer_properties(parser)
    add_json_option(parser, "{topic, records, partitions: [{partition, records, first_offset, last_offset}]}")
    parser.set_defaults(func=run)
