"""`tierlog metadata quorum|snapshots`: the Raft metadata quorum and its snapshots.

``quorum`` is kafka-metadata-quorum.sh's ``describe --status`` and
``describe --replication`` in one: it sends DescribeQuorum (API 55) to a
broker (which forwards it to the active controller) or straight to a
controller's CONTROLLER listener. confluent-kafka has no DescribeQuorum, so it
speaks the protocol itself with tierlog's codec, one request per connection.
``--json`` prints one object::

    {"cluster_id": "..." | null, "leader_id": 1, "leader_epoch": 3, "high_watermark": 42,
     "max_follower_lag": 0, "max_follower_lag_time_ms": 0,
     "voters": [{"node_id": 1, "log_end_offset": 42, "lag": 0, "last_fetch_timestamp": ...,
                 "last_caught_up_timestamp": ..., "status": "Leader",
                 "directory_id": "AAAAAAAAAAAAAAAAAAAAAA", "endpoints": ["CONTROLLER://host:9093"]}, ...],
     "observers": [...]}

``directory_id`` (Kafka's base64 form of the replica's metadata directory id; all
zeros while the quorum is static) and a voter's ``endpoints`` come from
DescribeQuorum v2 (KIP-853); against an older server they are left out.

``snapshots`` reads a node's metadata directory offline (it never writes
there): the ``<end offset>-<epoch>.checkpoint`` files, and with ``--print`` the
records of one of them, one per line (``--json``: one JSON object per line).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from tierlog.cli import quorum_voters
from tierlog.cli.broker_wire import BrokerWire, security_of
from tierlog.cli.errors import CliError
from tierlog.cli.options import (
    BOOTSTRAP_ENV,
    DEFAULT_BOOTSTRAP,
    DEFAULT_TIMEOUT_S,
    add_command_config,
    positive_float,
)
from tierlog.cli.render import make_table, note, print_json, print_table
from tierlog.clock import wall_clock_ms
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

__all__ = ["register"]

METADATA_TOPIC = "__cluster_metadata"
METADATA_DIR = "__cluster_metadata-0"
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SNAPSHOT_ID = re.compile(r"^(\d+)-(\d+)(?:\.checkpoint)?$")

_EPILOG = """\
examples:
  tierlog metadata quorum                      # status and replication of the metadata quorum
  tierlog metadata quorum --json
  tierlog metadata quorum --bootstrap-controller localhost:9193 add-controller --command-config node-4.properties
  tierlog metadata quorum --bootstrap-controller localhost:9193 remove-controller \\
      --controller-id 2 --controller-directory-id 2nIwt3bNQhq9CgBR9nMtrA
  tierlog metadata snapshots --dir tierlog-data/node-1/data
  tierlog metadata snapshots --dir tierlog-data/node-1/data --print latest
"""


# -- the wire ------------------------------------------------------------------

def _cluster_id(wire: BrokerWire) -> str | None:
    version = wire.version(ApiKey.METADATA)
    if version is None or version < 2:     # ClusterId is in Metadata v2+; a controller listener has no Metadata
        return None
    body = {"Topics": [], "AllowAutoTopicCreation": False,
            "IncludeClusterAuthorizedOperations": False, "IncludeTopicAuthorizedOperations": False}
    try:
        return wire.request(ApiKey.METADATA, body, version).get("ClusterId")
    except PeerUnavailable:
        return None


def _describe_quorum(wire: BrokerWire) -> tuple[dict, str | None, list[dict]]:
    version = wire.version(ApiKey.DESCRIBE_QUORUM)
    if version is None:
        raise CliError(f"{wire.address} does not support DescribeQuorum (API 55)")
    body = {"Topics": [{"TopicName": METADATA_TOPIC, "Partitions": [{"PartitionIndex": 0}]}]}
    response = wire.call(ApiKey.DESCRIBE_QUORUM, body, version, "DescribeQuorum")
    _check_errors(wire.address, response)
    return response["Topics"][0]["Partitions"][0], _cluster_id(wire), response.get("Nodes") or []


def _error_name(code: int) -> str:
    from tierlog.protocol.errors import error_name
    return error_name(code)


def _check_errors(address: str, response: dict) -> None:
    if response.get("ErrorCode"):
        detail = response.get("ErrorMessage") or ""
        raise CliError(f"DescribeQuorum failed at {address}: {_error_name(response['ErrorCode'])}"
                       + (f" ({detail})" if detail else ""))
    topics = response.get("Topics") or []
    if not topics or not topics[0]["Partitions"]:
        raise CliError(f"DescribeQuorum at {address} returned no {METADATA_TOPIC} partition")
    part = topics[0]["Partitions"][0]
    if part["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        leader = part.get("LeaderId", -1)
        hint = f" (the leader is node {leader})" if leader is not None and leader >= 0 else ""
        raise CliError(f"{address} is not the metadata quorum leader{hint}; ask a broker or the leader")
    if part["ErrorCode"]:
        raise CliError(f"DescribeQuorum failed at {address}: {_error_name(part['ErrorCode'])}")


def _query(args: argparse.Namespace) -> tuple[dict, str | None, list[dict]]:
    target = args.bootstrap_server
    if args.bootstrap_controller:     # a controller answers only as the leader: ask it who leads
        target = quorum_voters.leader_address(args.bootstrap_controller, args.timeout, args)
    with BrokerWire(target, args.timeout, security_of(args)) as wire:
        return _describe_quorum(wire)


# -- quorum: the description ----------------------------------------------------

def _ago(now_ms: int, timestamp: int) -> int | None:
    return max(0, now_ms - timestamp) if timestamp is not None and timestamp >= 0 else None


def describe(part: dict, cluster_id: str | None, now_ms: int, nodes: list[dict] | None = None) -> dict:
    """The quorum as ``--json`` prints it (see the module docstring); ``nodes`` is
    DescribeQuorum v2's Nodes (each voter's listeners)."""
    endpoints = {n["NodeId"]: [f'{x["Name"]}://{x["Host"]}:{x["Port"]}' for x in n["Listeners"]]
                 for n in nodes or []}
    leader_id = part["LeaderId"]
    voters, observers = part["CurrentVoters"], part["Observers"]
    leader = next((r for r in voters if r["ReplicaId"] == leader_id), None)
    leader_leo = leader["LogEndOffset"] if leader is not None else part["HighWatermark"]
    leader_caught_up = leader.get("LastCaughtUpTimestamp", -1) if leader is not None else -1

    def replica(r: dict, observer: bool) -> dict:
        status = "Observer" if observer else ("Leader" if r["ReplicaId"] == leader_id else "Follower")
        out = {"node_id": r["ReplicaId"], "log_end_offset": r["LogEndOffset"],
                "lag": max(0, leader_leo - r["LogEndOffset"]),
                "last_fetch_timestamp": r.get("LastFetchTimestamp", -1),
                "last_caught_up_timestamp": r.get("LastCaughtUpTimestamp", -1),
                "last_fetch_ms_ago": _ago(now_ms, r.get("LastFetchTimestamp", -1)),
                "last_caught_up_ms_ago": _ago(now_ms, r.get("LastCaughtUpTimestamp", -1)),
                "status": status}
        if "ReplicaDirectoryId" in r:
            out["directory_id"] = base64.urlsafe_b64encode(bytes(r["ReplicaDirectoryId"])).decode().rstrip("=")
        if not observer and r["ReplicaId"] in endpoints:
            out["endpoints"] = endpoints[r["ReplicaId"]]
        return out

    described_voters = [replica(r, False) for r in voters]
    followers = [r for r in voters if r["ReplicaId"] != leader_id]
    lag_times = [max(0, leader_caught_up - r["LastCaughtUpTimestamp"]) for r in followers
                 if leader_caught_up >= 0 and r.get("LastCaughtUpTimestamp", -1) >= 0]
    return {
        "cluster_id": cluster_id,
        "leader_id": leader_id,
        "leader_epoch": part["LeaderEpoch"],
        "high_watermark": part["HighWatermark"],
        "max_follower_lag": max((v["lag"] for v in described_voters if v["status"] == "Follower"), default=0),
        "max_follower_lag_time_ms": (max(lag_times, default=0) if len(lag_times) == len(followers) else -1),
        "voters": described_voters,
        "observers": [replica(r, True) for r in observers],
    }


def _ids(replicas: list[dict]) -> str:
    return "[" + ",".join(str(r["node_id"]) for r in replicas) + "]"


def _show_status(q: dict) -> None:
    rows = [("ClusterId", q["cluster_id"] or "unknown"), ("LeaderId", q["leader_id"]),
            ("LeaderEpoch", q["leader_epoch"]), ("HighWatermark", q["high_watermark"]),
            ("MaxFollowerLag", q["max_follower_lag"]), ("MaxFollowerLagTimeMs", q["max_follower_lag_time_ms"]),
            ("CurrentVoters", _ids(q["voters"])), ("CurrentObservers", _ids(q["observers"]))]
    width = max(len(name) for name, _ in rows) + 2
    for name, value in rows:
        print(f"{name + ':':<{width}}{value}")


def _ms_ago(value: int | None) -> str:
    return "unknown" if value is None else f"{value} ms ago"


def _show_replication(q: dict) -> None:
    table = make_table("NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status")
    for r in q["voters"] + q["observers"]:
        table.add_row(str(r["node_id"]), str(r["log_end_offset"]), str(r["lag"]),
                      _ms_ago(r["last_fetch_ms_ago"]), _ms_ago(r["last_caught_up_ms_ago"]), r["status"])
    print_table(table)


def run_quorum(args: argparse.Namespace) -> int:
    part, cluster_id, nodes = _query(args)
    quorum = describe(part, cluster_id, wall_clock_ms(), nodes)
    if args.json:
        print_json(quorum)
        return 0
    both = not args.status and not args.replication
    if args.status or both:
        _show_status(quorum)
    if both:
        print()
    if args.replication or both:
        _show_replication(quorum)
    return 0


# -- snapshots --------------------------------------------------------------------

def _metadata_dir(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise CliError(f"no such directory: {text}")
    if (path / METADATA_DIR).is_dir():
        return path / METADATA_DIR
    if path.name == METADATA_DIR or any(_SNAPSHOT_NAME.match(p.name) for p in path.iterdir()):
        return path
    raise CliError(f"{text} is not a metadata directory (no {METADATA_DIR} in it)")


def _snapshots(directory: Path) -> list[tuple[int, int, Path]]:
    found = []
    for path in directory.iterdir():
        m = _SNAPSHOT_NAME.match(path.name)
        if m:
            found.append((int(m.group(1)), int(m.group(2)), path))
    return sorted(found)


def _no_snapshots(directory: Path) -> str:
    """Why a metadata directory has no snapshot yet, and how to get one sooner (one line)."""
    return (f"no snapshots in {directory} yet: by default a node writes one after 20 MiB of metadata records "
            "(metadata.log.max.record.bytes.between.snapshots) or an hour after the last one (or the start) if records were "
            "committed since (metadata.log.max.snapshot.interval.ms); for one within seconds start the "
            "cluster with --set metadata.log.max.snapshot.interval.ms=10000")


def _pick(snapshots: list[tuple[int, int, Path]], wanted: str, directory: Path) -> tuple[int, int, Path]:
    if not snapshots:
        raise CliError(_no_snapshots(directory))
    if wanted == "latest":
        return max(snapshots, key=lambda s: (s[0], s[1]))
    m = _SNAPSHOT_ID.match(Path(wanted).name)
    if not m:
        raise CliError(f"bad snapshot id {wanted!r}: expected OFFSET-EPOCH or 'latest'")
    key = (int(m.group(1)), int(m.group(2)))
    for snapshot in snapshots:
        if snapshot[:2] == key:
            return snapshot
    raise CliError(f"no snapshot {key[0]}-{key[1]} in {directory}")


def _kafka_uuid(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _plain(value):
    """A record field as JSON-ready data: uuids in Kafka's base64, other bytes in hex."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return _kafka_uuid(raw) if len(raw) == 16 else raw.hex()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _compact(value) -> str:
    if isinstance(value, str) and value and not any(c.isspace() or c in "=\"" for c in value):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _records(path: Path, offset: int, epoch: int):
    """(offset, record or error text) of every record in the snapshot."""
    from tierlog.metadata import cluster_records as metadata_records
    from tierlog.protocol.primitives import ProtocolError
    from tierlog.raft.snapshots import InvalidSnapshotError, SnapshotReader
    from tierlog.raft.types import OffsetAndEpoch
    try:
        reader = SnapshotReader(OffsetAndEpoch(offset, epoch), path.read_bytes())
    except InvalidSnapshotError as exc:
        raise CliError(f"cannot read {path.name}: {exc}") from None
    for batch in reader.batches():
        for index, value in enumerate(batch.records):
            try:
                yield batch.base_offset + index, metadata_records.decode(value)
            except (ProtocolError, ValueError) as exc:
                yield batch.base_offset + index, f"undecodable record: {exc}"


def _print_snapshot(snapshot: tuple[int, int, Path], as_json: bool) -> None:
    offset, epoch, path = snapshot
    count = 0
    for record_offset, record in _records(path, offset, epoch):
        count += 1
        if isinstance(record, str):
            fields, name = {"error": record}, "Undecodable"
        else:
            fields, name = _plain(record), type(record).__name__
        if as_json:
            sys.stdout.write(json.dumps({"offset": record_offset, "type": name, **fields},
                                        ensure_ascii=False, separators=(",", ":")) + "\n")
        else:
            sys.stdout.write(" ".join([name, *(f"{k}={_compact(v)}" for k, v in fields.items())]) + "\n")
    sys.stdout.flush()
    note(f"snapshot {offset}-{epoch}: {count} records")


def run_snapshots(args: argparse.Namespace) -> int:
    directory = _metadata_dir(args.dir)
    snapshots = _snapshots(directory)
    if args.print is not None:
        _print_snapshot(_pick(snapshots, args.print, directory), args.json)
        return 0
    rows = []
    for offset, epoch, path in snapshots:
        try:
            st = path.stat()
        except FileNotFoundError:       # deleted by the node since the listing
            continue
        mtime = datetime.fromtimestamp(st.st_mtime, tz=UTC).isoformat(timespec="seconds")
        rows.append({"end_offset": offset, "epoch": epoch, "size": st.st_size, "mtime": mtime,
                     "file": path.name})
    if args.json:
        print_json(rows)
    elif not rows:
        note(_no_snapshots(directory))
    else:
        table = make_table("EndOffset", "Epoch", "Size", "Modified", "File")
        for r in rows:
            table.add_row(str(r["end_offset"]), str(r["epoch"]), str(r["size"]), str(r["mtime"]), str(r["file"]))
        print_table(table)
    return 0


# -- the parsers ------------------------------------------------------------------

def _server_options(parser: argparse.ArgumentParser, sub: bool = False) -> None:
    """The connection options; ``sub``: on an action under ``quorum`` too (given there or before it)."""
    group = parser.add_argument_group("connection options")

    def default(value):
        return argparse.SUPPRESS if sub else value
    group.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT...]",
                       default=default(os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP),
                       help=f"a broker, or a controller's CONTROLLER listener (env {BOOTSTRAP_ENV})")
    group.add_argument("--bootstrap-controller", metavar="HOST:PORT[,HOST:PORT...]", default=default(None),
                       help="a controller's CONTROLLER listener (as kafka-metadata-quorum's)")
    add_command_config(group)
    if sub:
        next(a for a in group._group_actions if a.dest == "command_config").default = argparse.SUPPRESS
    group.add_argument("--timeout", metavar="SECONDS", type=positive_float, default=default(DEFAULT_TIMEOUT_S),
                       help="give up waiting for the cluster after this long")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "metadata", help="describe the metadata quorum; list and print its snapshots",
        description="Inspect the Raft metadata quorum (like kafka-metadata-quorum.sh).", epilog=_EPILOG,
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)

    quorum = actions.add_parser(
        "quorum", help="leader, epoch, high watermark, voters and observers with their lag",
        description="Describe the metadata quorum: a status block and a replication table.")
    _server_options(quorum)
    shown = quorum.add_mutually_exclusive_group()
    shown.add_argument("--status", action="store_true", help="only the status block")
    shown.add_argument("--replication", action="store_true", help="only the replication table")
    quorum.add_argument("--json", action="store_true", help="print one JSON object")
    quorum.set_defaults(func=run_quorum)
    quorum_voters.register(quorum.add_subparsers(title="voter changes (dynamic quorum, KIP-853)", metavar="ACTION"),
                           lambda p: _server_options(p, sub=True))

    snaps = actions.add_parser(
        "snapshots", help="list a node's metadata snapshots, or print one",
        description="List the metadata snapshots in a node's metadata directory, or print the "
                    "records of one. Reads the files only; safe on a running node.")
    snaps.add_argument("--dir", required=True, metavar="DIR",
                       help=f"the node's data dir (holding {METADATA_DIR}) or {METADATA_DIR} itself")
    snaps.add_argument("--print", metavar="OFFSET-EPOCH|latest",
                       help="print this snapshot's records, one per line")
    snaps.add_argument("--json", action="store_true",
                       help="JSON: an array of snapshots, or with --print one object per record line")
    snaps.set_defaults(func=run_snapshots)
