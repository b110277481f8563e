"""`tierlog share-groups list|describe|delete|reset-offsets`, modelled on kafka-share-groups.sh (KIP-932).

librdkafka has no share-group admin APIs, so the group calls are tierlog's own requests
(`share_group_wire`): ListGroups with type ``share`` at every broker; at the group's
coordinator ShareGroupDescribe (members, epochs), DescribeShareGroupOffsets (each
share-partition's start offset: below it every record is acknowledged or archived),
AlterShareGroupOffsets and DeleteGroups.  The logs' start and end offsets (lag, --to-earliest,
--to-latest) come from ListOffsets through confluent-kafka.  ``reset-offsets`` plans as
`groups reset-offsets` does (`offset_reset_plan`; the "current" offset is the share-partition
start offset) and only ``--execute`` alters them, only while the group has no members.
"""

from __future__ import annotations

import argparse

from confluent_kafka.admin import AdminClient, OffsetSpec

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError
from tierlog.cli.group_admin import log_offsets
from tierlog.cli.groups_reset import (
    add_reset_targets,
    partition_offsets,
    selected_partitions,
    show_resets,
    strategy_of,
)
from tierlog.cli.offset_reset_plan import parse_topic, plan
from tierlog.cli.options import connection_options
from tierlog.cli.render import make_table, note, print_json, print_table
from tierlog.cli.share_group_wire import ShareGroupWire
from tierlog.protocol.errors import ErrorCode, error_name

__all__ = ["register"]

_EPILOG = """\
examples:
  tierlog share-groups list
  tierlog share-groups describe workers                # per share-partition: start offset and lag
  tierlog share-groups describe workers --members
  tierlog share-groups describe workers --state
  tierlog share-groups reset-offsets --group workers --topic jobs --to-earliest           # dry run: the plan
  tierlog share-groups reset-offsets --group workers --topic jobs:0 --to-offset 100 --execute
  tierlog share-groups delete workers
"""
STATES = ("Empty", "Stable", "Dead")
NO_STATE = -1


def run_list(args: argparse.Namespace) -> int:
    listed = ShareGroupWire(args).list_groups(args.state or [])
    if args.json:
        print_json(listed)
    elif not listed:
        note("no share groups")
    else:
        table = make_table("GROUP", "STATE")
        for g in listed:
            table.add_row(g["group"], g["state"])
        print_table(table)
    return 0


def _description(wire: ShareGroupWire, conn: Connection, group: str) -> dict:
    described = wire.describe(group)
    if described["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND:
        raise CliError(f"share group {group!r} does not exist")
    if described["ErrorCode"]:
        raise CliError(f"cannot describe share group {group!r}: {error_name(described['ErrorCode'])}")
    offsets = wire.start_offsets(group)
    if offsets["ErrorCode"]:
        raise CliError(f"cannot describe the offsets of {group!r}: {error_name(offsets['ErrorCode'])}")
    starts = {(t["TopicName"], p["PartitionIndex"]): p["StartOffset"] for t in offsets["Topics"]
              for p in t["Partitions"] if not p["ErrorCode"]}
    ends = log_offsets(conn, sorted(starts), OffsetSpec.latest(), strict=False) if starts else {}
    partitions = []
    for (topic, partition), start in sorted(starts.items()):
        end = ends.get((topic, partition))
        lag = None if end is None or start == NO_STATE else max(end - start, 0)
        partitions.append({"topic": topic, "partition": partition, "start_offset": None if start == NO_STATE
                           else start, "log_end_offset": end, "lag": lag})
    members = [{"member_id": m["MemberId"], "client_id": m["ClientId"], "host": m["ClientHost"],
                "member_epoch": m["MemberEpoch"], "subscribed": m["SubscribedTopicNames"],
                "assignment": [f"{t['TopicName']}:{p}" for t in m["Assignment"]["TopicPartitions"]
                               for p in t["Partitions"]]} for m in described["Members"]]
    return {"group": group, "state": described["GroupState"], "group_epoch": described["GroupEpoch"],
            "assignment_epoch": described["AssignmentEpoch"], "assignor": described["AssignorName"],
            "members": members, "partitions": partitions}


def _text(value) -> str:
    return "-" if value is None else str(value)


def _show(d: dict, args: argparse.Namespace) -> None:
    if args.state:
        table = make_table("GROUP", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "ASSIGNOR", "#MEMBERS")
        table.add_row(d["group"], d["state"], str(d["group_epoch"]), str(d["assignment_epoch"]), d["assignor"],
                      str(len(d["members"])))
    elif args.members:
        table = make_table("GROUP", "MEMBER-ID", "CLIENT-ID", "HOST", "MEMBER-EPOCH", "ASSIGNMENT")
        for m in d["members"]:
            table.add_row(d["group"], m["member_id"], m["client_id"], m["host"], str(m["member_epoch"]),
                          ",".join(m["assignment"]) or "-")
    else:
        table = make_table("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")
        for p in d["partitions"]:
            table.add_row(d["group"], p["topic"], str(p["partition"]), _text(p["start_offset"]), _text(p["lag"]))
    print_table(table)


def run_describe(args: argparse.Namespace) -> int:
    wire, conn = ShareGroupWire(args), Connection(AdminClient, args)
    described = [_description(wire, conn, g) for g in dict.fromkeys(args.groups)]
    if args.json:
        print_json(described)
    else:
        for d in described:
            _show(d, args)
    return 0


def run_delete(args: argparse.Namespace) -> int:
    wire, deleted, failures = ShareGroupWire(args), [], []
    for group in dict.fromkeys(args.groups):
        code = wire.delete(group)
        if code == ErrorCode.NONE:
            deleted.append(group)
        elif code == ErrorCode.GROUP_ID_NOT_FOUND:
            failures.append(f"share group {group!r} does not exist")
        elif code == ErrorCode.NON_EMPTY_GROUP:
            failures.append(f"share group {group!r} is not empty: stop its consumers first (NON_EMPTY_GROUP)")
        else:
            failures.append(f"cannot delete share group {group!r}: {error_name(code)}")
    if args.json:
        print_json({"deleted": deleted, "errors": failures})
    else:
        for group in deleted:
            print(f"deleted share group {group}")
    for extra in failures[1:]:
        note(f"tierlog: {extra}")
    if failures:
        raise CliError(failures[0])
    return 0


def run_reset_offsets(args: argparse.Namespace) -> int:
    wire, conn = ShareGroupWire(args), Connection(AdminClient, args)
    described = wire.describe(args.group)
    exists = described["ErrorCode"] != ErrorCode.GROUP_ID_NOT_FOUND
    if described["ErrorCode"] and exists:
        raise CliError(f"cannot describe share group {args.group!r}: {error_name(described['ErrorCode'])}")
    members = len(described.get("Members", [])) if exists else 0
    offsets = wire.start_offsets(args.group) if exists else {"Topics": []}
    current = {(t["TopicName"], p["PartitionIndex"]): p["StartOffset"] for t in offsets["Topics"]
               for p in t["Partitions"] if not p["ErrorCode"] and p["StartOffset"] != NO_STATE}
    if args.all_topics:
        partitions = sorted({(t["TopicName"], p["PartitionIndex"]) for t in offsets["Topics"] for p in t["Partitions"]})
        if not partitions:
            raise CliError(f"share group {args.group!r} has no share-partitions: name them with --topic")
    else:
        partitions = selected_partitions(conn, args.topic)
    if args.execute and members:
        raise CliError(f"offsets of share group {args.group!r} can only be reset while it has no members, "
                       f"but it has {members}")
    strategy = strategy_of(args)
    try:
        resets = plan(strategy, partition_offsets(conn, partitions, current, strategy))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.execute and resets:
        _alter(wire, args.group, {(r.topic, r.partition): r.new_offset for r in resets})
    if args.json:
        print_json({"group": args.group, "executed": bool(args.execute), "partitions": [r.as_json() for r in resets]})
    else:
        show_resets(args.group, resets, "START-OFFSET")
    if not args.execute:
        why = f" (and would be refused: the group has {members} member(s))" if members else ""
        note(f"dry run: no offset changed; add --execute to set these start offsets{why}")
    return 0


def _alter(wire: ShareGroupWire, group: str, offsets: dict[tuple[str, int], int]) -> None:
    resp = wire.alter(group, offsets)
    if resp["ErrorCode"]:
        raise CliError(f"cannot reset the offsets of share group {group!r}: {error_name(resp['ErrorCode'])}")
    failed = [(t["TopicName"], p["PartitionIndex"], p["ErrorCode"]) for t in resp["Responses"]
              for p in t["Partitions"] if p["ErrorCode"]]
    if failed:
        topic, partition, code = failed[0]
        raise CliError(f"cannot reset {topic}:{partition} of share group {group!r}: {error_name(code)}")


def _add_list(actions, common) -> None:
    parser = actions.add_parser("list", parents=[common], help="list share groups with their state",
                                description="List the share groups of every broker, with their state.")
    parser.add_argument("--state", type=_states, metavar="STATE[,STATE...]", help="only groups in these states "
                        "(Empty, Stable)")
    parser.add_argument("--json", action="store_true", help="print a JSON array of {group, state}")
    parser.set_defaults(func=run_list)


def _states(text: str) -> list[str]:
    by_name = {s.lower(): s for s in STATES}
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n.lower() not in by_name]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown share group state {unknown[0] if unknown else text!r}: "
                                         f"expected one of {', '.join(STATES)}")
    return [by_name[n.lower()] for n in names]


def _add_describe(actions, common) -> None:
    parser = actions.add_parser(
        "describe", parents=[common], help="show a share group's start offsets, lag and members",
        description="Describe share groups: per share-partition its start offset (every record below it is "
                    "acknowledged or archived; - when it has no state yet) and the lag to the log end, as "
                    "kafka-share-groups --describe does. --members lists the members, --state the group's "
                    "state, epochs and assignor.")
    parser.add_argument("groups", nargs="+", metavar="GROUP", help="share groups to describe")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="one row per member, with its partitions")
    view.add_argument("--state", action="store_true", help="one row per group: state, epochs, assignor")
    parser.add_argument("--json", action="store_true", help="print a JSON array of full descriptions")
    parser.set_defaults(func=run_describe)


def _add_delete(actions, common) -> None:
    parser = actions.add_parser("delete", parents=[common], help="delete share groups and their state",
                                description="Delete share groups (DeleteGroups) with their share-partitions' "
                                            "state. A group with members is refused (NON_EMPTY_GROUP).")
    parser.add_argument("groups", nargs="+", metavar="GROUP", help="share groups to delete")
    parser.add_argument("--json", action="store_true", help="print {deleted: [...], errors: [...]}")
    parser.set_defaults(func=run_delete)


def _add_reset(actions, common) -> None:
    parser = actions.add_parser(
        "reset-offsets", parents=[common], help="plan or set a share group's start offsets",
        description="Plan new share-partition start offsets for a share group and print them (a dry run, "
                    "the default); --execute sets them (AlterShareGroupOffsets), which needs the group to "
                    "have no members. --to-offset and --shift-by are clamped to each partition's log.")
    parser.add_argument("--group", required=True, metavar="GROUP", help="the share group")
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", type=parse_topic, action="append", metavar="TOPIC[:P,P...]",
                       help="a topic, or some of its partitions; repeatable")
    scope.add_argument("--all-topics", action="store_true", help="every share-partition the group has")
    add_reset_targets(parser, "the start offset", "set the planned start offsets")
    parser.set_defaults(func=run_reset_offsets)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "share-groups", help="list, describe, delete share groups; reset their start offsets",
        description="Manage share groups, KIP-932 (like kafka-share-groups.sh).", epilog=_EPILOG)
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    common = connection_options()
    for add in (_add_list, _add_describe, _add_delete, _add_reset):
        add(actions, common)
