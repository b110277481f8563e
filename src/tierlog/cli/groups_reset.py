"""`tierlog groups reset-offsets`: plan new committed offsets for a group, and commit them on --execute.

Steps: describe the group (a group that does not exist yet may be given
offsets, as with Kafka's tool); resolve the partitions (``--topic T`` is all of
T's partitions from metadata, ``--topic T:P,...`` those, ``--all-topics`` every
partition the group has a committed offset for); read the committed offsets
and each partition's log start and end (and, for --to-datetime, the offset
for the timestamp) with ListOffsets; plan (`offset_reset_plan`); print the
plan. Only ``--execute`` commits it, and only while the group is Empty (or
does not exist): a group with members would overwrite the offsets, so Kafka
refuses and so does this. A dry run of a group with members prints the plan
with a note that --execute would be refused.

``--json`` prints ``{"group", "state", "executed", "partitions": [Reset.as_json()]}``.
"""

from __future__ import annotations

import argparse

from confluent_kafka.admin import AdminClient, OffsetSpec

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError
from tierlog.cli.group_admin import (
    alter_offsets,
    committed_offsets,
    describe_group,
    log_offsets,
    state_name,
)
from tierlog.cli.offset_reset_plan import (
    TO_DATETIME,
    PartitionOffsets,
    Reset,
    Strategy,
    TopicSelection,
    parse_datetime_ms,
    plan,
)
from tierlog.cli.render import make_table, note, print_json, print_table

__all__ = ["add_reset_targets", "partition_offsets", "run_reset_offsets", "selected_partitions", "show_resets",
           "strategy_of"]

_INACTIVE = frozenset({"Empty", "Dead"})


def add_reset_targets(parser: argparse.ArgumentParser, current: str, execute_help: str) -> None:
    """The reset targets (one required), --dry-run / --execute and --json of a reset-offsets action;
    ``current`` names the offset --shift-by moves from."""
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="each partition's log start offset")
    target.add_argument("--to-latest", action="store_true", help="each partition's log end offset")
    target.add_argument("--to-offset", type=int, metavar="N", help="offset N (clamped to the log)")
    target.add_argument("--to-datetime", type=parse_datetime_ms, metavar="DATETIME",
                        help="the first offset at or after this ISO-8601 time, YYYY-MM-DDTHH:mm:SS.sss"
                             " with an optional Z or +hh:mm (local time without one)")
    target.add_argument("--shift-by", type=int, metavar="N", help=f"{current} plus N (may be negative)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    mode.add_argument("--execute", action="store_true", help=execute_help)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def strategy_of(args: argparse.Namespace) -> Strategy:
    """The one reset target the command line names (argparse makes them exclusive and required)."""
    if args.to_earliest:
        return Strategy("to-earliest")
    if args.to_latest:
        return Strategy("to-latest")
    if args.to_offset is not None:
        return Strategy("to-offset", args.to_offset)
    if args.shift_by is not None:
        return Strategy("shift-by", args.shift_by)
    return Strategy(TO_DATETIME, args.to_datetime)


def selected_partitions(conn: Connection, selections: list[TopicSelection]) -> list[tuple[str, int]]:
    """The partitions ``--topic T`` / ``--topic T:P,...`` name (a CliError for one that is not there)."""
    partitions: dict[tuple[str, int], None] = {}
    for selection in selections:
        existing = sorted(conn.topic_metadata(selection.topic).partitions)
        wanted = existing if selection.partitions is None else list(selection.partitions)
        unknown = [p for p in wanted if p not in existing]
        if unknown:
            raise CliError(f"topic {selection.topic!r} has no partition {unknown[0]} "
                           f"(it has {len(existing)} partitions)")
        partitions.update(dict.fromkeys((selection.topic, p) for p in wanted))
    return list(partitions)


def _partitions(conn: Connection, args: argparse.Namespace) -> tuple[list[tuple[str, int]], dict]:
    """The partitions to reset and the group's committed offsets."""
    if args.all_topics:
        committed = committed_offsets(conn, args.group)
        if not committed:
            raise CliError(f"group {args.group!r} has no committed offsets: name the partitions with --topic")
        return sorted(committed), committed
    partitions = selected_partitions(conn, args.topic)
    return partitions, committed_offsets(conn, args.group)


def _known(conn: Connection, args: argparse.Namespace, strategy: Strategy) -> list[PartitionOffsets]:
    partitions, committed = _partitions(conn, args)
    return partition_offsets(conn, partitions, committed, strategy)


def partition_offsets(conn: Connection, partitions: list[tuple[str, int]], current: dict[tuple[str, int], int],
                      strategy: Strategy) -> list[PartitionOffsets]:
    """What planning needs of ``partitions``: the current offsets given, the logs' start and end
    (and the offsets at --to-datetime's time) from ListOffsets."""
    start = log_offsets(conn, partitions, OffsetSpec.earliest())
    end = log_offsets(conn, partitions, OffsetSpec.latest())
    at = (log_offsets(conn, partitions, OffsetSpec.for_timestamp(strategy.value))
          if strategy.kind == TO_DATETIME else {})
    return [PartitionOffsets(t, p, current.get((t, p)), start[(t, p)], end[(t, p)], at.get((t, p)))
            for t, p in partitions]


def show_resets(group: str, resets: list[Reset], current: str = "CURRENT-OFFSET") -> None:
    table = make_table("GROUP", "TOPIC", "PARTITION", current, "NEW-OFFSET")
    for r in resets:
        current = "-" if r.current_offset is None else str(r.current_offset)
        table.add_row(group, r.topic, str(r.partition), current, str(r.new_offset))
    print_table(table)


def run_reset_offsets(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    conn.metadata()  # fails fast, and clearly, when the cluster is unreachable
    strategy = strategy_of(args)
    found = describe_group(conn, args.group)
    state = "Dead" if found is None else state_name(found.state)
    if args.execute and state not in _INACTIVE:
        raise CliError(f"offsets of group {args.group!r} can only be reset while it is inactive (Empty), "
                       f"but it is {state} with {len(found.members)} member(s)")
    try:
        resets = plan(strategy, _known(conn, args, strategy))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.execute and resets:
        alter_offsets(conn, args.group, {(r.topic, r.partition): r.new_offset for r in resets})
    if args.json:
        print_json({"group": args.group, "state": state, "executed": bool(args.execute),
                    "partitions": [r.as_json() for r in resets]})
    else:
        show_resets(args.group, resets)
    if not args.execute:
        why = "" if state in _INACTIVE else f" (and would be refused: the group is {state}, not Empty)"
        note(f"dry run: no offset changed; add --execute to commit these offsets{why}")
    return 0
