"""`tierlog reassign`, modelled on kafka-reassign-partitions.sh (KIP-455).

Modes (one per run):

``--generate --topics-to-move-json-file F --broker-list 1,2,3``
    Prints the current assignment of those topics and a proposed one over the
    listed brokers (rack-aware striping, each topic keeping its replication
    factor).  Nothing is changed.
``--execute --reassignment-json-file F [--additional] [--disallow-replication-factor-change]``
    Prints the current assignment of the plan's partitions (save it: it is
    the rollback plan), then submits the plan (AlterPartitionReassignments).
    While any reassignment is in progress it refuses, unless ``--additional``
    (as Kafka's tool); a new target for a moving partition replaces its
    ongoing reassignment.
    A partition of the plan that does not exist is refused before anything is
    submitted; the controller refuses unregistered brokers per partition.
    A plan's ``log_dirs`` (one per replica: ``"any"`` or an absolute log dir
    path) then moves those replicas between their broker's log dirs
    (AlterReplicaLogDirs to each broker concerned; ``reassign_log_dirs``).
``--verify --reassignment-json-file F``
    Per partition: complete, still in progress, or failed (no reassignment
    in progress and the replicas differ from the plan); per replica of
    ``log_dirs``: complete (in that dir), still in progress (its future log is
    there, catching up) or failed.
``--cancel --reassignment-json-file F``
    Cancels the plan's ongoing reassignments: each goes back to its original
    replicas.  Partitions without one are reported, not an error.  A replica of
    the plan's ``log_dirs`` still moving stays in its current dir (its future
    log is deleted).
``--list``
    Every ongoing reassignment: replicas, adding and removing brokers.

Exit status: 0 on success (``--verify``: every partition complete); 1 with one
``tierlog: error:`` line on any error, a refused partition or (``--verify``) a
failed partition; 3 from ``--verify`` while some reassignment is still in
progress and none failed, so a script can wait with
``while tierlog reassign --verify ...; [ $? -eq 3 ]; do sleep 5; done``.

``--json`` prints each mode's result as one JSON document instead (plans in the
tool's own JSON form): ``--generate`` ``{current, proposed}``; ``--execute``
``{current, started, refused, log_dirs_refused}`` (``current`` is the rollback plan);
``--verify`` ``{partitions: [{topic, partition, status, replicas, target}], log_dirs:
[{topic, partition, broker, log_dir, status, current, future}]}``; ``--cancel``
``{cancelled, not_in_progress, refused}``; ``--list`` ``{reassignments: [{topic,
partition, replicas, adding, removing}]}``. Exit statuses are the same.

confluent-kafka offers neither AlterPartitionReassignments (45) nor
ListPartitionReassignments (46), so this command speaks the protocol itself
(`BrokerWire`, plaintext or TLS); brokers forward both to the active controller.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from tierlog.cli import reassign_log_dirs
from tierlog.cli.broker_wire import BrokerWire
from tierlog.cli.errors import CliError, UsageError
from tierlog.cli.options import connection_options
from tierlog.cli.reassign_plan import (
    COMPLETE,
    FAILED,
    IN_PROGRESS,
    Plan,
    broker_list,
    parse_plan_dirs,
    parse_topics,
    plan_document,
    plan_text,
    propose,
    read_json,
    status,
)
from tierlog.cli.render import add_json_option, print_result
from tierlog.controller.placement import UsableBroker
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, error_name

__all__ = ["IN_PROGRESS_EXIT", "register"]

IN_PROGRESS_EXIT = 3

_EPILOG = """\
examples:
  tierlog reassign --generate --topics-to-move-json-file topics.json --broker-list 4,5,6
  tierlog reassign --execute --reassignment-json-file plan.json
  tierlog reassign --verify --reassignment-json-file plan.json    # exit 3 while in progress
  tierlog reassign --cancel --reassignment-json-file plan.json
  tierlog reassign --list

topics.json:  {"version": 1, "topics": [{"topic": "orders"}]}
plan.json:    {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [4, 5]}]}
moving a replica to another log dir of its broker (one log_dirs entry per replica, "any": leave it):
              {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [4, 5],
                                            "log_dirs": ["/data/disk2", "any"]}]}
"""


# -- the cluster ------------------------------------------------------------------

def _version(wire: BrokerWire, api_key: int, name: str) -> int:
    version = wire.version(api_key)
    if version is None:
        raise CliError(f"{wire.address} does not support {name} (API {api_key})")
    return version


def _cluster(wire: BrokerWire) -> tuple[list[UsableBroker], Plan]:
    """The brokers and the current assignment of every partition (Metadata)."""
    version = _version(wire, ApiKey.METADATA, "Metadata")
    body = {"Topics": None, "AllowAutoTopicCreation": False, "IncludeClusterAuthorizedOperations": False,
            "IncludeTopicAuthorizedOperations": False}
    response = wire.call(ApiKey.METADATA, body, version, "Metadata")
    brokers = [UsableBroker(b["NodeId"], b.get("Rack")) for b in response["Brokers"]]
    current = {(t["Name"], p["PartitionIndex"]): tuple(p["ReplicaNodes"])
               for t in response["Topics"] if t["ErrorCode"] == ErrorCode.NONE for p in t["Partitions"]}
    return brokers, current


def _ongoing(wire: BrokerWire) -> dict[tuple[str, int], dict]:
    version = _version(wire, ApiKey.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments")
    body = {"TimeoutMs": max(1, int(wire.remaining_s() * 1000)), "Topics": None}
    response = wire.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, body, version, "ListPartitionReassignments")
    if response["ErrorCode"]:
        raise CliError(f"ListPartitionReassignments failed: {_describe(response['ErrorCode'], response)}")
    return {(t["Name"], p["PartitionIndex"]): p for t in response["Topics"] for p in t["Partitions"]}


def _alter(wire: BrokerWire, targets: dict, allow_rf_change: bool) -> dict[tuple[str, int], tuple[int, str]]:
    """Submit ``targets`` ((topic, partition) -> replicas, or None to cancel); the failures."""
    version = _version(wire, ApiKey.ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignments")
    if version < 1 and not allow_rf_change:
        raise CliError(f"{wire.address} cannot refuse replication factor changes (AlterPartitionReassignments v0)")
    topics: dict[str, list] = {}
    for (t, p), replicas in targets.items():
        topics.setdefault(t, []).append({"PartitionIndex": p, "Replicas": None if replicas is None else list(replicas)})
    body = {"TimeoutMs": max(1, int(wire.remaining_s() * 1000)), "AllowReplicationFactorChange": allow_rf_change,
            "Topics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()]}
    response = wire.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body, version, "AlterPartitionReassignments")
    if response["ErrorCode"]:
        raise CliError(f"AlterPartitionReassignments failed: {_describe(response['ErrorCode'], response)}")
    return {(t["Name"], p["PartitionIndex"]): (p["ErrorCode"], _describe(p["ErrorCode"], p))
            for t in response["Responses"] for p in t["Partitions"] if p["ErrorCode"]}


def _describe(code: int, item: dict) -> str:
    name = error_name(code)
    message = item.get("ErrorMessage")
    return f"{message} ({name})" if message else name


def _name(key: tuple[str, int]) -> str:
    return f"{key[0]}-{key[1]}"


def _tp(key: tuple[str, int], **more) -> dict:
    return {"topic": key[0], "partition": key[1], **more}


# -- the modes --------------------------------------------------------------------

def _check_plan(plan: Plan, current: Plan) -> None:
    """Refuse, before submitting anything, partitions that do not exist.

    Brokers are left to the controller: a registered broker that is down (so
    absent from Metadata) is a valid target.
    """
    topics = {t for t, _ in current}
    for key in plan:
        if key[0] not in topics:
            raise CliError(f"topic {key[0]!r} does not exist")
        if key not in current:
            raise CliError(f"partition {_name(key)} does not exist")


def _check_replication_factors(moving: Plan, broker_ids: list[int]) -> None:
    """Refuse a topic whose replication factor needs more brokers than --broker-list names."""
    for (topic, _), replicas in sorted(moving.items()):
        if len(replicas) > len(broker_ids):
            raise CliError(f"cannot place topic {topic!r}: its replication factor {len(replicas)} needs "
                           f"{len(replicas)} brokers from --broker-list, got {len(broker_ids)} "
                           f"({','.join(map(str, broker_ids))})")


def _generate(args, wire: BrokerWire) -> int:
    names = parse_topics(read_json(args.topics_to_move_json_file), str(args.topics_to_move_json_file))
    brokers, current = _cluster(wire)
    missing = [n for n in names if not any(t == n for t, _ in current)]
    if missing:
        raise CliError(f"topic {missing[0]!r} does not exist")
    known = {b.node_id: b for b in brokers}
    unknown = [i for i in args.broker_list if i not in known]
    if unknown:
        raise CliError(f"unknown broker(s) in --broker-list: {unknown}")
    chosen = [known[i] if not args.disable_rack_aware else UsableBroker(i) for i in args.broker_list]
    moving = {k: v for k, v in current.items() if k[0] in names}
    _check_replication_factors(moving, args.broker_list)
    proposed = propose(moving, chosen, random.Random())     # any refusal comes before the first line printed
    print_result(args, ["Current partition replica assignment", plan_text(moving), "",
                        "Proposed partition reassignment configuration", plan_text(proposed)],
                 {"current": plan_document(moving), "proposed": plan_document(proposed)})
    return 0


def _execute(args, wire: BrokerWire) -> int:
    source = str(args.reassignment_json_file)
    plan, dirs = parse_plan_dirs(read_json(args.reassignment_json_file), source)
    _, current = _cluster(wire)
    _check_plan(plan, current)
    if not args.additional and _ongoing(wire):
        raise CliError("cannot execute because there is an existing partition reassignment; use --additional "
                       "to start this one in addition (a partition in both moves to this plan's replicas)")
    rollback = {k: current[k] for k in plan}
    if not args.json:
        print(f"Current partition replica assignment\n\n{plan_text(rollback)}\n\n"
              "Save this to use as the --reassignment-json-file option during rollback")
    failed = _alter(wire, plan, not args.disallow_replication_factor_change)
    started = [k for k in plan if k not in failed]
    dirs = {r: d for r, d in dirs.items() if (r[0], r[1]) in started}
    dirs_refused = reassign_log_dirs.alter(args, reassign_log_dirs.broker_addresses(wire), dirs,
                                           wire.remaining_s()) if dirs else {}
    lines = [f"Successfully started partition reassignment(s) for {','.join(map(_name, started))}"] if started else []
    lines += [f"{_name(key)}: {text}" for key, (_, text) in failed.items()]
    moved = [r for r in dirs if r not in dirs_refused]
    lines += [f"Successfully started log directory move(s) for: {','.join(map(_replica, moved))}"] if moved else []
    lines += [f"{_replica(r)} to {dirs[r]}: {text}" for r, text in dirs_refused.items()]
    print_result(args, lines, {"current": plan_document(rollback), "started": [_tp(k) for k in started],
                               "refused": [_tp(k, error=text) for k, (_, text) in failed.items()],
                               "log_dirs_refused": [_tp((t, p), broker=b, log_dir=dirs[(t, p, b)], error=text)
                                                    for (t, p, b), text in dirs_refused.items()]})
    if failed:
        raise CliError(f"reassignment of {len(failed)} partition(s) refused: "
                       + ", ".join(_name(k) for k in failed))
    if dirs_refused:
        raise CliError(f"log dir move of {len(dirs_refused)} replica(s) refused: "
                       + ", ".join(f"{_replica(r)} ({text})" for r, text in dirs_refused.items()))
    return 0


def _replica(replica: tuple[str, int, int]) -> str:
    return f"{replica[0]}-{replica[1]} on broker {replica[2]}"


def _verify(args, wire: BrokerWire) -> int:
    plan, dirs = parse_plan_dirs(read_json(args.reassignment_json_file), str(args.reassignment_json_file))
    ongoing = _ongoing(wire)            # first: a reassignment ending in between is then seen as complete
    _, current = _cluster(wire)
    verdicts = {key: status(target, current.get(key), key in ongoing) for key, target in plan.items()}
    lines = ["Status of partition reassignment:"]
    lines += [_verdict_line(key, verdicts[key], current.get(key), plan[key]) for key in plan]
    places = reassign_log_dirs.states(args, reassign_log_dirs.broker_addresses(wire), dirs,
                                      wire.remaining_s()) if dirs else {}
    dir_verdicts = {r: _dir_status(dirs[r], *places[r]) for r in dirs}
    if dirs:
        lines += ["", "Reassignment of replicas' log directories:"]
        lines += [_dir_line(r, dir_verdicts[r], dirs[r], *places[r]) for r in dirs]
    print_result(args, lines, {"partitions": [
        _tp(key, status=verdicts[key] if key in current else "missing",
            replicas=list(current[key]) if key in current else None, target=list(plan[key])) for key in plan],
        "log_dirs": [_tp((t, p), broker=b, log_dir=dirs[(t, p, b)], status=dir_verdicts[(t, p, b)],
                         current=places[(t, p, b)][0], future=places[(t, p, b)][1]) for t, p, b in dirs]})
    failed = [_name(k) for k, v in verdicts.items() if v == FAILED]
    failed += [_replica(r) for r, v in dir_verdicts.items() if v == FAILED]
    if failed:
        raise CliError(f"reassignment failed for {', '.join(failed)}")
    return IN_PROGRESS_EXIT if IN_PROGRESS in (*verdicts.values(), *dir_verdicts.values()) else 0


def _dir_status(target: str, current: str | None, future: str | None) -> str:
    if current == target and future is None:
        return COMPLETE
    return IN_PROGRESS if future == target else FAILED


def _dir_line(replica: tuple[str, int, int], verdict: str, target: str, current: str | None,
              future: str | None) -> str:
    if verdict == COMPLETE:
        return f"Reassignment of replica {_replica(replica)} to {target} is complete."
    if verdict == IN_PROGRESS:
        return f"Reassignment of replica {_replica(replica)} from {current} to {target} is still in progress."
    if current is None:
        return f"Replica {_replica(replica)} is in no online log directory of its broker."
    return f"Replica {_replica(replica)} is in {current} and is not being moved to {target}."


def _verdict_line(key: tuple[str, int], verdict: str, replicas: tuple[int, ...] | None,
                  target: tuple[int, ...]) -> str:
    if verdict == COMPLETE:
        return f"Reassignment of partition {_name(key)} is complete."
    if verdict == IN_PROGRESS:
        return f"Reassignment of partition {_name(key)} is still in progress."
    if replicas is None:
        return f"Partition {_name(key)} does not exist."
    return (f"There is no active reassignment of partition {_name(key)}, but its replicas are "
            f"{list(replicas)} rather than {list(target)}.")


def _cancel(args, wire: BrokerWire) -> int:
    plan, dirs = parse_plan_dirs(read_json(args.reassignment_json_file), str(args.reassignment_json_file))
    failed = _alter(wire, dict.fromkeys(plan), True)
    idle = [k for k, (code, _) in failed.items() if code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS]
    refused = {k: text for k, (code, text) in failed.items() if k not in idle}
    cancelled = [k for k in plan if k not in failed]
    stopped, dirs_refused = _cancel_log_dir_moves(args, wire, dirs) if dirs else ([], {})
    lines = [f"Successfully cancelled partition reassignment(s) for: {','.join(map(_name, cancelled))}"] \
        if cancelled else []
    lines += [f"No reassignment in progress for: {','.join(_name(k) for k in idle)}"] if idle else []
    lines += [f"{_name(key)}: {text}" for key, text in refused.items()]
    lines += [f"Successfully cancelled log directory move(s) for: {','.join(map(_replica, stopped))}"] \
        if stopped else []
    lines += [f"{_replica(r)}: {text}" for r, text in dirs_refused.items()]
    print_result(args, lines, {"cancelled": [_tp(k) for k in cancelled], "not_in_progress": [_tp(k) for k in idle],
                               "refused": [_tp(k, error=text) for k, text in refused.items()],
                               "log_dirs_cancelled": [_tp((t, p), broker=b) for t, p, b in stopped]})
    if refused or dirs_refused:
        raise CliError(f"cancel refused for {', '.join([*map(_name, refused), *map(_replica, dirs_refused)])}")
    return 0


def _cancel_log_dir_moves(args, wire: BrokerWire, dirs: dict) -> tuple[list, dict]:
    """Kafka's tool cancels a plan's log dir moves too: each replica with a future log is asked to stay
    in its current dir (AlterReplicaLogDirs to it cancels the move).  (cancelled, refused)."""
    addresses = reassign_log_dirs.broker_addresses(wire)
    places = reassign_log_dirs.states(args, addresses, dirs, wire.remaining_s())
    stay = {r: current for r, (current, future) in places.items() if current is not None and future is not None}
    refused = reassign_log_dirs.alter(args, addresses, stay, wire.remaining_s()) if stay else {}
    return [r for r in stay if r not in refused], refused


def _list(args, wire: BrokerWire) -> int:
    ongoing = _ongoing(wire)
    lines = ["Current partition reassignments:"] if ongoing else ["No partition reassignments found."]
    lines += [f"{_name(key)}: replicas: {_ids(p['Replicas'])}. adding: {_ids(p['AddingReplicas'])}. "
              f"removing: {_ids(p['RemovingReplicas'])}." for key, p in sorted(ongoing.items())]
    print_result(args, lines, {"reassignments": [
        _tp(key, replicas=p["Replicas"], adding=p["AddingReplicas"], removing=p["RemovingReplicas"])
        for key, p in sorted(ongoing.items())]})
    return 0


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


_MODES = {"generate": _generate, "execute": _execute, "verify": _verify, "cancel": _cancel, "list": _list}


def run(args: argparse.Namespace) -> int:
    if args.mode in ("execute", "verify", "cancel") and args.reassignment_json_file is None:
        raise UsageError(f"--{args.mode} needs --reassignment-json-file")
    if args.mode == "generate" and (args.topics_to_move_json_file is None or args.broker_list is None):
        raise UsageError("--generate needs --topics-to-move-json-file and --broker-list")
    with BrokerWire.from_args(args) as wire:
        return _MODES[args.mode](args, wire)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reassign", parents=[connection_options()],
        help="move partitions between brokers or log dirs (generate, execute, verify, cancel, list)",
        description="Move partition replicas between brokers, and between a broker's log dirs (a plan's "
                    "log_dirs), like kafka-reassign-partitions.sh.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    modes = parser.add_mutually_exclusive_group(required=True)
    for mode, text in (("generate", "propose a plan moving whole topics onto --broker-list"),
                       ("execute", "start the plan (prints the rollback plan first)"),
                       ("verify", "complete / in progress / failed, per partition of the plan (exit 3: in progress)"),
                       ("cancel", "cancel the plan's ongoing reassignments"),
                       ("list", "list every ongoing reassignment")):
        modes.add_argument(f"--{mode}", dest="mode", action="store_const", const=mode, help=text)
    parser.add_argument("--reassignment-json-file", metavar="FILE", type=Path,
                        help='the plan: {"version":1,"partitions":[{"topic":T,"partition":N,"replicas":[...]'
                             ',"log_dirs":["any"|PATH,...]}]} (log_dirs optional)')
    parser.add_argument("--topics-to-move-json-file", metavar="FILE", type=Path,
                        help='for --generate: {"version":1,"topics":[{"topic":T}]}')
    parser.add_argument("--broker-list", metavar="ID,ID,...", type=broker_list,
                        help="for --generate: the brokers to place the topics on")
    parser.add_argument("--disable-rack-aware", action="store_true",
                        help="for --generate: ignore broker.rack")
    parser.add_argument("--additional", action="store_true",
                        help="for --execute: go ahead while other reassignments are in progress")
    parser.add_argument("--disallow-replication-factor-change", action="store_true",
                        help="for --execute: refuse plans that change a partition's replication factor (KIP-860)")
    add_json_option(parser, "the mode's result")
    parser.set_defaults(func=run)
