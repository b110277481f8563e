"""``tierlog up``: a local cluster on the embedded defaults, one process per node.

Each node gets ``<data-dir>/node-<id>/server.properties`` (so it can be
restarted by hand with ``tierlog node --config``) and its log dir beside it.
All nodes share one cluster id (kept across runs of the same data dir) and the
``controller.quorum.voters`` list.
``--listen HOST:0`` takes a run of free ports below the kernel's ephemeral range
(net/free_ports.py; for a cluster started from scripts and tests beside another one),
new ones each run.
Tiered storage is on (``remote.log.storage.system.enable``) with remote storage
in ``<data-dir>/remote-storage`` unless ``--remote-storage DIR|s3://BUCKET/PREFIX``
says otherwise; a topic is tiered with ``--config remote.storage.enable=true``.
``follower.fetch.last.tiered.offset.enable`` is on (KIP-1023: an empty follower
of a tiered topic copies only what is not in remote storage yet; Kafka's default
is off; ``--set follower.fetch.last.tiered.offset.enable=false`` turns it off).
Every node serves its metrics to Prometheus on a port of its own that stays the
same across restarts: node N at the metrics base port + N, the base being
``METRICS_PORT_OFFSET`` (200) above the ``--listen`` port (9092: node 1 at 9293), or
the port of ``--set metrics.prometheus.listener=HOST:PORT`` (port 0: every node a
free port of its own), named in its ``node ... metrics=HOST:PORT`` line. Once every
node is ready, ``<data-dir>/monitoring/`` gets a Prometheus scrape config of the
nodes (``prometheus.yml``) and the Grafana dashboard (``grafana-dashboard.json``,
cli/monitoring.py). The command prints ``bootstrap.servers=...`` once every node
accepts clients, then ``monitoring=<dir>``, and stops the nodes cleanly (SIGTERM,
then waits) on Ctrl-C or SIGTERM.
``--security ssl|sasl_plaintext|sasl_ssl`` (default plaintext) secures every listener,
inter-broker and controller traffic included (cli/up_security.py: a development CA
under ``<data-dir>/tls/``, SCRAM-SHA-512 with the super user ``admin``, bootstrapped into
the new cluster's metadata log; with SASL the StandardAuthorizer on, so other users need
ACLs), and prints ``client.properties=<path>`` (Kafka's Java form) and
``client-librdkafka.properties=<path>`` (librdkafka's names).
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tierlog.clock import monotonic_s
from tierlog.config import ConfigError, format_properties, parse_properties
from tierlog.extras import MissingExtraError, require
from tierlog.net.free_ports import free_port_block
from tierlog.parent_watch import child_env, exit_with_parent
from tierlog.protocol.kafka_uuid import random_uuid, uuid_str
from tierlog.tiered.factory import RemoteStorageConfigError, location_settings

from .cmd_format import METADATA_LOG, scram_records
from .cmd_node import parse_overrides
from .errors import ERROR_PREFIX, CliError
from .monitoring import write_monitoring
from .up_layout import check_data_dir
from .up_quorum import (
    add_to_quorum,
    added_controller_props,
    added_controllers,
    format_initial_controllers,
    is_static,
    kept_base_port,
    quorum_props,
    write_added_controller,
)
from .up_security import CLIENT_PROPERTIES, SECURITY_MODES, UpSecurity, prepare_security

__all__ = ["register", "run"]

READY_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30


CONTROLLER_PORT_OFFSET = 100     # controller listeners sit 100 ports above the broker listeners
METRICS_PORT_OFFSET = 200        # node N serves metrics at --listen's port + 200 + N
METRICS_LISTENER = "metrics.prometheus.listener"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "up", help="start a local cluster (data under ./tierlog-data)",
        description="Start a local tierlog cluster with the embedded defaults and keep it running until "
                    "Ctrl-C: by default 3 controllers (the metadata quorum) and 3 brokers, each its own "
                    "process. Prints 'node <id> roles=... pid=... listen=... metrics=HOST:PORT' per node "
                    "(Prometheus metrics at http://HOST:PORT/metrics; node N at the --listen port + "
                    f"{METRICS_PORT_OFFSET} + N, or at PORT + N with --set {METRICS_LISTENER}=HOST:PORT, "
                    "PORT 0: a free port each), then 'bootstrap.servers=HOST:PORT[,...]' once every broker "
                    "accepts clients, then 'monitoring=DIR': a Prometheus scrape config (prometheus.yml) "
                    "and a Grafana dashboard (grafana-dashboard.json) of the cluster.")
    p.add_argument("--data-dir", default="./tierlog-data", help="where nodes keep data")
    p.add_argument("--listen", default="127.0.0.1:9092", metavar="HOST:PORT",
                   help="first broker's listener; later brokers take the following ports and "
                        f"controllers the ports {CONTROLLER_PORT_OFFSET} above (port 0: a run of free ports "
                        "below the ephemeral range; the bootstrap.servers line says which)")
    p.add_argument("--controllers", type=int, default=3, help="metadata quorum voters")
    p.add_argument("--brokers", type=int, default=3, help="broker nodes")
    p.add_argument("--combined", action="store_true",
                   help="run the controllers inside broker processes (nodes 1..N have both roles); "
                        "--controllers 1 --brokers 1 --combined is the single-process development mode")
    p.add_argument("--remote-storage", metavar="DIR|s3://BUCKET/PREFIX",
                   help="where tiered topics' old segments go (default <data-dir>/remote-storage); "
                        "S3 endpoint, region and path style through --set rsm.config.storage.s3.*")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config on every node (repeatable)")
    p.add_argument("--security", choices=SECURITY_MODES, default="plaintext",
                   help="secure every listener: TLS with a development CA under <data-dir>/tls, and/or "
                        "SASL/SCRAM-SHA-512 with the super user 'admin' (random password) and ACLs enforced "
                        "(StandardAuthorizer: other users need `tierlog acls --add`); prints "
                        "client.properties=PATH (Java form, for --command-config on every command) and "
                        "client-librdkafka.properties=PATH (confluent-kafka, kcat); see docs/security.md")
    p.add_argument("--static-quorum", action="store_true",
                   help="a fixed controller quorum (controller.quorum.voters) instead of a dynamic one (KIP-853, "
                        "the default for a new cluster: controllers can be added and removed while it runs)")
    p.add_argument("--add-controller", action="store_true",
                   help="add one controller to the running dynamic cluster in --data-dir (next free node id, "
                        "a free port), make it a voter once caught up, print the new voter set; keeps it "
                        "running until Ctrl-C")
    p.set_defaults(func=run)


@dataclass(frozen=True)
class NodePlan:
    node_id: int
    roles: tuple[str, ...]
    broker_port: int | None
    controller_port: int | None


def plan_cluster(controllers: int, brokers: int, combined: bool, port: int) -> list[NodePlan]:
    """Node ids, roles and ports: combined nodes 1..M (the first N also vote), else
    controllers 1..N then brokers N+1..N+M."""
    if controllers < 1 or brokers < 1:
        raise CliError("--controllers and --brokers must be at least 1")
    if combined and controllers > brokers:
        raise CliError("--combined: --controllers must not exceed --brokers")
    cport = port + CONTROLLER_PORT_OFFSET
    if combined:
        return [NodePlan(i + 1, ("broker", "controller") if i < controllers else ("broker",),
                         port + i, cport + i if i < controllers else None) for i in range(brokers)]
    return ([NodePlan(i + 1, ("controller",), None, cport + i) for i in range(controllers)]
            + [NodePlan(controllers + i + 1, ("broker",), port + i, None) for i in range(brokers)])


def metrics_listener(node_id: int, host: str, port: int, override: str | None) -> str:
    """Node ``node_id``'s ``metrics.prometheus.listener``: the base port + node id, the base
    being ``METRICS_PORT_OFFSET`` above ``port`` or the override's port (0: a free port)."""
    if override is None:
        return _metrics_address(host, port + METRICS_PORT_OFFSET + node_id, f"--listen port + {METRICS_PORT_OFFSET}")
    if not override:
        return ""           # metrics off
    mhost, sep, mport = override.rpartition(":")
    if not sep or not mhost or not mport.isdigit() or int(mport) > 65535:
        raise CliError(f"--set {METRICS_LISTENER} expects HOST:PORT, got {override!r}")
    return _metrics_address(mhost, int(mport) + node_id if int(mport) else 0, f"{METRICS_LISTENER} port")


def _metrics_address(host: str, port: int, base: str) -> str:
    if port > 65535:
        raise CliError(f"metrics port {port} (the {base} + node id) is above 65535")
    return f"{host}:{port}"


def node_properties(plan: NodePlan, host: str, voters: str, cluster_id: str, log_dir: Path,
                    overrides: dict[str, str], metrics: str | None = None, broker_listener: str = "PLAINTEXT",
                    quorum: dict[str, str] | None = None) -> str:
    """``voters``: controller.quorum.voters; ``quorum`` (up_quorum.quorum_props) replaces it."""
    listeners = []
    if plan.broker_port is not None:
        listeners.append(f"{broker_listener}://{host}:{plan.broker_port}")
    if plan.controller_port is not None:
        listeners.append(f"CONTROLLER://{host}:{plan.controller_port}")
    props = {
        "node.id": str(plan.node_id),
        "process.roles": ",".join(plan.roles),
        "cluster.id": cluster_id,
        "listeners": ",".join(listeners),
        "controller.listener.names": "CONTROLLER",
        **(quorum if quorum is not None else {"controller.quorum.voters": voters}),
        "log.dirs": str(log_dir),
        METRICS_LISTENER: f"{host}:0" if metrics is None else metrics,
    }
    props.update(overrides)
    return format_properties(props, "Written by `tierlog up`; restart this node by hand with: "
                                    "tierlog node --config <this file>")


def tiering_properties(location: str | None, data_dir: Path) -> dict[str, str]:
    """Tiered storage on every node (KIP-405), remote storage in ``location`` or ``<data-dir>/remote-storage``,
    and KIP-1023's follower fetch from the earliest pending upload offset."""
    if location is None:
        location = str(data_dir / "remote-storage")
    elif location.startswith("s3://"):
        _require_s3()
    else:
        location = str(Path(location).resolve())
    try:
        settings = location_settings(location)
    except RemoteStorageConfigError as e:
        raise CliError(f"--remote-storage: {e}") from None
    return {"remote.log.storage.system.enable": "true", "follower.fetch.last.tiered.offset.enable": "true",
            **settings}


def _require_s3() -> None:
    try:
        require("s3", "--remote-storage s3://...")
    except MissingExtraError as e:
        raise CliError(str(e)) from None


def _parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise CliError(f"--listen expects HOST:PORT, got {text!r}")
    return host, int(port)


def _free_base(host: str, controllers: int, brokers: int, combined: bool) -> int:
    """``--listen HOST:0``: a base port whose whole plan (listeners and metrics ports) is free,
    below the ephemeral ports (`net.free_ports`)."""
    plans = plan_cluster(controllers, brokers, combined, 0)
    offsets = [p for plan in plans for p in (plan.broker_port, plan.controller_port) if p is not None]
    offsets += [METRICS_PORT_OFFSET + plan.node_id for plan in plans]
    try:
        return free_port_block(host, offsets)
    except OSError as e:
        raise CliError(f"--listen {host}:0: {e}") from None


def run(args) -> int:
    exit_with_parent()
    if args.add_controller:
        return run_add_controller(Path(args.data_dir).resolve())
    host, port = _parse_listen(args.listen)
    data_dir = Path(args.data_dir).resolve()
    if port == 0:
        port = kept_base_port(data_dir, CONTROLLER_PORT_OFFSET) or _free_base(host, args.controllers, args.brokers,
                                                                              args.combined)
    plans = plan_cluster(args.controllers, args.brokers, args.combined, port)
    refusal = check_data_dir(data_dir, {p.node_id: tuple(sorted(p.roles)) for p in plans})
    if refusal is not None:
        raise CliError(refusal)
    existing = any(data_dir.glob("node-*/server.properties"))
    security = prepare_security(args.security, data_dir, host, existing)
    overrides = {**tiering_properties(args.remote_storage, data_dir), **security.node_props,
                 **parse_overrides(args.set)}
    metrics_override = overrides.pop(METRICS_LISTENER, None)
    metrics = {p.node_id: metrics_listener(p.node_id, host, port, metrics_override) for p in plans}
    cluster_id = _cluster_id(data_dir)
    voters = ",".join(f"{p.node_id}@{host}:{p.controller_port}" for p in plans if "controller" in p.roles)
    static = args.static_quorum or is_static(data_dir)
    initial = [(p.node_id, p.controller_port) for p in plans if p.controller_port is not None]
    quorum = quorum_props(static, initial, host)
    texts = {plan.node_id: node_properties(plan, host, voters, cluster_id, data_dir / f"node-{plan.node_id}" / "data",
                                           overrides, metrics[plan.node_id], security.broker_listener, quorum)
             for plan in plans}
    procs = []
    stopping = False

    def on_signal(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    try:
        for plan in plans:
            if "controller" in plan.roles:
                _bootstrap(data_dir / f"node-{plan.node_id}" / "data", security)
        if not static:
            format_initial_controllers({n: t for n, t in texts.items() if n in dict(initial)}, initial, host)
        for plan in plans:
            procs.append(_start_node(plan, data_dir, texts[plan.node_id]))
        for node_id in added_controllers(data_dir):      # voters `up --add-controller` added earlier
            procs.append(_start_node(NodePlan(node_id, ("controller",), None, None), data_dir, None))
        roles = {plan.node_id: ",".join(plan.roles) for plan in plans}
        targets = [(node.node_id, roles.get(node.node_id, "controller"), _field(_wait_ready(node), "metrics"))
                   for node in procs]
        brokers = [f"{host}:{p.broker_port}" for p in plans if p.broker_port is not None]
        print(f"bootstrap.servers={','.join(brokers)}", flush=True)
        write_monitoring(data_dir / "monitoring", targets)
        print(f"monitoring={data_dir / 'monitoring'}", flush=True)
        if security.client_properties is not None:
            print(f"client.properties={security.client_properties}", flush=True)
            print(f"client-librdkafka.properties={security.librdkafka_properties}", flush=True)
        _watch(procs, lambda: stopping)
    except KeyboardInterrupt:
        pass
    finally:
        # brokers first, while the quorum is there to move their leadership away
        _stop_all([n.proc for n in procs if not n.controller_only])
        _stop_all([n.proc for n in procs if n.controller_only])
    return 0


def run_add_controller(data_dir: Path) -> int:
    """``up --add-controller`` (cli/up_quorum.py): one more voter for the running cluster in ``data_dir``."""
    node_id, props = added_controller_props(data_dir)
    write_added_controller(data_dir, node_id, props)
    node = _start_node(NodePlan(node_id, ("controller",), None, None), data_dir, None)
    stopping = False

    def on_signal(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    try:
        _wait_ready(node)
        client = data_dir / CLIENT_PROPERTIES
        command_config = list(parse_properties(client.read_text()).items()) if client.exists() else []
        print(add_to_quorum(props, command_config), flush=True)
        _watch([node], lambda: stopping)
    except KeyboardInterrupt:
        pass
    finally:
        _stop_all([node.proc])
    return 0


def _bootstrap(log_dir: Path, security: UpSecurity) -> None:
    """A new controller's bootstrap records: the SCRAM users (``tierlog format --add-scram``)."""
    if not security.scram or (log_dir / METADATA_LOG).exists():
        return
    from tierlog.metadata.bootstrap import write_bootstrap
    write_bootstrap(log_dir, scram_records(security.scram))


def _watch(procs: list[_Node], stopping) -> None:
    """Until told to stop: report a node that exits (the others keep running, so a
    kill -9 of one node can be tried); give up only when every node is gone."""
    reported = set()
    while not stopping():
        for node in procs:
            proc = node.proc
            if proc.poll() is not None and proc.pid not in reported:
                reported.add(proc.pid)
                print(f"{node.node_dir.name} exited with code {proc.returncode} (see {node.node_dir}/node.log); "
                      f"restart it with: tierlog {shlex.join(_node_args(node.node_dir))}",
                      file=sys.stderr, flush=True)
        if len(reported) == len(procs):
            raise CliError("every node has exited")
        time.sleep(0.2)


def _cluster_id(data_dir: Path) -> str:
    """The id already written in a node's properties, else a new one (Kafka's base64 uuid)."""
    for conf in sorted(data_dir.glob("node-*/server.properties")):
        try:
            cluster_id = parse_properties(conf.read_text()).get("cluster.id")
        except ConfigError as e:
            raise CliError(f"{conf}: {e}") from None
        if cluster_id:
            return cluster_id
    return uuid_str(random_uuid())


@dataclass(frozen=True)
class _Node:
    """A node ``up`` started: its process and where it lives."""

    node_id: int
    node_dir: Path
    proc: subprocess.Popen
    controller_only: bool       # stopped after the brokers, while the quorum can move their leadership


def _node_args(node_dir: Path) -> list[str]:
    """The `tierlog` arguments that run the node of ``node_dir``: how up starts it and how a person restarts it."""
    log = node_dir / "node.log"         # rotated by the node (cli/node_log.py)
    return ["node", "--config", str(node_dir / "server.properties"), "--log-file", str(log)]


def _start_node(plan: NodePlan, data_dir: Path, properties: str | None) -> _Node:
    """Start node ``plan.node_id`` with ``properties`` (None: the server.properties already there)."""
    node_dir = data_dir / f"node-{plan.node_id}"
    node_dir.mkdir(parents=True, exist_ok=True)
    if properties is not None:
        (node_dir / "server.properties").write_text(properties)
    log = node_dir / "node.log"
    cmd = [sys.executable, "-m", "tierlog.cli.main", *_node_args(node_dir)]
    with open(log, "ab") as log_file:      # until the node opens it itself; the child keeps its own handle
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log_file, text=True,
                                start_new_session=True, env=child_env())
    return _Node(plan.node_id, node_dir, proc, plan.roles == ("controller",))


def _field(node_line: str, name: str) -> str | None:
    """A ``name=value`` field of a node line (None: not there)."""
    return next((word.split("=", 1)[1] for word in node_line.split() if word.startswith(name + "=")), None)


def _wait_ready(node: _Node) -> str:
    """The node's ``node ...`` line, printed, once it is ready."""
    deadline = monotonic_s() + READY_TIMEOUT_S
    stdout = node.proc.stdout
    assert stdout is not None               # started with stdout=PIPE
    while monotonic_s() < deadline:
        line = stdout.readline()
        if line.startswith("node "):
            print(line.rstrip(), flush=True)
            return line.strip()
        if not line and node.proc.poll() is not None:
            log = node.node_dir / "node.log"
            raise CliError(f"node {node.node_id} failed to start: {_last_error(log)} (see {log})")
    raise CliError(f"node {node.node_id} did not start within {READY_TIMEOUT_S}s (see {node.node_dir}/node.log)")


def _last_error(path: Path) -> str:
    """The node's own one-line error (its ``tierlog: error:`` prefix dropped), else its log's last line."""
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    if not lines:
        return "no log"
    return lines[-1].removeprefix(ERROR_PREFIX)


def _stop_all(procs) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
    deadline = monotonic_s() + STOP_TIMEOUT_S
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - monotonic_s()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
