"""`tierlog groups describe`: a group's partitions, lag and members, like kafka-consumer-groups --describe.

A description is a plain dict, the one ``--json`` prints::

    {"group": "g", "state": "Stable", "type": "classic", "coordinator": 1, "assignor": "range",
     "members": [{"member_id": "c-1f…", "group_instance_id": null, "client_id": "c", "host": "/10.0.0.5",
                  "partitions": [{"topic": "t", "partition": 0}]}],
     "offsets": [{"topic": "t", "partition": 0, "current_offset": 10, "log_end_offset": 12, "lag": 2,
                  "member_id": "c-1f…", "client_id": "c", "host": "/10.0.0.5"}]}

``offsets`` has a row per partition that a member is assigned or that the
group has a committed offset for (Kafka's rows): ``current_offset`` is the
committed offset (null: none), ``log_end_offset`` the partition's (ListOffsets
latest; null when its leader cannot say before --timeout), ``lag`` their
difference (null without either); the
member fields are null for a partition no member holds. A member assigned
nothing gets a row with null topic and partition, as in Kafka's output.

Three table views: offsets (the default), ``--members`` (one row per member,
with its partition count) and ``--state`` (coordinator, assignor, state and
member count). A group that does not exist is an error, as in Kafka's tool.
"""

from __future__ import annotations

import argparse

from confluent_kafka.admin import AdminClient, OffsetSpec

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError
from tierlog.cli.group_admin import (
    committed_offsets,
    describe_group,
    log_offsets,
    state_name,
    type_name,
)
from tierlog.cli.render import make_table, note, print_json, print_table

__all__ = ["describe", "run_describe"]


def _member(m) -> dict:
    partitions = sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else []))
    return {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
            "host": m.host, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}


def _offset_rows(members: list[dict], committed: dict, log_end: dict) -> list[dict]:
    holder = {(p["topic"], p["partition"]): m for m in members for p in m["partitions"]}
    rows = []
    for key in sorted(set(holder) | set(committed)):
        member, current, end = holder.get(key), committed.get(key), log_end.get(key)
        rows.append({"topic": key[0], "partition": key[1], "current_offset": current, "log_end_offset": end,
                     "lag": None if current is None or end is None else max(0, end - current),
                     **_member_fields(member)})
    rows += [{"topic": None, "partition": None, "current_offset": None, "log_end_offset": None, "lag": None,
              **_member_fields(m)} for m in members if not m["partitions"]]
    return rows


def _member_fields(member: dict | None) -> dict:
    if member is None:
        return {"member_id": None, "client_id": None, "host": None}
    return {"member_id": member["member_id"], "client_id": member["client_id"], "host": member["host"]}


def describe(conn: Connection, group: str) -> dict | None:
    """The description of one group, None when it does not exist."""
    found = describe_group(conn, group)
    if found is None:
        return None
    members = sorted((_member(m) for m in found.members), key=lambda m: m["member_id"])
    committed = committed_offsets(conn, group)
    partitions = sorted(set(committed) | {(p["topic"], p["partition"]) for m in members for p in m["partitions"]})
    log_end = log_offsets(conn, partitions, OffsetSpec.latest(), strict=False)
    return {"group": group, "state": state_name(found.state), "type": type_name(found.type),
            "coordinator": found.coordinator.id if found.coordinator is not None else None,
            "assignor": found.partition_assignor or None, "members": members,
            "offsets": _offset_rows(members, committed, log_end)}


def _cell(value) -> str:
    return "-" if value is None or value == "" else str(value)


def _show_offsets(d: dict) -> None:
    table = make_table("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                       "CONSUMER-ID", "HOST", "CLIENT-ID")
    for r in d["offsets"]:
        table.add_row(d["group"], *(_cell(r[k]) for k in ("topic", "partition", "current_offset", "log_end_offset",
                                                           "lag", "member_id", "host", "client_id")))
    print_table(table)


def _show_members(d: dict) -> None:
    table = make_table("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                       "ASSIGNMENT")
    for m in d["members"]:
        assignment = ",".join(f"{p['topic']}:{p['partition']}" for p in m["partitions"])
        table.add_row(d["group"], m["member_id"], _cell(m["group_instance_id"]), _cell(m["host"]),
                      _cell(m["client_id"]), str(len(m["partitions"])), _cell(assignment))
    print_table(table)


def _show_state(d: dict) -> None:
    table = make_table("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "TYPE", "#MEMBERS")
    table.add_row(d["group"], _cell(d["coordinator"]), _cell(d["assignor"]), d["state"], d["type"],
                  str(len(d["members"])))
    print_table(table)


def _show(d: dict, args: argparse.Namespace) -> None:
    if args.state:
        _show_state(d)
        return
    if not d["members"]:
        note(f"group {d['group']} has no active members")
    if args.members:
        _show_members(d)
    else:
        _show_offsets(d)


def run_describe(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    conn.metadata()  # fails fast, and clearly, when the cluster is unreachable
    groups = list(dict.fromkeys(args.groups))
    descriptions = [(g, describe(conn, g)) for g in groups]
    missing = [g for g, d in descriptions if d is None]
    if missing:
        names = ", ".join(repr(g) for g in missing)
        raise CliError(f"group {names} does not exist" if len(missing) == 1 else f"groups {names} do not exist")
    described = [d for _, d in descriptions if d is not None]     # all of them: none is missing
    if args.json:
        print_json(described)
        return 0
    for index, d in enumerate(described):
        if index:
            print()
        _show(d, args)
    return 0
