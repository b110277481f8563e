"""A data dir serves one node at a time: a second node or a second `tierlog up` on it is refused with
one line naming the dir and the holder's pid (Kafka's ``.lock``), and `tierlog up` refuses data of
another cluster layout.

Before the locks a second node on the same data dir started, shared the logs and corrupted them
(CRC mismatches every 500 ms), with both terminals silent.
"""
import subprocess
import sys

from nodeproc import free_port
from test_up import _stop, _up


def _node(config_path, props: dict) -> subprocess.CompletedProcess:
    config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", "node", "--config", str(config_path)],
                          capture_output=True, text=True, timeout=60, check=False)


def _one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("tierlog: error: "), r.stderr
    assert "Traceback" not in r.stderr
    return line


def test_a_second_node_on_a_data_dir_in_use_is_refused(node, tmp_path):
    second = {"node.id": "1", "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}"}
    line = _one_line_error(_node(tmp_path / "second.properties", {**second, "log.dirs": str(node.data_dir)}))
    assert f"{node.data_dir} is in use by another tierlog node (pid {node.proc.pid})" in line
    line = _one_line_error(_node(tmp_path / "third.properties", {**second, "log.dirs": str(tmp_path / "own"),
                                                                 "metadata.log.dir": str(node.data_dir)}))
    assert f"(pid {node.proc.pid})" in line
    assert node.alive() and node.restart().alive()      # released by the stop, taken again


def test_a_second_up_on_a_running_data_dir_is_refused(tmp_path):
    proc, port, _, _ = _up(tmp_path, "--controllers", "1", "--brokers", "1", "--combined")
    try:
        props = tmp_path / "d" / "node-1" / "server.properties"
        before = props.read_text()
        r = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "up", "--controllers", "1", "--brokers", "1",
                            "--combined", "--data-dir", str(tmp_path / "d"), "--listen", f"127.0.0.1:{port + 7}"],
                           capture_output=True, text=True, timeout=60, check=False)
        line = _one_line_error(r)
        assert f"node-1/data is in use by another tierlog node (pid {proc.pids[1]})" in line
        assert props.read_text() == before
    finally:
        _stop(proc)


def test_up_refuses_data_of_another_layout(tmp_path):
    proc, _, nodes, _ = _up(tmp_path, "--controllers", "1", "--brokers", "1")
    _stop(proc)
    assert nodes == [(1, "controller"), (2, "broker")]
    r = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "up", "--controllers", "1", "--brokers", "1",
                        "--combined", "--data-dir", str(tmp_path / "d")],
                       capture_output=True, text=True, timeout=60, check=False)
    line = _one_line_error(r)
    assert "holds a cluster of 1 controllers + 1 brokers" in line and "node 1 was controller" in line
