"""A node's start: server.properties read as Java properties, and the checks of S3 remote storage.

Real `tierlog node` processes; S3 is a moto server process. A node whose remote
storage cannot be used (no credentials, no bucket) exits at once with one
`tierlog: error:` line, or creates the bucket when told to.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import boto3
import pytest
from cluster import wait_for
from nodeproc import READY_TIMEOUT_S, NodeProcess, free_port, free_port_block
from tiered import MOTO_CREDENTIALS, MOTO_REGION, MotoServer

pytestmark = pytest.mark.integration

ERROR_PREFIX = "tierlog: error: "
NO_CREDENTIALS_ENV = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
                      "AWS_CONFIG_FILE": "/nonexistent"}


class Started:
    """A `tierlog node` process: ``ready`` (its node line) or ``exit_code`` and ``errors``."""

    def __init__(self, root: Path, config_text: str, env: dict[str, str]):
        root.mkdir(parents=True, exist_ok=True)
        (root / "server.properties").write_text(config_text)
        self.log_path = root / "node.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", "node", "--config",
                                          str(root / "server.properties")],
                                         stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        self.ready = self._wait()

    def _wait(self) -> str | None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("node "):
                return line.strip()
            if not line:
                self.proc.wait(READY_TIMEOUT_S)
                return None
        raise AssertionError(f"node neither ready nor exited: {self.log_path.read_text()[-2000:]}")

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.log_path.read_text().splitlines() if ln.startswith(ERROR_PREFIX)]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return {**base, **extra}


def _broker_props(root: Path, port: int) -> dict[str, str]:
    return {"node.id": "1", "listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(root / "data"),
            "remote.log.storage.system.enable": "true"}


def _text(props: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def test_server_properties_are_read_as_java_properties(tmp_path):
    port = free_port()
    data = tmp_path / "data"
    text = (f"# Kafka's syntax, all of it\n! a comment too\nnode.id 1\nprocess.roles = broker,\\\n"
            f"    controller\nlisteners: PLAINTEXT://127.0.0.1:{port}\n"
            f"log.dirs={data.parent}/d\\u0061ta\n")       # \u0061 is "a"
    node = Started(tmp_path / "node", text, _env())
    try:
        assert node.ready, node.log_path.read_text()[-2000:]
        assert " roles=broker,controller " in node.ready and f" listen=127.0.0.1:{port}" in node.ready
        assert (data / "meta.properties").exists()
    finally:
        node.stop()


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    with MotoServer(tmp_path_factory.mktemp("moto")) as server:
        yield server


def _s3_props(moto: MotoServer, bucket: str) -> dict[str, str]:
    return {**moto.settings(), "rsm.config.storage.s3.bucket.name": bucket}


def test_a_missing_bucket_stops_the_start_with_one_line(tmp_path, moto):
    bucket = f"missing-{uuid.uuid4().hex[:8]}"
    props = {**_broker_props(tmp_path, free_port()), **_s3_props(moto, bucket)}
    node = Started(tmp_path / "node", _text(props), _env(**MOTO_CREDENTIALS))
    assert node.ready is None and node.proc.returncode == 1
    assert node.error_lines == [(f"{ERROR_PREFIX}remote storage s3://{bucket}/cluster/: S3 bucket {bucket} "
                                 "does not exist: create it, or set rsm.config.storage.s3.create.bucket=true")]


def test_no_credentials_stop_the_start_with_one_line(tmp_path, moto):
    props = {**_broker_props(tmp_path, free_port()), **moto.settings()}
    node = Started(tmp_path / "node", _text(props), _env(**NO_CREDENTIALS_ENV))
    assert node.ready is None and node.proc.returncode == 1
    [line] = node.error_lines
    assert line.startswith(f"{ERROR_PREFIX}remote storage s3://{moto.bucket}/cluster/: no AWS credentials found")


def test_create_bucket_true_creates_a_missing_bucket(tmp_path, moto):
    bucket = f"created-{uuid.uuid4().hex[:8]}"
    props = {**_broker_props(tmp_path, free_port()), **_s3_props(moto, bucket),
             "rsm.config.storage.s3.create.bucket": "true"}
    node = Started(tmp_path / "node", _text(props), _env(**MOTO_CREDENTIALS))
    try:
        assert node.ready, node.log_path.read_text()[-2000:]
        s3 = boto3.client("s3", endpoint_url=moto.endpoint, region_name=MOTO_REGION,
                          aws_access_key_id=MOTO_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=MOTO_CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
        s3.head_bucket(Bucket=bucket)
    finally:
        node.stop()


def test_up_reports_the_nodes_error_once(tmp_path, moto):
    """`tierlog up` names the node and gives its one line, without a second `tierlog: error:`."""
    bucket = f"missing-{uuid.uuid4().hex[:8]}"
    settings = [f"--set={k}={v}" for k, v in moto.settings().items() if "bucket" not in k and "prefix" not in k]
    result = subprocess.run(
        [sys.executable, "-m", "tierlog.cli.main", "up", "--data-dir", str(tmp_path / "d"), "--combined",
         "--controllers", "1", "--brokers", "1", "--listen", f"127.0.0.1:{free_port_block((0, 100, 201))}",
         "--remote-storage", f"s3://{bucket}/p", *settings],
        capture_output=True, text=True, timeout=120, env=_env(**MOTO_CREDENTIALS), check=False)
    assert result.returncode == 1
    assert result.stderr == (f"{ERROR_PREFIX}node 1 failed to start: remote storage s3://{bucket}/p/: S3 bucket "
                             f"{bucket} does not exist: create it, or set rsm.config.storage.s3.create.bucket=true "
                             f"(see {tmp_path / 'd' / 'node-1' / 'node.log'})\n")


def test_node_log_rotates_by_size(tmp_path):
    """A real node logging to --log-file: past the size the file is rotated (SIGUSR1's task dumps
    are a few KiB each), at most the backups are kept, and its stderr follows the new file."""
    root = tmp_path / "node"
    root.mkdir()
    port = free_port()
    (root / "server.properties").write_text(_text({"node.id": "1", "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                                                   "log.dirs": str(root / "data")}))
    log = root / "node.log"
    proc = subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", "node", "--config",
                             str(root / "server.properties"), "--log-file", str(log),
                             "--log-file-max-bytes", "2048", "--log-file-backups", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env())
    try:
        assert proc.stdout.readline().startswith("node 1 "), log.read_text()[-2000:]
        deadline = time.monotonic() + 30
        while not (root / "node.log.3").exists():
            assert time.monotonic() < deadline, sorted(p.name for p in root.glob("node.log*"))
            proc.send_signal(signal.SIGUSR1)
            time.sleep(0.2)
        for _ in range(3):
            proc.send_signal(signal.SIGUSR1)
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    assert sorted(p.name for p in root.glob("node.log*")) == ["node.log", "node.log.1", "node.log.2", "node.log.3"]
    assert "node 1 stopped" in log.read_text()
    assert "SIGUSR1" in (root / "node.log.1").read_text()


def test_a_broker_that_cannot_register_stops_on_sigterm(tmp_path):
    """SIGTERM cancels the start: a broker whose controllers never answer waits up to 120 s
    (tierlog.node.READY_TIMEOUT_S) to be unfenced, but stops at once when told to."""
    port, nobody = free_port(), free_port()
    props = {"node.id": "1", "process.roles": "broker", "listeners": f"PLAINTEXT://127.0.0.1:{port}",
             "log.dirs": str(tmp_path / "data"), "controller.listener.names": "CONTROLLER",
             "controller.quorum.voters": f"2@127.0.0.1:{nobody}"}
    node = NodeProcess(tmp_path / "node", 1, port, props).spawn()
    try:
        wait_for(lambda: _accepts(port), 60, "the broker listening while it tries to register")
        node.proc.send_signal(signal.SIGTERM)
        node.proc.wait(30)           # TimeoutExpired when it sits out the ready timeout
        assert "node 1 stopped" in node.log_tail(), node.log_tail()
    finally:
        node.kill9()


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
