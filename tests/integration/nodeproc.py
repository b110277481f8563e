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

READY_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT_BLOCK_BAND = 4000      # ports per xdist worker for free_port_block


def free_port_block(offsets: tuple[int, ...]) -> int:
    """A base port with base + o free for every offset (``tierlog up --listen`` takes a run of them).

    free_port() hands out ephemeral ports, and the ones after it may belong to another test's
    outgoing connection a moment later. These come from below the kernel's ephemeral range,
    which outgoing connections never use, in a band of its own per pytest-xdist worker.
    """
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
    low = 12000 + worker * PORT_BLOCK_BAND
    for base in random.Random().sample(range(low, low + PORT_BLOCK_BAND - max(offsets)), 200):
        if all(_bindable(base + o) for o in offsets):
            return base
    raise RuntimeError(f"no free block of ports for offsets {offsets} in {low}-{low + PORT_BLOCK_BAND}")


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
        self.announced: dict[str, str] = {}      # the fields of its last "node <id> ..." line
        self.props = {"node.id": str(node_id), "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                      "log.dirs": str(self.data_dir), **(props or {})}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> NodeProcess:
        self.root.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        with open(self.log_path, "ab") as log:      # the child keeps its own descriptor
            self.proc = subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", "node", "--config",
                                          str(self.config_path)], stdout=subprocess.PIPE, stderr=log, text=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
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
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        return self.proc.returncode if self.proc else 0

    def kill9(self) -> None:
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def restart(self) -> NodeProcess:
        self.stop()
        return self.start()
