"""Controller quorum changes (KIP-853, issue 38) under an acks=all producer.

A ``tierlog up`` cluster (dynamic quorum) with 1 controller and ``--brokers`` (2) brokers, a
topic of ``--partitions`` (4) with replication factor 2, and one confluent-kafka producer
(acks=all, idempotent) at ``--rate`` (500) records/s for the whole run, timing every record's
ack (delivery report time - produce time). Steps, each timed from its command's start:

- ``baseline``: ``--settle`` seconds with nothing changing;
- ``add controller`` x2: ``tierlog up --add-controller`` (to the new voter set printed);
- ``remove controller``: ``tierlog metadata quorum remove-controller`` of a follower voter (to
  DescribeQuorum no longer listing it), then ``add it back`` (``add-controller``);
- ``kill -9 leader``: the active controller killed; to a new leader in DescribeQuorum, then
  ``--settle`` seconds more.

Per step: duration, the ack latency p50/p99/max of the records produced during it, the longest
gap between two acks in it. At the end every acknowledged record is read back (lost = acked
but not found with its value at its offset). Writes ``results/quorum_changes_<timestamp>.json``::

    nice -n 15 .venv/bin/python bench/quorum_changes.py [--rate 500] [--brokers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import machine
import wire
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.parent_watch import child_env

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC = "quorum-bench"
DESCRIBE_QUORUM = 55
UP_TIMEOUT_S = 180.0
STEP_TIMEOUT_S = 120.0
QUORUM_BODY = {"Topics": [{"TopicName": "__cluster_metadata", "Partitions": [{"PartitionIndex": 0}]}]}


def tierlog(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, env=child_env())


def field(line: str, name: str) -> str | None:
    return next((w.split("=", 1)[1] for w in line.split() if w.startswith(name + "=")), None)


class Cluster:
    """``tierlog up`` and the ``up --add-controller`` processes; node pids and controller ports."""

    def __init__(self, data_dir: Path, brokers: int):
        self.data_dir = data_dir
        self.procs: list[subprocess.Popen] = []
        self.pids: dict[int, int] = {}
        self.controller_ports: dict[int, int] = {}
        up = tierlog("up", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0", "--controllers", "1",
                     "--brokers", str(brokers))
        self.procs.append(up)
        self.bootstrap = self._read_until(up, lambda line: line.startswith("bootstrap.servers="), UP_TIMEOUT_S)
        self.bootstrap = self.bootstrap.split("=", 1)[1]

    def _read_until(self, proc: subprocess.Popen, done, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{proc.args[3:]} ended early")
            line = line.strip()
            if line.startswith("node "):
                node_id, pid = int(line.split()[1]), int(field(line, "pid") or 0)
                self.pids[node_id] = pid
                if "controller" in (field(line, "roles") or "") and "broker" not in (field(line, "roles") or ""):
                    self.controller_ports[node_id] = int((field(line, "listen") or ":0").rpartition(":")[2])
            if done(line):
                return line
        raise RuntimeError(f"{proc.args[3:]}: no expected line within {timeout_s}s")

    def add_controller(self) -> str:
        proc = tierlog("up", "--data-dir", str(self.data_dir), "--add-controller")
        self.procs.append(proc)
        return self._read_until(proc, lambda line: "voters now" in line, STEP_TIMEOUT_S)

    def live_controllers(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for n, p in self.controller_ports.items() if alive(self.pids[n]))

    def quorum(self) -> dict:
        for node_id, port in self.controller_ports.items():
            if not alive(self.pids[node_id]):
                continue
            try:
                part = wire.call(port, DESCRIBE_QUORUM, 2, QUORUM_BODY, timeout_s=3)["Topics"][0]["Partitions"][0]
            except (OSError, KeyError, IndexError):
                continue
            if part["ErrorCode"] == 0 and part["LeaderId"] >= 0:
                return part
        return {}

    def voters(self) -> dict[int, bytes]:
        return {v["ReplicaId"]: bytes(v["ReplicaDirectoryId"]) for v in self.quorum().get("CurrentVoters", [])}

    def run_cli(self, *args: str) -> str:
        proc = tierlog("metadata", "quorum", "--bootstrap-controller", self.live_controllers(), *args)
        out, _ = proc.communicate(timeout=STEP_TIMEOUT_S)
        if proc.returncode != 0:
            raise RuntimeError(f"tierlog metadata quorum {' '.join(args)}: {out}")
        return out.strip()

    def stop(self) -> None:
        for proc in reversed(self.procs):            # the up processes stop their nodes
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGINT if proc is self.procs[0] else signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
        for pid in self.pids.values():                # any node the up processes left behind
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                            # a zombie of ours is gone too
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


class Paced(threading.Thread):
    """acks=all at ``rate`` records/s; (send time, ack time, partition, offset, value) per ack."""

    def __init__(self, bootstrap: str, rate: int):
        super().__init__(daemon=True)
        self.rate = rate
        self.acks: list[tuple[float, float, int, int, bytes]] = []
        self.errors: list[str] = []
        self.sent = 0
        self._done = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 300000})

    def _delivered(self, err, msg, sent: float) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acks.append((sent, time.monotonic(), msg.partition(), msg.offset(), msg.value()))

    def run(self) -> None:
        t0 = time.monotonic()
        while not self._done.is_set():
            due = t0 + self.sent / self.rate
            now = time.monotonic()
            if now < due:
                self.producer.poll(due - now)
                continue
            value = b"%012d" % self.sent
            self.producer.produce(TOPIC, value, on_delivery=lambda e, m, s=now: self._delivered(e, m, s))
            self.sent += 1
            self.producer.poll(0)
        self.producer.flush(300)

    def finish(self) -> None:
        self._done.set()
        self.join()


def step_stats(acks, start: float, end: float) -> dict:
    lat = sorted((a - s) * 1000 for s, a, *_ in acks if start <= s < end)
    times = sorted(a for _, a, *_ in acks if start <= a < end)
    gap = max((b - a for a, b in zip([start, *times], [*times, end], strict=True)), default=end - start)

    def pct(q: float) -> float:
        return round(lat[min(len(lat) - 1, int(q * len(lat)))], 1) if lat else 0.0
    return {"duration_s": round(end - start, 2), "records": len(lat), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
            "max_ms": round(lat[-1], 1) if lat else 0.0, "max_ack_gap_ms": round(gap * 1000, 1)}


def wait_for(cond, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not within {timeout_s}s: {what}")
        time.sleep(0.05)


def read_back(bootstrap: str, partitions: int) -> dict[tuple[int, int], bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "quorum-bench-check", "enable.auto.commit": False})
    ends = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1] for p in range(partitions)}
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    stored: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(
            sum(1 for (p, _) in stored if p == q) < ends[q] for q in range(partitions)):
        for m in c.consume(1000, 1.0):
            if m.error() is None:
                stored[(m.partition(), m.offset())] = m.value()
    c.close()
    return stored


def run_steps(cluster: Cluster, producer: Paced, settle: float) -> list[dict]:
    steps: list[dict] = []

    def timed(name: str, action) -> None:
        start = time.monotonic()
        extra = action() or {}
        end = time.monotonic()
        steps.append({"step": name, "start": start, "end": end, "load": machine.loadavg(), **extra})
        print(f"{name}: {end - start:.2f}s {extra}", flush=True)

    timed("baseline", lambda: time.sleep(settle))
    timed("add controller (1 -> 2)", lambda: {"out": cluster.add_controller()})
    timed("add controller (2 -> 3)", lambda: {"out": cluster.add_controller()})
    voters = cluster.voters()
    leader = cluster.quorum()["LeaderId"]
    follower = max(v for v in voters if v != leader)

    def remove() -> dict:
        out = cluster.run_cli("remove-controller", "--controller-id", str(follower),
                              "--controller-directory-id", wire_uuid(voters[follower]))
        wait_for(lambda: follower not in cluster.voters(), STEP_TIMEOUT_S, f"controller {follower} removed")
        return {"out": out}
    timed(f"remove controller {follower}", remove)

    def add_back() -> dict:
        conf = cluster.data_dir / f"node-{follower}" / "server.properties"
        out = cluster.run_cli("--timeout", "60", "add-controller", "--command-config", str(conf))
        wait_for(lambda: follower in cluster.voters(), STEP_TIMEOUT_S, f"controller {follower} back")
        return {"out": out}
    timed(f"add controller {follower} back", add_back)

    def kill_leader() -> dict:
        old = cluster.quorum()["LeaderId"]
        kill_at = time.monotonic()
        os.kill(cluster.pids[old], signal.SIGKILL)
        wait_for(lambda: cluster.quorum().get("LeaderId") not in (None, old), STEP_TIMEOUT_S, "a new leader")
        elected = time.monotonic() - kill_at
        new = cluster.quorum()["LeaderId"]
        time.sleep(settle)
        first = min((a for s, a, *_ in producer.acks if s >= kill_at), default=None)
        return {"killed": old, "new_leader": new, "election_s": round(elected, 2),
                "first_ack_of_a_record_sent_after_kill_s": round(first - kill_at, 3) if first else None}
    timed("kill -9 active controller", kill_leader)
    return steps


def wire_uuid(raw: bytes) -> str:
    import base64
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=int, default=500)
    ap.add_argument("--brokers", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--settle", type=float, default=10.0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="quorum-bench-"))
    cluster = producer = None
    try:
        cluster = Cluster(tmp / "data", args.brokers)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, args.partitions, 2)])[TOPIC].result(timeout=60)
        producer = Paced(cluster.bootstrap, args.rate)
        producer.start()
        time.sleep(2)                             # the producer's first metadata and batches
        load_start = machine.loadavg()
        steps = run_steps(cluster, producer, args.settle)
        producer.finish()
        stored = read_back(cluster.bootstrap, args.partitions)
        lost = sum(1 for *_, p, off, v in producer.acks if stored.get((p, off)) != v)
        for s in steps:
            s.update(step_stats(producer.acks, s.pop("start"), s.pop("end")))
        result = {"bench": "quorum_changes", "rate": args.rate, "brokers": args.brokers,
                  "partitions": args.partitions, "replication_factor": 2, "sent": producer.sent,
                  "acked": len(producer.acks), "errors": producer.errors[:5], "lost": lost,
                  "load_at_start": load_start, "load_at_end": machine.loadavg(), "steps": steps,
                  "machine": machine.facts()}
        RESULTS.mkdir(exist_ok=True)
        out = RESULTS / f"quorum_changes_{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1))
        print(f"wrote {out}")
    finally:
        try:
            if producer is not None and producer.is_alive():
                producer.finish()
        finally:
            if cluster is not None:
                cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
