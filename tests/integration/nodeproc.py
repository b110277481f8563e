"""Start, stop, kill and restart real tierlog node processes for integration tests."""
from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tierlog.parent_watch import child_env

READY_TIMEOUT_S = 30        # per node; nodes started side by side (start_all) share their sum


PORT_BLOCK_BAND = 4000      # ports per pytest-xdist worker


def _worker_band() -> range:
    """This pytest-xdist worker's own ports, below the kernel's ephemeral range (32768-60999).

    A port the kernel hands out for ``bind(0)`` is free only until the test binds it again:
    in between, any outgoing connection on the machine may take it as its local port (CI saw
    a node fail with "Address already in use" that way). Ports below the ephemeral range are
    never taken by outgoing connections, and each worker has a band of its own.
    """
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
    low = 12000 + worker * PORT_BLOCK_BAND
    return range(low, low + PORT_BLOCK_BAND)


_next_in_band: dict[range, int] = {}


def _candidates(band: range, span: int):
    """Bases in ``band`` in turn from where the last call stopped, so no port is handed out twice
    before the band wraps (a port handed out but not bound yet still looks free)."""
    first = _next_in_band.setdefault(band, random.Random().randrange(len(band)))
    for i in range(len(band)):
        base = band[(first + i) % len(band)]
        if base + span < band.stop:
            _next_in_band[band] = (first + i + span + 1) % len(band)
            yield base


def free_port() -> int:
    """A port nothing listens on, from this worker's band (see _worker_band)."""
    return free_port_block((0,))


def free_port_block(offsets: tuple[int, ...]) -> int:
    """A base port with base + o free for every offset (``tierlog up --listen`` takes a run of them)."""
    band = _worker_band()
    for base in _candidates(band, max(offsets)):
        if all(_bindable(base + o) for o in offsets):
            return base
    raise RuntimeError(f"no free block of ports for offsets {offsets} in {band.start}-{band.stop}")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class NodeProcess:
    """One node: ``start()``, ``stop()`` (SIGTERM), ``kill9()``, ``restart()``."""

    def __init__(self, root: Path, node_id: int = 1, port: int | None = None, props: dict | None = None):
        self.root = Path(root)
        self.node_id = node_id
        self.port = port or free_port()
        self.data_dir = self.root / "data"
        self.config_path = self.root / "server.properties"
        self.log_path = self.root / "node.log"
        self.proc: subprocess.Popen | None = None
        self.launcher: list[str] = []       # a command prefix the node runs under (e.g. unshare)
        self.announced: dict[str, str] = {}      # the fields of its last "node <id> ..." line
        self.props = {"node.id": str(node_id), "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                      "log.dirs": str(self.data_dir), **(props or {})}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> NodeProcess:
        return self.spawn().wait_ready()

    def spawn(self, ready_timeout_s: float = READY_TIMEOUT_S) -> NodeProcess:
        """Start the process without waiting for it (see :func:`start_all`).

        From the thread that will outlive the node (the main one): the node's parent-death
        signal (tierlog.parent_watch, Linux's PR_SET_PDEATHSIG) fires when the *thread* that
        started it ends, so a node started from a worker thread stops when that thread does."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        with open(self.log_path, "ab") as log:      # the child keeps its own descriptor
            self.proc = subprocess.Popen([*self.launcher, sys.executable, "-m", "tierlog.cli.main", "node", "--config",
                                          str(self.config_path)], stdout=subprocess.PIPE, stderr=log, text=True,
                                         env=child_env())     # it ends with this test process
        self._ready_deadline = time.monotonic() + ready_timeout_s
        return self

    def wait_ready(self) -> NodeProcess:
        """Until the node prints its ready line; a node that exits or stays silent is an error."""
        while time.monotonic() < self._ready_deadline:
            line = self.proc.stdout.readline()
            if line.startswith("node "):     # node <id> roles=... pid=... listen=... [metrics=...]
                self.announced = dict(w.split("=", 1) for w in line.split()[2:] if "=" in w)
                return self
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError(f"node {self.node_id} did not start; log:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM and wait; a node paused with SIGSTOP is resumed first (it would not act on SIGTERM)."""
        self.signal_stop()
        if self.proc is not None:
            self.proc.wait(timeout)
        return self.proc.returncode if self.proc else 0

    def signal_stop(self) -> None:
        """SIGTERM without waiting (see :func:`stop_all`)."""
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)

    def kill9(self) -> None:
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def restart(self) -> NodeProcess:
        self.stop()
        return self.start()


def start_all(nodes: list[NodeProcess]) -> list[NodeProcess]:
    """Spawn every node, then wait for each to be ready: the nodes start side by side (brokers
    retry their registration until the controllers answer, as under `tierlog up`)."""
    try:
        for n in nodes:
            n.spawn(READY_TIMEOUT_S * len(nodes))
        for n in nodes:
            n.wait_ready()
    except BaseException:
        stop_all(nodes)         # none left running behind a failed start
        raise
    return nodes


def stop_all(nodes: list[NodeProcess], timeout: float = 30) -> None:
    """SIGTERM every node, then wait for each: they shut down side by side."""
    for n in nodes:
        n.signal_stop()
    for n in nodes:
        n.stop(timeout)


def one_controller_and_brokers(root: Path, controller_port: int, broker_ports: list[int],
                               common: dict) -> list[NodeProcess]:
    """Node 1, a controller on a CONTROLLER listener, then a broker per port (ids 2, 3, ...) on a
    BROKER listener, all with ``common`` (the security tests' small clusters); not started."""
    nodes = [NodeProcess(root / "c1", 1, controller_port, {**common, "process.roles": "controller",
                                                           "listeners": f"CONTROLLER://127.0.0.1:{controller_port}"})]
    nodes += [NodeProcess(root / f"b{i + 2}", i + 2, p, {**common, "process.roles": "broker",
                                                         "listeners": f"BROKER://127.0.0.1:{p}"})
              for i, p in enumerate(broker_ports)]
    return nodes
