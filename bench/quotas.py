"""Client quota accuracy (issue 38): a producer limited to 1 MiB/s beside an unlimited one.

One tierlog node with Kafka's default quota windows (11 of 1 s). `tierlog configs` sets
``producer_byte_rate`` = ``--quota`` (1 MiB/s) on client id ``limited``; then two
confluent-kafka producers (client ids ``limited`` and ``unlimited``, 1 KiB values, acks=1,
``batch.size`` 64 KiB so that no one request is worth more than the throttle cap) produce
as fast as they may for ``--seconds`` (60), each to its own topic. Before that the unlimited
one runs ``--alone`` seconds by itself, for its rate without a neighbour.

Reported: the limited producer's acknowledged bytes per second over the run and over the
steady part (after the first ``quota.window.num - 1`` seconds, the burst Kafka's windows
allow a fresh client), both as value bytes and as Produce request bytes (what the quota
counts: the broker's ``kafka_server_produce_byte_rate`` / its ``brokertopicmetrics_bytesin``),
the throttle events librdkafka reported, and the unlimited producer's rate beside it and alone.

Writes ``results/quotas_<timestamp>.json`` and ``results/quotas.png``::

    nice -n 15 .venv/bin/python bench/quotas.py [--seconds 60] [--quota 1048576]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import brokers
import machine
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

RESULTS = Path(__file__).resolve().parent / "results"
VALUE = b"v" * 1024
WINDOWS = 11                   # quota.window.num (Kafka's default)


class Run(threading.Thread):
    """Produce as fast as the client may until ``stop``; acknowledged value bytes per second."""

    def __init__(self, bootstrap: str, client_id: str, topic: str):
        super().__init__(daemon=True)
        self.client_id, self.topic = client_id, topic
        self.per_second: dict[int, int] = {}
        self.throttles: list[int] = []
        self.t0 = 0.0
        self._done = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": 1,
                                  "linger.ms": 5, "batch.size": 65536, "queue.buffering.max.kbytes": 4096,
                                  "throttle_cb": lambda e: self.throttles.append(e.throttle_time)})

    def _delivered(self, err, msg) -> None:
        if err is None:
            second = int(time.monotonic() - self.t0)
            self.per_second[second] = self.per_second.get(second, 0) + len(msg.value())

    def run(self) -> None:
        self.t0 = time.monotonic()
        while not self._done.is_set():
            try:
                self.producer.produce(self.topic, VALUE, on_delivery=self._delivered)
            except BufferError:
                self.producer.poll(0.05)
            self.producer.poll(0)
        self.producer.flush(30)

    def stop(self) -> None:
        self._done.set()
        self.join()


def rate(per_second: dict[int, int], start: int, end: int) -> float:
    """Bytes per second acknowledged in seconds [start, end)."""
    return sum(v for s, v in per_second.items() if start <= s < end) / max(1, end - start)


def scrape(metrics: str, name: str, **labels: str) -> float | None:
    url = f"http://{metrics}/metrics"
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(f"{name}{{{want}}}") or (not labels and line.startswith(name + " ")):
            return float(line.rsplit(" ", 1)[1])
    return None


def bytes_in(metrics: str, topic: str) -> float:
    return scrape(metrics, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) or 0.0


def cli(bootstrap: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args, "--bootstrap-server", bootstrap],
                   check=True, capture_output=True, timeout=60)


def plot(limited: Run, beside: Run, quota: int, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    seconds = range(max([*limited.per_second, *beside.per_second, 0]) + 1)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(seconds, [limited.per_second.get(s, 0) / 2**20 for s in seconds], label="limited (value MiB/s)")
    ax.plot(seconds, [beside.per_second.get(s, 0) / 2**20 for s in seconds], label="unlimited (value MiB/s)")
    ax.axhline(quota / 2**20, color="grey", linestyle="--", label="producer_byte_rate")
    ax.set_xlabel("second")
    ax.set_ylabel("MiB/s acknowledged")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--alone", type=int, default=15)
    parser.add_argument("--quota", type=int, default=1048576)
    args = parser.parse_args()
    facts = machine.facts()
    with tempfile.TemporaryDirectory() as tmp:
        broker = brokers.start_broker("tierlog", Path(tmp), props={"metrics.prometheus.listener": "127.0.0.1:0"})
        try:
            metrics = _metrics_address(broker)
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("limited", "unlimited")]).values():
                f.result(30)
            cli(broker.bootstrap, "configs", "--entity-type", "clients", "--entity-name", "limited", "--alter",
                "--add-config", f"producer_byte_rate={args.quota}")
            alone = Run(broker.bootstrap, "unlimited", "unlimited")
            alone.start()
            time.sleep(args.alone)
            alone.stop()
            limited = Run(broker.bootstrap, "limited", "limited")
            beside = Run(broker.bootstrap, "unlimited", "unlimited")
            in_before = bytes_in(metrics, "limited")
            limited.start()
            beside.start()
            time.sleep(args.seconds)
            broker_rate = scrape(metrics, "kafka_server_produce_byte_rate", client_id="limited", user="")
            in_after = bytes_in(metrics, "limited")
            limited.stop()
            beside.stop()
        finally:
            broker.stop()
    steady = WINDOWS - 1
    result = {
        "quota_bytes_per_s": args.quota, "seconds": args.seconds, "windows": WINDOWS,
        "limited_value_bytes_per_s": rate(limited.per_second, 0, args.seconds),
        "limited_value_bytes_per_s_steady": rate(limited.per_second, steady, args.seconds),
        "limited_batch_bytes_per_s": (in_after - in_before) / args.seconds,
        "broker_byte_rate_at_end": broker_rate,
        "throttle_events": len(limited.throttles),
        # confluent-kafka's ThrottleEvent.throttle_time is in seconds
        "throttle_ms_median": round(1000 * sorted(limited.throttles)[len(limited.throttles) // 2], 1)
        if limited.throttles else 0,
        "unlimited_beside_bytes_per_s": rate(beside.per_second, 0, args.seconds),
        "unlimited_alone_bytes_per_s": rate(alone.per_second, 1, args.alone),
        "unlimited_throttle_events": len(beside.throttles) + len(alone.throttles),
        "limited_per_second": limited.per_second, "machine": facts,
        "load_after": machine.loadavg(),
    }
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (RESULTS / f"quotas_{stamp}.json").write_text(json.dumps(result, indent=1))
    plot(limited, beside, args.quota, RESULTS / "quotas.png")
    for key, value in result.items():
        if key not in ("limited_per_second", "machine"):
            print(f"{key}: {value}")
    return 0


def _metrics_address(broker: brokers.Broker) -> str:
    """The metrics listener the node announced on its ready line (``metrics=HOST:PORT``)."""
    for word in broker.stdout_path.read_text().split():
        if word.startswith("metrics="):
            return word.split("=", 1)[1]
    raise RuntimeError("the node announced no metrics listener")


if __name__ == "__main__":
    sys.exit(main())
