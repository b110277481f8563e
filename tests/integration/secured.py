"""A cluster laid out as ``tierlog up --security sasl_ssl`` lays it out, for integration tests.

Controllers 1..C and brokers C+1..C+B from ``cmd_up.node_properties`` and
``up_security.prepare_security`` (a development CA, SASL_SSL everywhere, SCRAM-SHA-512
between brokers, PLAIN on the controller listener), with the super user ``admin`` in every
controller's bootstrap records (what ``tierlog format --add-scram`` writes), plus
``overrides``. ``admin`` is confluent-kafka's settings as ``admin`` (bootstrap included).
With ``plaintext``, each broker also serves a PLAINTEXT listener (``node.plaintext_port``),
to compare what a client reads over both; its clients (``User:ANONYMOUS``) are super users,
since the layout enforces ACLs.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from nodeproc import NodeProcess, free_port, start_all, stop_all

from tierlog.cli.cmd_format import scram_records
from tierlog.cli.cmd_up import NodePlan, node_properties
from tierlog.cli.up_security import prepare_security
from tierlog.config import parse_properties
from tierlog.metadata.bootstrap import write_bootstrap
from tierlog.net.client_security import to_librdkafka

__all__ = ["check_logs", "start_secured"]


def start_secured(root: Path, controllers: int = 1, brokers: int = 2, overrides: dict | None = None,
                  plaintext: bool = False):
    """Start the cluster; SimpleNamespace(nodes, controllers, brokers, bootstrap, admin, ca,
    client_properties, admin_password)."""
    security = prepare_security("sasl_ssl", root, "127.0.0.1", existing_cluster=False)
    cports = [free_port() for _ in range(controllers)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(cports))
    plans = [NodePlan(i + 1, ("controller",), None, p) for i, p in enumerate(cports)]
    plans += [NodePlan(controllers + j + 1, ("broker",), free_port(), None) for j in range(brokers)]
    props = {**security.node_props, "broker.heartbeat.interval.ms": "300", **(overrides or {})}
    nodes = []
    for plan in plans:
        node = NodeProcess(root / f"node-{plan.node_id}", plan.node_id, plan.broker_port or plan.controller_port)
        node.props = parse_properties(node_properties(plan, "127.0.0.1", voters, "secured-cluster", node.data_dir,
                                                      props, "", security.broker_listener))
        if plaintext and plan.broker_port is not None:
            _add_plaintext_listener(node)
        if plan.controller_port is not None:
            write_bootstrap(node.data_dir, scram_records(security.scram))    # tierlog format --add-scram
        nodes.append(node)
    start_all(nodes)
    bootstrap = ",".join(n.bootstrap for n in nodes[controllers:])
    client = to_librdkafka(parse_properties(security.client_properties.read_text()))
    return SimpleNamespace(nodes=nodes, controllers=nodes[:controllers], brokers=nodes[controllers:],
                           bootstrap=bootstrap, admin={"bootstrap.servers": bootstrap, **client},
                           ca=root / "tls" / "ca.crt", client_properties=security.client_properties,
                           admin_password=security.scram[0].password)


def _add_plaintext_listener(node: NodeProcess) -> None:
    node.plaintext_port = free_port()
    node.props["listeners"] += f",PLAINTEXT://127.0.0.1:{node.plaintext_port}"
    node.props["listener.security.protocol.map"] += ",PLAINTEXT:PLAINTEXT"
    node.props["super.users"] += ";User:ANONYMOUS"


def check_logs(cluster, *secrets: str) -> None:
    """Stop every node; no node logged a traceback or a password."""
    stop_all(cluster.brokers)
    stop_all(cluster.controllers)
    for node in cluster.nodes:
        log = node.log_path.read_text(errors="replace")
        assert "Traceback" not in log, node.log_tail(60)
        for secret in (cluster.admin_password, *secrets):
            assert secret not in log
