"""`tierlog up`: prints the bootstrap line, serves clients, stops cleanly on SIGTERM."""
import signal
import subprocess
import sys

from clients import consume_all, create_topic, produce_all
from nodeproc import free_port


def test_up_serves_and_stops_cleanly(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", "up", "--data-dir", str(tmp_path / "d"),
                             "--listen", f"127.0.0.1:{port}", "--set", "log.segment.bytes=1048576"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line == f"bootstrap.servers=127.0.0.1:{port}", proc.stderr.read() if not line else line
        create_topic(line.split("=", 1)[1], "up-topic", 2)
        produce_all(f"127.0.0.1:{port}", "up-topic", [(i % 2, None, b"x" * 100, None, None) for i in range(20_000)])
        assert len(consume_all(f"127.0.0.1:{port}", "up-topic", 2, 20_000)) == 20_000
        props = (tmp_path / "d" / "node-1" / "server.properties").read_text()
        assert "log.segment.bytes=1048576" in props and f"listeners=PLAINTEXT://127.0.0.1:{port}" in props
        assert len(list((tmp_path / "d" / "node-1" / "data" / "up-topic-0").glob("*.log"))) >= 1
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def test_up_refuses_more_brokers_with_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "up", "--brokers", "3",
                        "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("tierlog: error: --brokers")
