"""`tierlog groups list|describe|delete|reset-offsets`, modelled on kafka-consumer-groups.sh.

Every call goes through confluent-kafka's AdminClient (ListGroups,
DescribeGroups, OffsetFetch, OffsetCommit, DeleteGroups, ListOffsets), with the
coordinator retries of `group_admin`. ``describe`` is `groups_describe`,
``reset-offsets`` is `groups_reset` (planning in `offset_reset_plan`).
"""

from __future__ import annotations

import argparse

from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_kafka_error
from tierlog.cli.group_admin import (
    STATE_NAMES,
    delete_group,
    error_code,
    list_groups,
    state_name,
    type_name,
)
from tierlog.cli.groups_describe import run_describe
from tierlog.cli.groups_reset import add_reset_targets, run_reset_offsets
from tierlog.cli.offset_reset_plan import parse_topic
from tierlog.cli.options import connection_options
from tierlog.cli.render import make_table, note, print_json, print_table

__all__ = ["parse_states", "register"]

_EPILOG = """\
examples:
  tierlog groups list
  tierlog groups list --state Stable,Empty --json
  tierlog groups describe billing                # per partition: offsets, lag, consumer, host, client id
  tierlog groups describe billing --members
  tierlog groups describe billing --state
  tierlog groups reset-offsets --group billing --topic orders --to-earliest            # dry run: prints the plan
  tierlog groups reset-offsets --group billing --topic orders:0,1 --shift-by -100 --execute
  tierlog groups reset-offsets --group billing --all-topics --to-datetime 2024-05-01T00:00:00.000Z --execute
  tierlog groups delete billing
"""

_STATE_BY_NAME = {name.lower(): state for state, name in STATE_NAMES.items() if state != ConsumerGroupState.UNKNOWN}


def parse_states(text: str) -> set[ConsumerGroupState]:
    """``Stable,Empty`` (Kafka's state names, any case) as ConsumerGroupStates."""
    states: set[ConsumerGroupState] = set()
    for name in (n.strip() for n in text.split(",") if n.strip()):
        state = _STATE_BY_NAME.get(name.lower())
        if state is None:
            raise argparse.ArgumentTypeError(
                f"unknown group state {name!r}: expected one of {', '.join(STATE_NAMES[s] for s in _STATE_BY_NAME.values())}")
        states.add(state)
    if not states:
        raise argparse.ArgumentTypeError("expected a comma-separated list of group states")
    return states


def run_list(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    conn.metadata()  # fails fast, and clearly, when the cluster is unreachable
    listed = [{"group": g.group_id, "state": state_name(g.state), "type": type_name(g.type)}
              for g in list_groups(conn, args.state or set())]
    if args.json:
        print_json(listed)
    elif not listed:
        note("no groups")
    else:
        table = make_table("GROUP", "TYPE", "STATE")
        for g in listed:
            table.add_row(g["group"], g["type"], g["state"])
        print_table(table)
    return 0


def _deletion_error(group: str, error: KafkaException) -> str:
    code = error_code(error)
    if code == KafkaError.GROUP_ID_NOT_FOUND:
        return f"group {group!r} does not exist"
    if code == KafkaError.NON_EMPTY_GROUP:
        return f"group {group!r} is not empty: stop its consumers first (NON_EMPTY_GROUP)"
    return f"cannot delete group {group!r}: {describe_kafka_error(error.args[0])}"


def run_delete(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    conn.metadata()  # fails fast, and clearly, when the cluster is unreachable
    failures, deleted = [], []
    for group in dict.fromkeys(args.groups):
        try:
            delete_group(conn, group)
            deleted.append(group)
        except KafkaException as exc:
            failures.append(_deletion_error(group, exc))
    if args.json:
        print_json({"deleted": deleted, "errors": failures})
    else:
        for group in deleted:
            print(f"deleted group {group}")
    for extra in failures[1:]:
        note(f"tierlog: {extra}")
    if failures:
        raise CliError(failures[0])
    return 0


def _add_list(actions, common) -> None:
    parser = actions.add_parser("list", parents=[common], help="list groups with their type and state",
                                description="List the consumer groups of every broker, with type and state.")
    parser.add_argument("--state", type=parse_states, metavar="STATE[,STATE...]",
                        help="only groups in these states (Stable, PreparingRebalance, CompletingRebalance, "
                             "Empty, Dead)")
    parser.add_argument("--json", action="store_true", help="print a JSON array of {group, type, state}")
    parser.set_defaults(func=run_list)


def _add_describe(actions, common) -> None:
    parser = actions.add_parser(
        "describe", parents=[common], help="show a group's offsets, lag and members",
        description="Describe groups: per partition the committed (current) offset, the log end offset, "
                    "the lag and the consumer holding it (member id, host, client id), as "
                    "kafka-consumer-groups --describe does. --members lists the members instead, "
                    "--state the group's coordinator, assignor, state and member count.")
    parser.add_argument("groups", nargs="+", metavar="GROUP", help="groups to describe")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="one row per member, with its partitions")
    view.add_argument("--state", action="store_true", help="one row per group: coordinator, assignor, state")
    parser.add_argument("--json", action="store_true", help="print a JSON array of full descriptions")
    parser.set_defaults(func=run_describe)


def _add_delete(actions, common) -> None:
    parser = actions.add_parser("delete", parents=[common], help="delete groups and their committed offsets",
                                description="Delete groups (DeleteGroups) with their committed offsets. "
                                            "A group with members is refused (NON_EMPTY_GROUP).")
    parser.add_argument("groups", nargs="+", metavar="GROUP", help="groups to delete")
    parser.add_argument("--json", action="store_true", help="print {deleted: [...], errors: [...]}")
    parser.set_defaults(func=run_delete)


def _add_reset(actions, common) -> None:
    parser = actions.add_parser(
        "reset-offsets", parents=[common], help="plan or commit new offsets for a group",
        description="Plan new committed offsets for a group and print them (a dry run, the default); "
                    "--execute commits them, which needs the group to be Empty (no members). "
                    "--to-offset and --shift-by are clamped to each partition's [log start, log end].")
    parser.add_argument("--group", required=True, metavar="GROUP", help="the group whose offsets to reset")
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", type=parse_topic, action="append", metavar="TOPIC[:P,P...]",
                       help="a topic, or some of its partitions; repeatable")
    scope.add_argument("--all-topics", action="store_true",
                       help="every partition the group has a committed offset for")
    add_reset_targets(parser, "the committed offset", "commit the planned offsets")
    parser.set_defaults(func=run_reset_offsets)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "groups", help="list, describe, delete groups; reset their offsets",
        description="Manage consumer groups (like kafka-consumer-groups.sh).", epilog=_EPILOG,
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    common = connection_options()
    for add in (_add_list, _add_describe, _add_delete, _add_reset):
        add(actions, common)
