"""`tierlog consume --share-group G`: print a topic's records as a member of share group G (KIP-932).

The member shares the topic's partitions record by record with the group's other members (a share
group, not a consumer group: no partition is anyone's alone); each record printed is acknowledged
(accepted), so the group never delivers it again.  Records a batch held beyond ``--max-messages``
are released unprinted, so another member gets them at once.  It starts where the group is (a new
group: at the group's share.auto.offset.reset, latest unless set): ``--from``, ``--partition`` and
``--isolation-level`` are the group's business and refused here.  Stops like ``tierlog consume``
(``--max-messages``, ``--timeout-ms`` of no records, Ctrl-C); closing sends the last
acknowledgements and leaves the group.
"""
from __future__ import annotations

import argparse
import sys

from confluent_kafka import AcknowledgeType, ShareConsumer

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_kafka_error
from tierlog.cli.record_format import formatter
from tierlog.cli.render import note
from tierlog.cli.start_position import StartPosition
from tierlog.clock import monotonic_s

__all__ = ["run_share_group"]

_POLL_S = 0.2


def run_share_group(args: argparse.Namespace) -> int:
    if args.partition is not None or args.start != StartPosition("earliest") \
            or args.isolation_level != "read_uncommitted" or args.group is not None:
        raise CliError("--share-group reads where the share group is: --from, --partition, --isolation-level "
                       "and --group are not allowed with it (set the group's share.auto.offset.reset or "
                       "share.isolation.level with `tierlog configs`)")
    conn = Connection(ShareConsumer, args, **{"group.id": args.share_group,
                                              "share.acknowledgement.mode": "explicit"})
    try:
        conn.client.subscribe([args.topic])
        printed = _print_and_accept(conn, args)
    finally:
        conn.client.close()             # sends the last acknowledgements and leaves the group
    note(f"consumed {printed} records")
    return 0


def _print_and_accept(conn: Connection, args: argparse.Namespace) -> int:
    line_of = formatter(args.format, args.layout)
    out = sys.stdout.buffer
    printed, idle_since = 0, monotonic_s()
    idle_limit_s = None if args.timeout_ms is None else args.timeout_ms / 1000
    while args.max_messages is None or printed < args.max_messages:
        batch = conn.client.poll(_POLL_S)
        conn.health.check()
        for m in batch:
            if m.error() is not None:
                raise CliError(f"partition {m.partition()}: {describe_kafka_error(m.error())}")
        room = len(batch) if args.max_messages is None else args.max_messages - printed
        shown, spare = batch[:room], batch[room:]
        if shown:
            out.write(b"".join(line_of(m) + b"\n" for m in shown))
            out.flush()
            printed += len(shown)
            idle_since = monotonic_s()
        for m in shown:
            conn.client.acknowledge(m, AcknowledgeType.ACCEPT)
        for m in spare:
            conn.client.acknowledge(m, AcknowledgeType.RELEASE)     # not printed: back to the group
        if batch:
            conn.client.commit_sync()
        elif idle_limit_s is not None and monotonic_s() - idle_since >= idle_limit_s:
            break
    return printed
