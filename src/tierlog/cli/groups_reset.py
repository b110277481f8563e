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
    plan,
)
from tierlog.cli.render import make_table, note, print_json, print_table

__all__ = ["run_reset_offsets", "strategy_of"]

_INACTIVE = frozenset({"Empty", "Dead"})


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


def _selected(conn: Connection, selections: list[TopicSelection]) -> list[tuple[str, int]]:
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
    partitions = _selected(conn, args.topic)
    return partitions, committed_offsets(conn, args.group)


def _known(conn: Connection, args: argparse.Namespace, strategy: Strategy) -> list[PartitionOffsets]:
    partitions, committed = _partitions(conn, args)
    start = log_offsets(conn, partitions, OffsetSpec.earliest())
    end = log_offsets(conn, partitions, OffsetSpec.latest())
    at = (log_offsets(conn, partitions, OffsetSpec.for_timestamp(strategy.value))
          if strategy.kind == TO_DATETIME else {})
    return [PartitionOffsets(t, p, committed.get((t, p)), start[(t, p)], end[(t, p)], at.get((t, p)))
            for t, p in partitions]


def _show(group: str, resets: list[Reset]) -> None:
    table = make_table("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET")
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
        _show(args.group, resets)
    if not args.execute:
        why = "" if state in _INACTIVE else f" (and would be refused: the group is {state}, not Empty)"
        note(f"dry run: no offset changed; add --execute to commit these offsets{why}")
    return 0
