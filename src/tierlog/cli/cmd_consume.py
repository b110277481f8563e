"""`tierlog consume`: print a topic's records, like kafka-console-consumer.

Without ``--group`` the consumer assign()s partitions itself: no consumer group
is joined and no offset is committed (librdkafka insists on a group.id, so a
fixed one is set and never used).  With ``--group G`` it subscribes as a member
of group G (the classic protocol): the group's other members share the
partitions, it starts where the group's committed offsets are (``--from
earliest|latest`` only decides where a partition without one starts; an
offset, a timestamp or ``--partition`` are refused), and the offset of every
record once printed is committed (in the background and on exit), so a
restarted member goes on after the last record it printed (``--share-group G``: a member of
share group G, acknowledging each record printed: `tierlog.cli.share_consume`); ``--timeout-ms``
counts from its latest assignment (a member assigned nothing within
``--timeout`` is an error).  Runs until ``--max-messages`` records were printed, until
no record arrived for ``--timeout-ms``, or until Ctrl-C. Record formats are
described in `tierlog.cli.record_format`. Prints ``consumed N records`` on
stderr at the end. An offset outside the log is an error, not a silent
jump (``auto.offset.reset=error``). kafka-console-consumer's ``--topic``,
``--from-beginning`` and ``--property print.key=true``-style options work too
(`tierlog.cli.console_compat`). ``--isolation-level read_committed`` (kafka-console-consumer's
option) reads only up to each partition's last stable offset and leaves out the records of
aborted transactions; read_uncommitted, the default, reads every record up to the high watermark.
Transaction markers are never printed.
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import Consumer, KafkaError

from tierlog.cli.connection import Connection
from tierlog.cli.console_compat import (
    add_consumer_properties,
    add_from_beginning,
    add_topic,
)
from tierlog.cli.errors import CliError, describe_kafka_error
from tierlog.cli.options import connection_options, non_negative_int, positive_int
from tierlog.cli.record_format import FORMATS, formatter
from tierlog.cli.render import note
from tierlog.cli.share_consume import run_share_group
from tierlog.cli.start_position import StartPosition, assignments, start_position
from tierlog.clock import monotonic_s

__all__ = ["CONSUMER_SETTINGS", "register"]

CONSUMER_SETTINGS = {
    "group.id": "tierlog-cli",  # required by librdkafka; unused with assign()
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": False,
    "allow.auto.create.topics": False,
}
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")      # Kafka's isolation.level values
_BATCH_MAX = 500
_POLL_S = 0.1

_EPILOG = """\
examples:
  tierlog consume greetings --timeout-ms 2000
  tierlog consume orders --from @1700000000000 --format json --max-messages 10
  tierlog consume orders --partition 2 --from 1000 --format kv --print-headers
  tierlog consume orders --group billing --timeout-ms 5000
  tierlog consume jobs --share-group workers --max-messages 10
  tierlog consume payments --isolation-level read_committed --timeout-ms 2000
  tierlog consume --topic orders --from-beginning --property print.key=true --property print.offset=true
"""


def _wanted(args: argparse.Namespace, printed: int) -> int:
    if args.max_messages is None:
        return _BATCH_MAX
    return min(_BATCH_MAX, args.max_messages - printed)


def _check(message) -> bool:
    """True for a record; raises for an error other than end-of-partition."""
    error = message.error()
    if error is None:
        return True
    if error.code() == KafkaError._PARTITION_EOF:
        return False
    raise CliError(f"partition {message.partition()}: {describe_kafka_error(error)}")


def _print_records(conn: Connection, args: argparse.Namespace, idle_from=None) -> int:
    """``idle_from()``: when the idle time started, if later than the last record (a group's assignment)."""
    line_of = formatter(args.format, args.layout)
    out = sys.stdout.buffer
    printed, idle_since = 0, monotonic_s()
    group = args.group is not None
    idle_limit_s = None if args.timeout_ms is None else args.timeout_ms / 1000
    while args.max_messages is None or printed < args.max_messages:
        batch = conn.client.consume(num_messages=_wanted(args, printed), timeout=_POLL_S)
        conn.health.check()
        records = [m for m in batch if _check(m)]
        if records:
            out.write(b"".join(line_of(m) + b"\n" for m in records))
            out.flush()
            if group:
                for m in records:
                    conn.client.store_offsets(message=m)      # committed once printed
            printed += len(records)
            idle_since = monotonic_s()
        elif idle_limit_s is not None:
            since = max(idle_since, idle_from()) if idle_from is not None else idle_since
            if monotonic_s() - since >= idle_limit_s:
                break
    return printed


def run(args: argparse.Namespace) -> int:
    if args.share_group is not None:
        return run_share_group(args)
    if args.group is not None:
        return _run_in_group(args)
    settings = dict(CONSUMER_SETTINGS, **{"auto.offset.reset": "error", "isolation.level": args.isolation_level})
    conn = Connection(Consumer, args, **settings)
    try:
        conn.client.assign(assignments(conn, args.topic, args.partition, args.start))
        printed = _print_records(conn, args)
    finally:
        conn.client.close()
    note(f"consumed {printed} records")
    return 0


def _run_in_group(args: argparse.Namespace) -> int:
    if args.partition is not None or args.start.kind not in ("earliest", "latest"):
        raise CliError("--group starts at the group's committed offsets: --from takes only earliest or latest "
                       "there (for partitions without one), and --partition is not allowed")
    settings = dict(CONSUMER_SETTINGS, **{"group.id": args.group, "enable.auto.commit": True,
                                          "auto.offset.reset": args.start.kind,
                                          "isolation.level": args.isolation_level})
    conn = Connection(Consumer, args, **settings)
    started, assigned = monotonic_s(), [None]

    def on_assign(consumer, partitions):
        assigned[0] = monotonic_s()

    def idle_from() -> float:
        """The idle time counts from the latest assignment: joining the group takes a while."""
        if assigned[0] is not None:
            return assigned[0]
        if monotonic_s() - started > args.timeout:
            raise CliError(f"group {args.group} assigned this member nothing within {args.timeout:g}s")
        return monotonic_s()

    try:
        conn.client.subscribe([args.topic], on_assign=on_assign)
        printed = _print_records(conn, args, idle_from)
    finally:
        conn.client.close()             # commits the stored offsets and leaves the group
    note(f"consumed {printed} records")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "consume", parents=[connection_options()],
        help="print a topic's records, one per line",
        description="Print records of a topic, one per line (as a group member with --group).",
        epilog=_EPILOG,
    )
    add_topic(parser, "topic to read")
    parser.add_argument("--from", dest="start", type=start_position, default=StartPosition("earliest"),
                        metavar="earliest|latest|OFFSET|@TIMESTAMP_MS",
                        help="where to start in each partition")
    add_from_beginning(parser, StartPosition("earliest"))
    parser.add_argument("--partition", type=non_negative_int, metavar="N",
                        help="read only this partition (default: all)")
    parser.add_argument("--max-messages", type=positive_int, metavar="N",
                        help="stop after N records")
    parser.add_argument("--timeout-ms", type=positive_int, metavar="N",
                        help="stop when no record arrived for N ms (default: run until Ctrl-C)")
    parser.add_argument("--format", choices=FORMATS, default="value",
                        help="value, kv (KEY<TAB>VALUE) or json (one object per line)")
    parser.add_argument("--print-headers", action="store_true",
                        help="start value/kv lines with h1:v1,h2:v2<TAB>")
    parser.add_argument("--group", metavar="GROUP",
                        help="consume as a member of this consumer group, committing what was printed")
    parser.add_argument("--share-group", metavar="GROUP",
                        help="consume as a member of this share group (KIP-932), acknowledging each record "
                             "printed")
    parser.add_argument("--isolation-level", choices=ISOLATION_LEVELS, default="read_uncommitted",
                        help="read_committed: only committed transactions' records, up to the last stable "
                             "offset; read_uncommitted (default): every record up to the high watermark")
    add_consumer_properties(parser)
    parser.set_defaults(func=run)
