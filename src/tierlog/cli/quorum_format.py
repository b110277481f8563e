"""Formatting a node of a dynamic controller quorum (KIP-853), as ``kafka-storage.sh format``:

- ``--standalone``: this controller alone is the first voter set;
- ``--initial-controllers ID@HOST:PORT:DIRECTORY_ID,...``: every initial controller at once
  (each formatted with the same list; this node's entry fixes its metadata dir's directory.id);
- ``--no-initial-controllers``: a controller that joins a running quorum later (added by
  ``tierlog metadata quorum add-controller``), or a broker.

Each writes meta.properties (cluster id, node id, a directory.id) in every data dir; the first
two also the bootstrap checkpoint ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``:
a snapshot at offset 0 holding KRaftVersionRecord (kraft.version 1) and the VotersRecord of the
initial controllers. The node runs the dynamic quorum when its config names
``controller.quorum.bootstrap.servers`` (instead of ``controller.quorum.voters``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tierlog.clock import wall_clock_ms
from tierlog.config import ConfigError, NodeConfig
from tierlog.raft.file_log import METADATA_PARTITION_DIR
from tierlog.raft.file_snapshots import FileSnapshotStore
from tierlog.raft.snapshots import SnapshotWriter
from tierlog.raft.types import OffsetAndEpoch
from tierlog.raft.voters import Endpoint, Voter, VoterSet
from tierlog.server.raft_replica import metadata_dir
from tierlog.storage.meta_properties import ensure_meta_properties, kafka_uuid_bytes, kafka_uuid_str

from .errors import CliError

__all__ = ["QuorumFormat", "format_quorum", "parse_initial_controllers"]

BOOTSTRAP_SNAPSHOT = OffsetAndEpoch(0, 0)


@dataclass(frozen=True)
class QuorumFormat:
    standalone: bool = False
    initial_controllers: str | None = None
    no_initial_controllers: bool = False

    @property
    def chosen(self) -> bool:
        return self.standalone or self.initial_controllers is not None or self.no_initial_controllers


def parse_initial_controllers(text: str, listener: str) -> list[Voter]:
    """``ID@HOST:PORT:DIRECTORY_ID`` entries (Kafka's --initial-controllers)."""
    voters = []
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        node, at, rest = entry.partition("@")
        head, colon, dir_text = rest.rpartition(":")
        host, colon2, port = head.rpartition(":")
        if not at or not node.isdigit() or not colon or not colon2 or not port.isdigit() or not host:
            raise CliError(f"--initial-controllers: bad entry {entry!r} (want ID@HOST:PORT:DIRECTORY_ID)")
        try:
            dir_id = kafka_uuid_bytes(dir_text)
        except ConfigError:
            raise CliError(f"--initial-controllers: {dir_text!r} in {entry!r} is not a directory id "
                           "(22 characters of URL-safe base64, as `tierlog metadata quorum` prints)") from None
        voters.append(Voter(int(node), dir_id, (Endpoint(listener, host.strip("[]"), int(port)),)))
    if len({v.voter_id for v in voters}) != len(voters) or not voters:
        raise CliError("--initial-controllers: want at least one controller, each id once")
    return voters


def format_quorum(config: NodeConfig, how: QuorumFormat) -> tuple[str, bytes, VoterSet | None]:
    """Write meta.properties and, for --standalone / --initial-controllers, the bootstrap
    checkpoint; returns (cluster id, the metadata dir's directory id, the initial voters)."""
    if sum((how.standalone, how.initial_controllers is not None, how.no_initial_controllers)) != 1:
        raise CliError("choose one of --standalone, --initial-controllers, --no-initial-controllers")
    listener = (config.controller_listener_names or ["CONTROLLER"])[0]
    meta = metadata_dir(config)
    _refuse_formatted(meta / METADATA_PARTITION_DIR)
    voters: list[Voter] | None = None
    fixed: dict[Path, str] = {}
    if how.initial_controllers is not None:
        voters = parse_initial_controllers(how.initial_controllers, listener)
        own = next((v for v in voters if v.voter_id == config.node_id), None)
        if own is not None:
            fixed[meta] = kafka_uuid_str(own.directory_id)
    dirs = list({d.resolve(): d for d in (*config.log_dirs, meta)}.values())
    try:
        cluster_id, dir_ids = ensure_meta_properties(dirs, config.node_id, config["cluster.id"], fixed_ids=fixed)
    except ConfigError as e:
        raise CliError(str(e)) from None
    own_dir = next(i for d, i in dir_ids.items() if d.resolve() == meta.resolve())
    if fixed and own_dir != kafka_uuid_bytes(fixed[meta]):
        raise CliError(f"{meta}/meta.properties already has another directory.id than --initial-controllers "
                       f"gives node {config.node_id}")
    if how.standalone:
        voters = [Voter(config.node_id, own_dir, (_own_endpoint(config, listener),))]
    if voters is None:
        return cluster_id, own_dir, None
    voter_set = VoterSet(voters)
    _write_bootstrap_snapshot(meta / METADATA_PARTITION_DIR, voter_set)
    return cluster_id, own_dir, voter_set


def _own_endpoint(config: NodeConfig, listener: str) -> Endpoint:
    if "controller" not in config.roles or not config.controller_listeners:
        raise CliError("--standalone: the node must have the controller role and a controller listener")
    own = config.controller_listeners[0]
    return Endpoint(listener, own.host or "localhost", own.port)


def _refuse_formatted(log_dir: Path) -> None:
    if log_dir.is_dir() and any((p.suffix == ".log" and p.stat().st_size) or p.suffix == ".checkpoint"
                                for p in log_dir.iterdir()):
        raise CliError(f"{log_dir} already holds metadata: this node is formatted")


def _write_bootstrap_snapshot(log_dir: Path, voters: VoterSet) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    raw = FileSnapshotStore(log_dir).create(BOOTSTRAP_SNAPSHOT)
    with SnapshotWriter(raw, wall_clock_ms(), lambda *_: None, voters=voters) as writer:
        writer.freeze()

