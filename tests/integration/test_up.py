"""`tierlog up`: one line per node, the bootstrap line, clients served, a clean stop on SIGTERM."""
import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from clients import consume_all, create_topic, produce_all
from cluster import wait_for
from confluent_kafka.admin import AdminClient, NewTopic
from nodeproc import free_port_block

from tierlog.net import free_ports

NODE_LINE = re.compile(r"^node (\d+) roles=([a-z,]+) pid=(\d+) listen=127\.0\.0\.1:(\d+) "
                       r"metrics=127\.0\.0\.1:(\d+)$")


def _up(tmp_path, *args, port=None):
    # brokers take port, port + 1, ...; controllers 100 above (tierlog up's CONTROLLER_PORT_OFFSET);
    # node N's metrics port + 200 + N (METRICS_PORT_OFFSET); port 0: tierlog up chooses
    if port is None:
        port = free_port_block((0, 1, 2, 100, 101, 102, *range(201, 207)))
    proc = subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", "up", "--data-dir", str(tmp_path / "d"),
                             "--listen", f"127.0.0.1:{port}", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    nodes = []
    while True:
        line = proc.stdout.readline().strip()
        assert line, proc.stderr.read()
        if line.startswith("bootstrap.servers="):
            return proc, port, nodes, line.split("=", 1)[1]
        m = NODE_LINE.match(line)
        assert m, line
        nodes.append((int(m[1]), m[2]))
        proc.pids = getattr(proc, "pids", {}) | {int(m[1]): int(m[3])}
        proc.listen = getattr(proc, "listen", {}) | {int(m[1]): int(m[4])}
        proc.metrics = getattr(proc, "metrics", {}) | {int(m[1]): int(m[5])}


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0


def test_up_runs_three_controllers_and_three_brokers(tmp_path):
    proc, port, nodes, bootstrap = _up(tmp_path, "--set", "log.segment.bytes=1048576")
    try:
        assert nodes == [(1, "controller"), (2, "controller"), (3, "controller"),
                         (4, "broker"), (5, "broker"), (6, "broker")]
        assert bootstrap == ",".join(f"127.0.0.1:{port + i}" for i in range(3))
        create_topic(bootstrap, "up-topic", 3)
        produce_all(bootstrap, "up-topic", [(i % 3, None, b"x" * 100, None, None) for i in range(9000)])
        assert len(consume_all(bootstrap, "up-topic", 3, 9000)) == 9000
        props = (tmp_path / "d" / "node-4" / "server.properties").read_text()
        assert "log.segment.bytes=1048576" in props and f"listeners=PLAINTEXT://127.0.0.1:{port}" in props
        assert "process.roles=broker" in props and "controller.quorum.bootstrap.servers=127.0.0.1:" in props
        _kill9_one_broker_loses_nothing(proc, bootstrap)
    finally:
        _stop(proc)


def _kill9_one_broker_loses_nothing(proc, bootstrap):
    """The issue's "done when": a kill -9 of any one broker loses no acknowledged record."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic("up-rf3", 3, 3)])["up-rf3"].result(20)
    produce_all(bootstrap, "up-rf3", [(i % 3, None, str(i).encode(), None, None) for i in range(3000)])
    started_as = Path(f"/proc/{proc.pids[5]}/cmdline").read_bytes().decode().split("\0")[:-1]
    os.kill(proc.pids[5], signal.SIGKILL)
    got = consume_all(bootstrap, "up-rf3", 3, 3000, timeout_s=90)
    assert sorted(int(m.value()) for m in got) == list(range(3000))
    assert proc.poll() is None, "tierlog up keeps the other nodes running"
    hint = _stderr_line(proc, "node-5 exited").split("restart it with: ")[1]
    assert shlex.split(hint)[1:] == started_as[started_as.index("node"):], (hint, started_as)


def _stderr_line(proc, start: str, timeout_s: float = 30) -> str:
    """The first line of ``proc``'s stderr that starts with ``start`` (read until a deadline)."""
    deadline = time.monotonic() + timeout_s
    while select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))[0]:
        line = proc.stderr.readline()
        if line.startswith(start) or not line:
            return line
    raise AssertionError(f"no line starting {start!r} on stderr in {timeout_s} s")


def test_up_combined_single_process(tmp_path):
    proc, port, nodes, bootstrap = _up(tmp_path, "--controllers", "1", "--brokers", "1", "--combined")
    try:
        assert nodes == [(1, "broker,controller")]
        assert bootstrap == f"127.0.0.1:{port}"
        assert proc.listen[1] == port, "the node line names the broker listener, not the controller's"
        create_topic(bootstrap, "one", 1)
        produce_all(bootstrap, "one", [(0, None, b"v", None, None)] * 100)
        assert len(consume_all(bootstrap, "one", 1, 100)) == 100
        log = tmp_path / "d" / "node-1" / "node.log"
        cmdline = Path(f"/proc/{proc.pids[1]}/cmdline").read_bytes().split(b"\0")
        assert cmdline[cmdline.index(b"--log-file") + 1] == str(log).encode(), "the node rotates its own log"
        assert "serving" in log.read_text()
        assert proc.metrics == {1: port + 201}
        assert urllib.request.urlopen(f"http://127.0.0.1:{port + 201}/metrics", timeout=5).status == 200
    finally:
        _stop(proc)
    again, _, _, _ = _up(tmp_path, "--controllers", "1", "--brokers", "1", "--combined", port=port)
    _stop(again)
    assert again.metrics == {1: port + 201}, "the same metrics port after a restart"
    scrape = (tmp_path / "d" / "monitoring" / "prometheus.yml").read_text()
    assert f"- targets: ['127.0.0.1:{port + 201}']" in scrape and "role: 'broker,controller'" in scrape
    assert json.loads((tmp_path / "d" / "monitoring" / "grafana-dashboard.json").read_text())["uid"]


def test_up_adds_a_controller_to_a_running_cluster(tmp_path):
    """KIP-853: a new `tierlog up` cluster is a dynamic quorum, `up --add-controller` makes one more
    process a voter while it runs, and a later `up` of the data dir starts that voter too."""
    proc, port, _, bootstrap = _up(tmp_path, "--controllers", "1", "--brokers", "1")
    add = None
    try:
        add = subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", "up", "--data-dir", str(tmp_path / "d"),
                                "--add-controller"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        node_line = add.stdout.readline().strip()
        assert NODE_LINE.match(node_line) and node_line.startswith("node 3 roles=controller "), node_line
        added = add.stdout.readline().strip()
        assert added.startswith("added controller 3 ") and added.endswith("voters now [1,3]"), \
            added or add.stderr.read()
        described = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "metadata", "quorum",
                                    "--bootstrap-controller", f"127.0.0.1:{port + 100}", "--json"],
                                   capture_output=True, text=True, timeout=60, check=True)
        assert {v["node_id"] for v in json.loads(described.stdout)["voters"]} == {1, 3}
        create_topic(bootstrap, "after-add", 1)
    finally:
        # the first cluster before the added voter: its broker's controlled shutdown needs a
        # quorum of [1,3] (the other order waited 10 s for it)
        _stop(proc)
        if add is not None:
            _stop(add)
    again, _, nodes, _ = _up(tmp_path, "--controllers", "1", "--brokers", "1", port=port)
    _stop(again)
    assert nodes == [(1, "controller"), (2, "broker"), (3, "controller")]


def test_up_on_port_0_takes_free_ports_below_the_ephemeral_range(tmp_path):
    """What ``./dev pipeline`` and scripts beside a running cluster use (net/free_ports.py)."""
    proc, _, nodes, bootstrap = _up(tmp_path, "--controllers", "1", "--brokers", "1", "--combined", port=0)
    try:
        port = int(bootstrap.rsplit(":", 1)[1])
        assert nodes == [(1, "broker,controller")] and proc.listen[1] == port
        assert port >= free_ports.LOWEST_PORT and port + 201 < free_ports.ephemeral_start()
        assert proc.metrics == {1: port + 201}
        create_topic(bootstrap, "anywhere", 1)
        produce_all(bootstrap, "anywhere", [(0, None, b"v", None, None)] * 10)
        assert len(consume_all(bootstrap, "anywhere", 1, 10)) == 10
    finally:
        _stop(proc)


def test_up_refuses_a_bad_plan_with_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "up", "--controllers", "3", "--brokers", "1",
                        "--combined", "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("tierlog: error: --combined")


def test_nodes_stop_when_up_is_killed(tmp_path):
    """A `tierlog up` killed with SIGKILL (no chance to stop its nodes) leaves no node running."""
    base = free_port_block((1, 2, 3))
    proc, _, _, _ = _up(tmp_path, "--controllers", "1", "--brokers", "2",
                        "--set", f"metrics.prometheus.listener=127.0.0.1:{base}")
    assert proc.metrics == {1: base + 1, 2: base + 2, 3: base + 3}, "the listener's port + node id"
    pids = list(proc.pids.values())
    assert len(pids) == 3
    proc.kill()
    proc.wait(10)
    try:
        wait_for(lambda: not any(_alive(p) for p in pids), 60, "every node of the killed `tierlog up` to exit")
    finally:
        for pid in filter(_alive, pids):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"
