"""Opens this node's replica of the metadata log: a static or a dynamic quorum (KIP-853).

- ``controller.quorum.voters`` (or nothing, on a lone combined node): kraft.version 0,
  the voters fixed by the config, each reached at its configured address.
- ``controller.quorum.bootstrap.servers``: kraft.version 1, the voters are whatever the
  latest VotersRecord in the metadata log (or the snapshot the log starts at, or the
  bootstrap checkpoint ``tierlog format --standalone | --initial-controllers`` wrote at
  ``00000000000000000000-0000000000.checkpoint``) says. A replica that knows no voter
  yet asks the bootstrap servers, under the ids -2, -3, ... as Kafka names them, for the
  leader; the Raft driver's peer map then follows the voters' endpoints
  (quorum_endpoints.py). The replica's key is (node.id, the metadata dir's
  ``directory.id`` from its meta.properties).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tierlog.clock import wall_clock_ms
from tierlog.config import NodeConfig
from tierlog.net.client import Peers
from tierlog.net.security import Security
from tierlog.raft import FileQuorumStateStore, RaftConfig, RaftNode
from tierlog.raft.file_log import METADATA_PARTITION_DIR, FileLog
from tierlog.raft.file_snapshots import FileSnapshotStore
from tierlog.raft.voters import KRAFT_VERSION_DYNAMIC, KRAFT_VERSION_STATIC, Endpoint, Voter, VoterSet

__all__ = ["BOOTSTRAP_ID_FIRST", "RaftReplica", "bootstrap_addresses", "metadata_dir", "open_raft_replica"]

#: the id the first controller.quorum.bootstrap.servers entry goes by (then -3, -4, ...), as in Kafka
BOOTSTRAP_ID_FIRST = -2


@dataclass
class RaftReplica:
    node: RaftNode
    peers: Peers             # the Raft driver's connections (voters, or bootstrap servers)
    controller_ids: Callable[[], list[int]]   # whom the controller channels try besides the image's leader


def metadata_dir(cfg: NodeConfig) -> Path:
    """The dir holding ``__cluster_metadata-0`` (and its meta.properties): metadata.log.dir or the first log dir."""
    return Path(cfg["metadata.log.dir"] or cfg.log_dirs[0])


def bootstrap_addresses(cfg: NodeConfig) -> dict[int, tuple[str, int]]:
    """controller.quorum.bootstrap.servers under Kafka's negative ids."""
    return {BOOTSTRAP_ID_FIRST - i: addr for i, addr in enumerate(cfg.bootstrap_servers)}


def open_raft_replica(cfg: NodeConfig, cluster_id: str, directory_id: bytes, security: Security) -> RaftReplica:
    raft_config = RaftConfig(
        cluster_id=cluster_id,
        election_timeout_ms=cfg["controller.quorum.election.timeout.ms"],
        election_backoff_max_ms=cfg["controller.quorum.election.backoff.max.ms"],
        fetch_timeout_ms=cfg["controller.quorum.fetch.timeout.ms"],
        request_timeout_ms=cfg["controller.quorum.request.timeout.ms"],
        append_linger_ms=0,     # the controller's records land at once, at the offsets it expects
        max_replication_lag_ms=cfg["max.replication.lag.ms"])
    meta_dir = metadata_dir(cfg) / METADATA_PARTITION_DIR
    log = FileLog.open(meta_dir, segment_bytes=cfg["metadata.log.segment.bytes"])
    client_id = f"tierlog-node-{cfg.node_id}"
    if cfg.dynamic_quorum:
        bootstrap = bootstrap_addresses(cfg)
        node = RaftNode(cfg.node_id, VoterSet([]), log, FileSnapshotStore(meta_dir),
                        FileQuorumStateStore(meta_dir), raft_config, random.Random(), wall_clock_ms(),
                        directory_id=directory_id, bootstrap_ids=sorted(bootstrap, reverse=True),
                        kraft_version=KRAFT_VERSION_DYNAMIC, endpoints=_own_endpoints(cfg))
        first = sorted(bootstrap, reverse=True)
        return RaftReplica(node, Peers(client_id, bootstrap, security), lambda: sorted(node.voters) or first)
    voters: dict[int, tuple[str, int] | None] = {**cfg.voters} or {cfg.node_id: None}
    node = RaftNode(cfg.node_id, _static_voters(cfg, voters), log, FileSnapshotStore(meta_dir),
                    FileQuorumStateStore(meta_dir, frozenset(voters)), raft_config, random.Random(), wall_clock_ms(),
                    kraft_version=KRAFT_VERSION_STATIC)
    peers = Peers(client_id, {n: a for n, a in voters.items() if a is not None and n != cfg.node_id}, security)
    ids = sorted(voters)
    return RaftReplica(node, peers, lambda: ids)


def _own_endpoints(cfg: NodeConfig) -> tuple[Endpoint, ...]:
    """Where this controller serves the quorum (its first controller listener, as AddRaftVoter
    lists it; KIP-853); () for a broker."""
    if "controller" not in cfg.roles or not cfg.controller_listeners:
        return ()
    own = cfg.controller_listeners[0]
    return (Endpoint(own.name, own.host or "localhost", own.port),)


def _static_voters(cfg: NodeConfig, voters: dict[int, tuple[str, int] | None]) -> VoterSet:
    """controller.quorum.voters as a static (kraft.version 0) voter set with each voter's
    controller endpoint, for DescribeQuorum's Nodes; a quorum of one names its own."""
    name = cfg.controller_listener_names[0] if cfg.controller_listener_names else "CONTROLLER"

    def endpoints(node_id: int, addr: tuple[str, int] | None) -> tuple[Endpoint, ...]:
        if addr is not None:
            return (Endpoint(name, addr[0], addr[1]),)
        return _own_endpoints(cfg) if node_id == cfg.node_id else ()
    return VoterSet(Voter(n, endpoints=endpoints(n, a)) for n, a in voters.items())
