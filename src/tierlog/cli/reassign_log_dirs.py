"""The ``log_dirs`` of a reassignment plan: moving replicas between a broker's log dirs.

kafka-reassign-partitions.sh takes, per partition of the plan, ``log_dirs``: one
entry per replica, ``"any"`` (leave it where it is or where the broker puts it)
or the absolute path of one of that broker's log dirs.  ``--execute`` sends each
broker concerned AlterReplicaLogDirs (34) for its replicas (a replica the broker
does not host yet, REPLICA_NOT_AVAILABLE because the reassignment is still
adding it, is asked again until the command's --timeout); ``--verify`` asks each
broker's DescribeLogDirs (35) where the replica's current and future logs are:
complete (current log there, no future log), in progress (its future log is
there), or failed.
"""

from __future__ import annotations

import argparse
import time

from tierlog.cli.broker_wire import BrokerWire, security_of
from tierlog.cli.errors import CliError
from tierlog.clock import monotonic_s
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, error_name

__all__ = ["ANY", "RETRY_S", "ReplicaDirs", "alter", "broker_addresses", "parse_log_dirs", "states"]

ANY = "any"
RETRY_S = 0.5           # between AlterReplicaLogDirs rounds for replicas not hosted yet
Replica = tuple[str, int, int]              # (topic, partition, broker)
ReplicaDirs = dict[Replica, str]            # -> absolute log dir path


def parse_log_dirs(entry: dict, replicas: tuple[int, ...], name: str, source: str) -> ReplicaDirs:
    """The replicas of one plan entry whose ``log_dirs`` names a dir (``"any"`` entries are left out)."""
    dirs = entry.get("log_dirs")
    if dirs is None:
        return {}
    if not isinstance(dirs, list) or len(dirs) != len(replicas) \
            or not all(isinstance(d, str) and (d == ANY or d.startswith("/")) for d in dirs):
        raise CliError(f'{source}: {name}: log_dirs must list one entry per replica, each "any" or an '
                       f"absolute path")
    return {(entry["topic"], entry["partition"], broker): d for broker, d in zip(replicas, dirs) if d != ANY}


def broker_addresses(wire: BrokerWire) -> dict[int, str]:
    """node id -> HOST:PORT of every live broker (Metadata for no topic)."""
    version = wire.version(ApiKey.METADATA)
    if version is None:
        raise CliError(f"{wire.address} does not support Metadata")
    body = {"Topics": [], "AllowAutoTopicCreation": False, "IncludeClusterAuthorizedOperations": False,
            "IncludeTopicAuthorizedOperations": False}
    answer = wire.call(ApiKey.METADATA, body, version, "Metadata")
    return {b["NodeId"]: f"{b['Host']}:{b['Port']}" for b in answer["Brokers"]}


def _by_broker(moves: ReplicaDirs) -> dict[int, ReplicaDirs]:
    out: dict[int, ReplicaDirs] = {}
    for replica, path in moves.items():
        out.setdefault(replica[2], {})[replica] = path
    return out


def _address(addresses: dict[int, str], broker: int) -> str:
    if broker not in addresses:
        raise CliError(f"broker {broker} is not live: cannot move its replicas between log dirs")
    return addresses[broker]


def _alter_on(wire: BrokerWire, moves: ReplicaDirs) -> dict[Replica, int]:
    version = wire.version(ApiKey.ALTER_REPLICA_LOG_DIRS)
    if version is None:
        raise CliError(f"{wire.address} does not support AlterReplicaLogDirs (API {ApiKey.ALTER_REPLICA_LOG_DIRS})")
    dirs: dict[str, dict[str, list[int]]] = {}
    for (topic, partition, _), path in moves.items():
        dirs.setdefault(path, {}).setdefault(topic, []).append(partition)
    body = {"Dirs": [{"Path": path, "Topics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()]}
                     for path, topics in dirs.items()]}
    answer = wire.call(ApiKey.ALTER_REPLICA_LOG_DIRS, body, version, "AlterReplicaLogDirs")
    broker = next(iter(moves))[2]
    return {(t["TopicName"], p["PartitionIndex"], broker): p["ErrorCode"]
            for t in answer["Results"] for p in t["Partitions"]}


def alter(args: argparse.Namespace, addresses: dict[int, str], moves: ReplicaDirs,
          timeout_s: float) -> dict[Replica, str]:
    """Ask each broker concerned to move its replicas; the replicas refused, with the error's name."""
    deadline = monotonic_s() + timeout_s
    pending, refused = dict(moves), {}
    while pending:
        retry: ReplicaDirs = {}
        for broker, mine in _by_broker(pending).items():
            with BrokerWire(_address(addresses, broker), max(0.1, deadline - monotonic_s()),
                            security_of(args)) as wire:
                codes = _alter_on(wire, mine)
            for replica, code in codes.items():
                if code == ErrorCode.REPLICA_NOT_AVAILABLE and monotonic_s() + RETRY_S < deadline:
                    retry[replica] = mine[replica]
                elif code != ErrorCode.NONE:
                    refused[replica] = error_name(code)
        pending = retry
        if pending:
            time.sleep(RETRY_S)     # the reassignment is still adding these replicas
    return refused


def _describe(args: argparse.Namespace, address: str, wanted: set[tuple[str, int]], timeout_s: float) -> dict:
    with BrokerWire(address, timeout_s, security_of(args)) as wire:
        version = wire.version(ApiKey.DESCRIBE_LOG_DIRS)
        if version is None:
            raise CliError(f"{address} does not support DescribeLogDirs (API {ApiKey.DESCRIBE_LOG_DIRS})")
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(wanted):
            topics.setdefault(topic, []).append(partition)
        body = {"Topics": [{"Topic": t, "Partitions": ps} for t, ps in topics.items()]}
        return wire.call(ApiKey.DESCRIBE_LOG_DIRS, body, version, "DescribeLogDirs")


def states(args: argparse.Namespace, addresses: dict[int, str], moves: ReplicaDirs,
           timeout_s: float) -> dict[Replica, tuple[str | None, str | None]]:
    """Each replica's (current log dir, future log dir) as its broker describes them (None: none)."""
    found: dict[Replica, tuple[str | None, str | None]] = {}
    for broker, mine in _by_broker(moves).items():
        wanted = {(t, p) for t, p, _ in mine}
        answer = _describe(args, _address(addresses, broker), wanted, timeout_s)
        current: dict[tuple[str, int], str] = {}
        future: dict[tuple[str, int], str] = {}
        for result in answer["Results"]:
            for t in result["Topics"]:
                for p in t["Partitions"]:
                    key = (t["Name"], p["PartitionIndex"])
                    if key in wanted:
                        (future if p["IsFutureKey"] else current)[key] = result["LogDir"]
        for topic, partition, _ in mine:
            found[(topic, partition, broker)] = (current.get((topic, partition)), future.get((topic, partition)))
    return found
