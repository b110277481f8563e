"""Hostile connections against one tierlog node: does request memory stay bounded? (issue 21)

Opens ``--connections`` (1,000) connections from a second loopback address
(127.0.0.2), each declaring a ``--declared-mib`` (100 MiB, socket.request.max.bytes)
frame and sending ``--sent-kib`` (4 KiB) of it, then, while they stay open, a normal
confluent-kafka client on 127.0.0.1 produces ``--records`` 1 KiB records (acks=all)
and consumes them back.  The node's RSS (``/proc/<pid>/status`` VmRSS) is sampled
every 50 ms throughout.

Goal: RSS under 300 MB and the normal client keeps working.  Before the bounds the
node allocated every declared frame at once (20 such connections: 2.1 GB).

Writes ``results/hostile_connections_<timestamp>.json`` and ``..._latest.json``
and plots ``results/hostile_connections.png``::

    nice -n 15 .venv/bin/python bench/hostile_connections.py [--connections 1000] [--records 20000]
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import brokers
import machine
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

RESULTS = Path(__file__).resolve().parent / "results"
HOSTILE_IP = "127.0.0.2"
SAMPLE_INTERVAL_S = 0.05
GOAL_RSS_MB = 300


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class RssSampler(threading.Thread):
    """(seconds since start, MB) every SAMPLE_INTERVAL_S until ``stop()``; marks name moments."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.samples, self.marks = pid, [], []
        self._t0, self._done = time.monotonic(), threading.Event()

    def run(self):
        while not self._done.wait(SAMPLE_INTERVAL_S):
            self.samples.append((time.monotonic() - self._t0, rss_mb(self.pid)))

    def mark(self, what: str) -> None:
        self.marks.append((time.monotonic() - self._t0, what))

    def stop(self) -> None:
        self._done.set()
        self.join()

    @property
    def peak_mb(self) -> float:
        return max(mb for _, mb in self.samples)


def open_hostile(port: int, count: int, declared: int, sent: int) -> list[socket.socket]:
    payload = struct.pack(">i", declared) + b"\x00" * sent
    conns = []
    for _ in range(count):
        s = socket.socket()
        s.bind((HOSTILE_IP, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(payload)
        conns.append(s)
    return conns


def still_open(conns: list[socket.socket]) -> int:
    """How many the node has not closed (a closed one reads EOF or resets)."""
    count = 0
    for s in conns:
        s.setblocking(False)
        try:
            count += s.recv(1) != b""
        except BlockingIOError:
            count += 1
        except OSError:
            pass
    return count


def normal_client(bootstrap: str, records: int) -> dict:
    topic = "normal-client"
    admin = AdminClient({"bootstrap.servers": bootstrap})        # alive until the future resolves
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    errors, value = [], b"x" * 1024
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    t0 = time.monotonic()
    for _ in range(records):
        while True:
            try:
                p.produce(topic, value, on_delivery=lambda err, msg: err and errors.append(str(err)))
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    unflushed = p.flush(120)
    produce_s = time.monotonic() - t0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, -2)])
    got, t1 = 0, time.monotonic()
    while got < records and time.monotonic() - t1 < 120:
        got += sum(1 for m in c.consume(1000, 0.5) if m.error() is None)
    c.close()
    return {"produced": records - unflushed - len(errors), "produce_errors": errors[:5],
            "produce_records_per_s": round(records / produce_s), "consumed": got,
            "consume_s": round(time.monotonic() - t1, 2)}


def plot(sampler: RssSampler, out: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot([t for t, _ in sampler.samples], [mb for _, mb in sampler.samples], label="node RSS (MB)")
    ax.axhline(GOAL_RSS_MB, color="red", linestyle="--", label=f"goal {GOAL_RSS_MB} MB")
    for t, what in sampler.marks:
        ax.axvline(t, color="grey", linewidth=0.8)
        ax.text(t, GOAL_RSS_MB * 0.05, what, rotation=90, fontsize=7)
    ax.set_xlabel("s")
    ax.set_ylabel("MB")
    ax.set_title(title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--declared-mib", type=int, default=100)
    ap.add_argument("--sent-kib", type=int, default=4)
    ap.add_argument("--records", type=int, default=20000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tierlog-hostile-") as tmp:
        broker = brokers.start_broker("tierlog", Path(tmp))
        sampler = RssSampler(broker.pid)
        try:
            sampler.start()
            baseline = rss_mb(broker.pid)
            sampler.mark("hostile connect")
            conns = open_hostile(broker.port, args.connections, args.declared_mib << 20, args.sent_kib << 10)
            sampler.mark("normal client")
            client = normal_client(broker.bootstrap, args.records)
            sampler.mark("client done")
            open_at_end = still_open(conns)
            for s in conns:
                s.close()
        finally:
            sampler.stop()
            broker.stop()
    result = {"connections": args.connections, "declared_mib": args.declared_mib, "sent_kib": args.sent_kib,
              "baseline_rss_mb": round(baseline, 1), "peak_rss_mb": round(sampler.peak_mb, 1),
              "hostile_open_at_end": open_at_end, "normal_client": client, "goal_rss_mb": GOAL_RSS_MB,
              "samples": [(round(t, 2), round(mb, 1)) for t, mb in sampler.samples], "marks": sampler.marks,
              "machine": machine.facts()}
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"hostile_connections_{stamp}.json", "hostile_connections_latest.json"):
        (RESULTS / name).write_text(json.dumps(result, indent=1))
    plot(sampler, RESULTS / "hostile_connections.png",
         f"{args.connections} connections declaring {args.declared_mib} MiB, {args.sent_kib} KiB sent")
    ok = sampler.peak_mb < GOAL_RSS_MB and client["consumed"] == args.records == client["produced"]
    print(f"baseline RSS {baseline:.0f} MB, peak {sampler.peak_mb:.0f} MB (goal < {GOAL_RSS_MB}); "
          f"hostile connections open at the end {open_at_end}/{args.connections}; normal client produced "
          f"{client['produced']}/{args.records} ({client['produce_records_per_s']} rec/s), consumed "
          f"{client['consumed']}: {'OK' if ok else 'GOAL MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
