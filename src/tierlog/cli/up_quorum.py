"""The controller quorum of a ``tierlog up`` cluster: dynamic (KIP-853) or static, and
``tierlog up --add-controller``.

A new cluster is dynamic, as Kafka 4.x formats new clusters: every node names the
controllers in ``controller.quorum.bootstrap.servers`` and each initial controller is
formatted with ``--initial-controllers`` (all of them, each with a fresh directory id:
cli/quorum_format.py), so controllers can be added, removed and replaced later without
stopping the cluster. ``--static-quorum`` writes ``controller.quorum.voters`` instead (a fixed
set, kraft.version 0). A data dir keeps the kind it was created with: Kafka has no
conversion of a running static quorum before 4.1, and tierlog none at all.

``up --add-controller`` grows a running dynamic cluster by one controller: the next free
node id, a free CONTROLLER port on the cluster's host, the settings of an existing
controller (security, tiering), formatted ``--no-initial-controllers`` (a fresh directory
id), started, added with AddRaftVoter once it has caught up as an observer (the leader
refuses until then; the command asks again), and the new voter set printed. The command
then keeps the controller running until Ctrl-C, as ``up`` does its nodes; its node dir
holds an ``added-controller`` marker: a later ``up`` of the data dir starts it with the
others (it is a voter) but leaves it out of the planned layout. ``up --listen HOST:0`` on an
existing dynamic cluster keeps the ports of its first run (``kept_base_port``): the voters'
endpoints are in the metadata log, so controllers that all moved could not find each other.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from tierlog.config import ConfigError, NodeConfig, format_properties, parse_properties
from tierlog.net.free_ports import free_port_block
from tierlog.protocol.kafka_uuid import random_uuid, uuid_str

from .errors import CliError
from .quorum_format import QuorumFormat, format_quorum
from .quorum_voters import add_controller
from .up_layout import ADDED_MARKER

__all__ = ["add_to_quorum", "added_controller_props", "added_controllers", "format_initial_controllers", "is_static",
           "kept_base_port", "quorum_props",
           "write_added_controller"]

BOOTSTRAP_KEY = "controller.quorum.bootstrap.servers"
ADD_TIMEOUT_S = 120.0


def is_static(data_dir: Path) -> bool:
    """Whether the cluster already in ``data_dir`` has a static quorum (controller.quorum.voters)."""
    for conf in sorted(data_dir.glob("node-*/server.properties")):
        try:
            if parse_properties(conf.read_text()).get("controller.quorum.voters"):
                return True
        except (OSError, ConfigError):
            continue
    return False


def kept_base_port(data_dir: Path, controller_offset: int) -> int | None:
    """``--listen HOST:0`` on an existing dynamic cluster: the base port of its first run (node 1's
    controller port - ``controller_offset``), since the voters' endpoints live in the metadata log
    and a quorum whose controllers all moved could not find each other; None for anything else."""
    conf = data_dir / "node-1" / "server.properties"
    try:
        props = parse_properties(conf.read_text()) if conf.exists() else {}
    except (OSError, ConfigError):
        return None
    if not props.get(BOOTSTRAP_KEY):
        return None
    for listener in props.get("listeners", "").split(","):
        name, _, address = listener.partition("://")
        if name.strip().upper() == "CONTROLLER" and address.rpartition(":")[2].isdigit():
            return int(address.rpartition(":")[2]) - controller_offset
    return None


def added_controllers(data_dir: Path) -> list[int]:
    """The node ids of the controllers ``up --add-controller`` added to the cluster in ``data_dir``."""
    return sorted(int(m.parent.name.removeprefix("node-")) for m in data_dir.glob(f"node-*/{ADDED_MARKER}")
                  if m.parent.name.removeprefix("node-").isdigit() and (m.parent / "server.properties").exists())


def quorum_props(static: bool, controllers: list[tuple[int, int]], host: str) -> dict[str, str]:
    """The quorum setting of every node: (node id, controller port) of the initial controllers."""
    if static:
        return {"controller.quorum.voters": ",".join(f"{n}@{host}:{p}" for n, p in controllers)}
    return {BOOTSTRAP_KEY: ",".join(f"{host}:{p}" for _, p in controllers)}


def format_initial_controllers(properties: dict[int, str], controllers: list[tuple[int, int]], host: str) -> None:
    """Format each controller not formatted yet with every initial controller (--initial-controllers)."""
    todo = {n: NodeConfig(parse_properties(text)) for n, text in properties.items()}
    todo = {n: c for n, c in todo.items() if not _formatted(c)}
    if not todo:
        return
    initial = ",".join(f"{n}@{host}:{p}:{uuid_str(random_uuid())}" for n, p in controllers)
    for config in todo.values():
        format_quorum(config, QuorumFormat(initial_controllers=initial))


def _formatted(config: NodeConfig) -> bool:
    meta = Path(config["metadata.log.dir"] or config.log_dirs[0])
    return (meta / "meta.properties").exists()


def added_controller_props(data_dir: Path) -> tuple[int, dict[str, str]]:
    """The next node's id and the properties of one more controller of the cluster in ``data_dir``."""
    existing = {}
    for conf in sorted(data_dir.glob("node-*/server.properties")):
        try:
            props = parse_properties(conf.read_text())
            existing[int(props["node.id"])] = props
        except (OSError, KeyError, ValueError, ConfigError):
            continue
    controllers = [p for p in existing.values() if "controller" in p.get("process.roles", "")]
    if not controllers:
        raise CliError(f"{data_dir} holds no `tierlog up` cluster with controllers: start one with `tierlog up`")
    template = controllers[0]
    if not template.get(BOOTSTRAP_KEY):
        raise CliError(f"the cluster in {data_dir} has a static controller quorum (controller.quorum.voters): "
                       "controllers can be added only to a dynamic one (created without --static-quorum)")
    node_id = max(existing) + 1
    host = template[BOOTSTRAP_KEY].split(",")[0].rpartition(":")[0]
    try:
        port = free_port_block(host, [0])
    except OSError as e:
        raise CliError(f"no free port for the new controller on {host}: {e}") from None
    props = {**template, "node.id": str(node_id), "process.roles": "controller",
             "listeners": f"CONTROLLER://{host}:{port}",
             "log.dirs": str(data_dir / f"node-{node_id}" / "data"), "metrics.prometheus.listener": f"{host}:0"}
    props.pop("metadata.log.dir", None)
    return node_id, props


def write_added_controller(data_dir: Path, node_id: int, props: dict[str, str]) -> Path:
    """Write and format the new controller's dir; returns its server.properties."""
    node_dir = data_dir / f"node-{node_id}"
    node_dir.mkdir(parents=True, exist_ok=True)
    (node_dir / ADDED_MARKER).write_text("added to a running cluster by `tierlog up --add-controller`\n")
    conf = node_dir / "server.properties"
    conf.write_text(format_properties(props, "Written by `tierlog up --add-controller`; restart this node by "
                                             "hand with: tierlog node --config <this file>"))
    format_quorum(NodeConfig(props), QuorumFormat(no_initial_controllers=True))
    return conf


def add_to_quorum(props: dict[str, str], command_config: list[tuple[str, str]]) -> str:
    """AddRaftVoter for the new controller (asking again until it caught up); the CLI's line."""
    args = argparse.Namespace(command_config=command_config)
    return add_controller(props[BOOTSTRAP_KEY], ADD_TIMEOUT_S, args, NodeConfig(props))
