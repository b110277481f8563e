"""`tierlog delete-records`, Kafka's kafka-delete-records.sh for one partition.

``--topic T --partition P --offset O`` moves the partition's log start offset
to O (DeleteRecords, key 21): every record below O is gone for consumers, and
the broker deletes local and remote segments wholly below it. ``--offset -1``
means the high watermark (everything). This is how an operator skips past a
remote segment that ``tierlog remote verify`` reports lost: consumers then start
at O (``auto.offset.reset``) instead of failing on the lost offsets.

Prints ``partition: low watermark N`` (the new log start) or one error line
(exit 1).
"""

from __future__ import annotations

import argparse

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_exception
from tierlog.cli.options import connection_options, non_negative_int
from tierlog.cli.render import add_json_option, print_result

__all__ = ["register"]

_EPILOG = """\
examples:
  tierlog delete-records --topic orders --partition 0 --offset 1200
  tierlog delete-records --topic orders --partition 0 --offset -1     # everything
"""


def _offset(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < -1:
        raise argparse.ArgumentTypeError("must be an offset >= 0, or -1 for the high watermark")
    return value


def run(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    partitions = conn.topic_metadata(args.topic).partitions
    if args.partition not in partitions:
        raise CliError(f"topic {args.topic!r} has no partition {args.partition} (it has {len(partitions)})")
    target = TopicPartition(args.topic, args.partition, args.offset)
    futures = conn.client.delete_records([target], request_timeout=args.timeout)
    conn.wait(futures.values(), "DeleteRecords")
    future = next(iter(futures.values()))
    try:
        deleted = future.result()
    except KafkaException as exc:
        raise CliError(f"{args.topic}-{args.partition}: {describe_exception(exc)}") from None
    print_result(args, f"{args.topic}-{args.partition}: low watermark {deleted.low_watermark}",
                 {"topic": args.topic, "partition": args.partition, "low_watermark": deleted.low_watermark})
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "delete-records", parents=[connection_options()],
        help="move a partition's log start offset (delete the records below it)",
        description="Delete every record of a partition below an offset (like kafka-delete-records.sh): "
                    "its log start offset moves there, locally and in remote storage.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topic", required=True, metavar="NAME", help="the topic")
    parser.add_argument("--partition", required=True, type=non_negative_int, metavar="P", help="the partition")
    parser.add_argument("--offset", required=True, type=_offset, metavar="OFFSET",
                        help="the new log start offset (-1: the high watermark)")
    add_json_option(parser, "{topic, partition, low_watermark}")
    parser.set_defaults(func=run)
