"""KIP-951's experiment: produce latency while partition leadership moves, with and without leader hints.

    python bench/kip951.py                 # 90 s of moves, about 3 min in all
    python bench/kip951.py --seconds 30    # a shorter run

Starts ``tierlog up --controllers 1 --brokers 3`` in a temp dir and one topic of
``--partitions`` (50) partitions, replication factor 3, ``min.insync.replicas=2``.
Two fixed-rate acks=all producers of 1 KiB records run side by side for the same
``--seconds``, each a ``bench/workload.py rate`` process:

* ``hints``: confluent-kafka from the project's environment (librdkafka >= 2.5, which
  follows KIP-951's CurrentLeader / NodeEndpoints hints);
* ``no-hints``: confluent-kafka 2.4.0 (librdkafka 2.4.0, no KIP-951) from its own
  environment ``bench/.venv-ck240``, created on first use.

Meanwhile the leadership of every partition moves again and again, as in the KIP
(no hard kills): each round rotates every partition's replica list
(AlterPartitionReassignments, same replicas in a new order) and runs a preferred
election (ElectLeaders), so each round moves every leader; every ``--shutdown-every``
rounds one broker instead stops with a controlled shutdown (SIGTERM) and is started
again. Reported per client: p50 / p99 / p99.9 / max over the whole run (all of it is
during moves), and latency per second of send time.

Writes ``results/kip951_<timestamp>.json``, ``results/kip951_latest.json`` and
``results/kip951.png``.
"""
from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from machine import facts as machine_facts
from replication import Cluster

from tierlog.cli.broker_wire import BrokerWire
from tierlog.parent_watch import child_env
from tierlog.protocol.api import ApiKey

OLD_CLIENT = "confluent-kafka==2.4.0"
OLD_ENV = HERE / ".venv-ck240"
TOPIC = "kip951"
RECORD_SIZE = 1024
MIB = 1 << 20
PREFERRED = 0


def old_client_python() -> Path:
    """The interpreter of an environment with confluent-kafka 2.4.0 (made on first use)."""
    python = OLD_ENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(OLD_ENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", OLD_CLIENT], check=True)
    return python


def librdkafka_version(python: Path | str) -> str:
    out = subprocess.run([str(python), "-c", "import confluent_kafka as c; print(c.libversion()[0])"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


class Mover:
    """Moves every partition's leadership, round after round, until stopped."""

    def __init__(self, bootstrap: str, partitions: int, round_s: float, shutdown_every: int, data_dir: Path):
        self.bootstrap, self.partitions, self.round_s = bootstrap, partitions, round_s
        self.shutdown_every, self.data_dir = shutdown_every, data_dir
        self.rounds: list[dict] = []
        self.restarted: list[subprocess.Popen] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self.round_s):
            n += 1
            start = time.monotonic()
            if self.shutdown_every and n % self.shutdown_every == 0:
                kind, moved = "controlled-shutdown", self._bounce(n)
            else:
                kind, moved = "preferred-election", self._rotate_and_elect()
            self.rounds.append({"round": n, "kind": kind, "moved": moved,
                                "seconds": round(time.monotonic() - start, 3), "at_s": round(start, 3)})

    def _wire(self) -> BrokerWire:
        return BrokerWire(self.bootstrap, 30.0)

    def _assignments(self, wire: BrokerWire) -> dict[int, tuple[list[int], int]]:
        body = {"Topics": [{"Name": TOPIC}], "AllowAutoTopicCreation": False}
        resp = wire.call(ApiKey.METADATA, body, 12, "Metadata")
        return {p["PartitionIndex"]: (p["ReplicaNodes"], p["LeaderId"]) for p in resp["Topics"][0]["Partitions"]}

    def _rotate_and_elect(self) -> int:
        with self._wire() as wire:
            before = self._assignments(wire)
            parts = [{"PartitionIndex": i, "Replicas": r[1:] + r[:1]} for i, (r, _) in before.items()]
            wire.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, {"TimeoutMs": 30000, "AllowReplicationFactorChange": False,
                      "Topics": [{"Name": TOPIC, "Partitions": parts}]}, 1, "AlterPartitionReassignments")
            wire.call(ApiKey.ELECT_LEADERS, {"ElectionType": PREFERRED, "TimeoutMs": 30000, "TopicPartitions": [
                {"Topic": TOPIC, "Partitions": list(before)}]}, 2, "ElectLeaders")
            after = self._assignments(wire)
        return sum(after[i][1] != before[i][1] for i in before)

    def _bounce(self, n: int) -> int:
        """Controlled shutdown of one broker (SIGTERM), then start it again."""
        with self._wire() as wire:
            before = self._assignments(wire)
        node_ids = sorted({b for r, _ in before.values() for b in r})
        node = node_ids[(n // self.shutdown_every) % len(node_ids)]
        config = self.data_dir / f"node-{node}" / "server.properties"
        pid = _pid_of(config)
        led = sum(leader == node for _, leader in before.values())
        subprocess.run(["kill", "-TERM", str(pid)], check=False)
        ours = [p for p in self.restarted if p.pid == pid]
        if ours:
            ours[0].wait(60)        # started here: reap it (kill -0 succeeds on a zombie)
        else:
            _wait_gone(pid)
        self.restarted.append(subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", "node", "--config",
                                                str(config)], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL, env=child_env()))
        return led


def _pid_of(config: Path) -> int:
    out = subprocess.run(["pgrep", "-f", "--", f"--config {config}"], capture_output=True, text=True, check=False)
    pids = [int(p) for p in out.stdout.split()]
    if not pids:
        raise RuntimeError(f"no process runs {config}")
    return pids[0]


def _wait_gone(pid: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if subprocess.run(["kill", "-0", str(pid)], capture_output=True, check=False).returncode:
            return
        time.sleep(0.05)
    raise RuntimeError(f"process {pid} did not stop")


def producer(python: Path | str, bootstrap: str, rate: int, seconds: float,
             retry_backoff_ms: int | None) -> subprocess.Popen:
    cmd = [str(python), str(HERE / "workload.py"), "rate", "--bootstrap", bootstrap, "--topic", TOPIC,
           "--acks", "all", "--record-size", str(RECORD_SIZE), "--linger-ms", "5",
           "--mib-per-s", str(rate * RECORD_SIZE / MIB), "--seconds", str(seconds), "--timeline"]
    if retry_backoff_ms is not None:
        cmd += ["--retry-backoff-ms", str(retry_backoff_ms)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def create_topic(bootstrap: str, partitions: int) -> None:
    cmd = [sys.executable, str(HERE / "workload.py"), "rate", "--bootstrap", bootstrap, "--topic", TOPIC,
           "--acks", "all", "--mib-per-s", "0.01", "--seconds", "1", "--create", "--partitions", str(partitions),
           "--replication-factor", "3", "--topic-config", "min.insync.replicas=2"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)


def run(args) -> dict:
    clients = {"hints": sys.executable, "no-hints": old_client_python()}
    versions = {name: librdkafka_version(py) for name, py in clients.items()}
    with tempfile.TemporaryDirectory(prefix="tierlog-kip951-") as tmp:
        cluster = Cluster(Path(tmp), 3, 1)
        mover = None
        try:
            create_topic(cluster.bootstrap, args.partitions)
            procs = {name: producer(py, cluster.bootstrap, args.rate, args.seconds, args.retry_backoff_ms)
                     for name, py in clients.items()}
            time.sleep(args.warmup_s)
            mover = Mover(cluster.bootstrap, args.partitions, args.round_s, args.shutdown_every,
                          Path(tmp) / "data")
            mover.start()
            outs = {name: p.communicate(timeout=args.seconds + 600)[0] for name, p in procs.items()}
            mover.stop()
        finally:
            for p in mover.restarted if mover else []:
                p.send_signal(signal.SIGTERM)
                p.wait(60)
            cluster.stop()
    results = {name: json.loads(out.strip().splitlines()[-1]) for name, out in outs.items()}
    return {"librdkafka": versions, "clients": results, "rounds": mover.rounds,
            "moves": sum(r["moved"] for r in mover.rounds)}


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for name, r in result["clients"].items():
        t = [b["t_s"] for b in r["timeline"]]
        ax.plot(t, [b["max"] for b in r["timeline"]], label=f"{name} ({result['librdkafka'][name]}) max")
        ax.plot(t, [b["p99"] for b in r["timeline"]], linestyle="--", label=f"{name} p99")
    ax.set_yscale("log")
    ax.set_xlabel("send time (s)")
    ax.set_ylabel("produce latency (ms)")
    ax.set_title(f"acks=all produce latency while leadership moves ({result['moves']} leader moves)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--rate", type=int, default=250, help="records/s per producer")
    ap.add_argument("--partitions", type=int, default=50)
    ap.add_argument("--round-s", type=float, default=5.0, help="seconds between move rounds")
    ap.add_argument("--shutdown-every", type=int, default=4, help="every Nth round is a controlled shutdown (0: none)")
    ap.add_argument("--warmup-s", type=float, default=3.0)
    ap.add_argument("--retry-backoff-ms", type=int, default=None,
                    help="both clients' retry.backoff.ms (default: librdkafka's 100)")
    ap.add_argument("--tag", default="", help="suffix of the result files (kip951<tag>_latest.json)")
    args = ap.parse_args()
    result = run(args)
    result["machine"] = machine_facts()
    result["setup"] = vars(args)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"kip951{args.tag}_{stamp}.json", f"kip951{args.tag}_latest.json"):
        (HERE / "results" / name).write_text(json.dumps(result, indent=2) + "\n")
    plot(result, HERE / "results" / f"kip951{args.tag}.png")
    for name, r in result["clients"].items():
        lat = r["latency_ms"]
        print(f"{name:9} librdkafka {result['librdkafka'][name]:8} records {r['records']:6} errors {r['errors']} "
              f"p50 {lat['p50']:.1f} p99 {lat['p99']:.1f} p99.9 {lat['p99.9']:.1f} max {lat['max']:.1f} ms")
    print(f"{result['moves']} leader moves in {len(result['rounds'])} rounds; wrote results/kip951{args.tag}_latest.json")


if __name__ == "__main__":
    main()
