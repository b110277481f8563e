"""``tierlog up``: a local cluster on the embedded defaults, one process per node.

Each node gets ``<data-dir>/node-<id>/server.properties`` (so it can be
restarted by hand with ``tierlog node --config``) and its log dir beside it.
The command prints ``bootstrap.servers=...`` once every node accepts clients
and stops the nodes cleanly (SIGTERM, then waits) on Ctrl-C or SIGTERM.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .cmd_node import parse_overrides
from .errors import CliError

__all__ = ["register", "run"]

READY_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "up", help="start a local cluster (data under ./tierlog-data)",
        description="Start a local tierlog cluster with the embedded defaults and keep it running "
                    "until Ctrl-C. Prints one line 'bootstrap.servers=HOST:PORT[,...]' when ready.")
    p.add_argument("--data-dir", default="./tierlog-data", help="where nodes keep data")
    p.add_argument("--listen", default="127.0.0.1:9092", metavar="HOST:PORT",
                   help="first node's listener; later nodes take the following ports")
    p.add_argument("--brokers", type=int, default=1, help="number of broker nodes (only 1 until the metadata quorum lands)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config on every node (repeatable)")
    p.set_defaults(func=run)


def node_properties(node_id: int, host: str, port: int, log_dir: Path, overrides: dict[str, str]) -> str:
    props = {
        "node.id": str(node_id),
        "process.roles": "broker,controller",
        "listeners": f"PLAINTEXT://{host}:{port}",
        "log.dirs": str(log_dir),
    }
    props.update(overrides)
    lines = ["# Written by `tierlog up`; restart this node by hand with: tierlog node --config <this file>"]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def _parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise CliError(f"--listen expects HOST:PORT, got {text!r}")
    return host, int(port)


def run(args) -> int:
    if args.brokers != 1:
        raise CliError("--brokers: only 1 is supported until the metadata quorum lands")
    host, port = _parse_listen(args.listen)
    overrides = parse_overrides(args.set)
    data_dir = Path(args.data_dir).resolve()
    procs = []
    stopping = False

    def on_signal(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    try:
        for i in range(args.brokers):
            procs.append(_start_node(i + 1, host, port + i, data_dir, overrides))
        for proc in procs:
            _wait_ready(proc)
        print(f"bootstrap.servers={','.join(f'{host}:{port + i}' for i in range(args.brokers))}", flush=True)
        while not stopping:
            for proc in procs:
                if proc.poll() is not None:
                    raise CliError(f"node exited with code {proc.returncode}; see {data_dir}/node-*/node.log")
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        _stop_all(procs)
    return 0


def _start_node(node_id: int, host: str, port: int, data_dir: Path, overrides) -> subprocess.Popen:
    node_dir = data_dir / f"node-{node_id}"
    node_dir.mkdir(parents=True, exist_ok=True)
    conf = node_dir / "server.properties"
    conf.write_text(node_properties(node_id, host, port, node_dir / "data", overrides))
    log_file = open(node_dir / "node.log", "ab")
    cmd = [sys.executable, "-m", "tierlog.cli.main", "node", "--config", str(conf)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log_file, text=True,
                            start_new_session=True)
    proc.node_dir = node_dir
    return proc


def _wait_ready(proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("node "):
            print(line.rstrip(), file=sys.stderr, flush=True)
            return
        if not line and proc.poll() is not None:
            tail = _tail(proc.node_dir / "node.log")
            raise CliError(f"node in {proc.node_dir} failed to start: {tail}")
    raise CliError(f"node in {proc.node_dir} did not start within {READY_TIMEOUT_S}s")


def _tail(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "no log"


def _stop_all(procs) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
