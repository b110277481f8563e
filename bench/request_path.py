"""Where a Produce request's broker CPU goes, step by step (issue 36, item 1).

    python bench/request_path.py single      # one broker, P=300 round-robin, acks=1
    python bench/request_path.py replicated  # 3 brokers RF 3, P=300 round-robin, acks=all (broker 1 sampled)
    python bench/request_path.py direct      # one broker, P=300, single-record Produce requests from a raw socket (--acks -1)
    python bench/request_path.py steps FOLDED   # classify saved samples again (their .json beside them)

Starts the broker(s), creates a topic of 300 partitions, lets a fixed-rate librdkafka producer
(``workload.py rate``, 1 KiB, linger.ms 5, record i to partition i mod 300: nearly every record
a Produce request of its own) run for ``--seconds`` while ``py-spy record --native`` samples the
whole broker process (every thread, C frames included, on-CPU samples only). Then it reads the
broker's process CPU (``/proc/<pid>/stat``, not wall time: the machine is shared) and its
request counters (Prometheus, ``kafka_network_requestmetrics_requests``) and splits the CPU over
the steps of the request path by where each sample is (``STEPS``, first match from the leaf up
to the root, the innermost step wins). CPU per request = process CPU x step share / requests.

``direct`` takes librdkafka's batching out of the figure (how many records it puts in a request
depends on the machine's load): a plain socket client sends ``--requests`` Produce v9 requests
(acks=1) of one 1 KiB record each, to partition i mod 300, keeping ``WINDOW`` requests in flight
on each of ``CONNECTIONS`` connections; so the CPU per request is that of a single-record request.

Writes ``results/request_path-<mode>.folded`` and ``.json``; prints the table.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from profile import py_spy, read_folded

from brokers import free_port, start_broker
from partitions import CLK_TCK, create_topic
from replication import Cluster

PARTITIONS = 300
RECORD_SIZE = 1024
SAMPLE_HZ = 250
RESULTS = HERE / "results"

# the follower's side of replication (the rest of tierlog/replication/ is the leader's, a Produce's)
_FOLLOWER_SIDE = (r"\(tierlog/replication/"
                  r"(fetcher|fetcher_manager|follower|follower_session|fetch_actions|divergence|tiered_start)\.py\)")
# (step, patterns on 'function (file)' frames); the innermost frame matching a step names the sample's step
STEPS: list[tuple[str, tuple[str, ...]]] = [
    ("socket write", (r"^_SelectorSocketTransport\.write ", r"^writelines ", r"^_sendfile ")),
    ("header", (r"^decode_request_header ", r"^encode_response_header ")),
    ("decode", (r"^decode_request ",)),
    ("encode", (r"^encode_response ", r"^RequestDispatcher\._encode ")),
    ("request encode, response decode", (r"^encode_request ", r"^decode_response ")),
    ("metrics, request log", (r"\(.*prometheus_client", r"\(.*request_metrics\.py\)", r"\(.*broker_metrics",
                              r"\(.*topic_stats\.py\)", r"^RequestDispatcher\._observe ", r"\(logging/")),
    ("append (log, index, CRC)", (r"\(tierlog/storage/", r"\(tierlog/records/")),
    ("authorization", (r"\(tierlog/broker/apis/authz\.py\)", r"\(tierlog/.*acl")),
    ("checks, partition, acks wait", (r"\(tierlog/broker/apis/api_00_produce\.py\)", r"\(tierlog/broker/partition/",
                                      r"\(tierlog/broker/replica_manager\.py\)", r"\(tierlog/broker/txn_verif",
                                      r"\(tierlog/broker/(fetch_purgatory|partition_transitions|leader_ticker)\.py\)",
                                      r"\(tierlog/broker/broker\.py\)",
                                      # the leader's side of replication (not the fetcher's)
                                      r"\(tierlog/replication/(leader_state|acks|delete_records|isr_state|"
                                      r"replica_state|alter_partition|leader_moves|local_log_report|backoff)\.py\)")),
    ("reads for the follower", (r"\(tierlog/broker/apis/api_01_fetch\.py\)", r"\(tierlog/broker/fetch_session")),
    ("fetcher logic", (_FOLLOWER_SIDE, r"\(tierlog/broker/replica_fetcher\.py\)")),
    ("dispatch", (r"\(tierlog/net/dispatch\.py\)",)),
    ("framing, connection loop", (r"\(tierlog/net/",)),
    ("socket read", (r"_read_ready",)),
    ("event loop (select, callbacks, tasks)", (r"\(asyncio/", r"\(selectors\.py\)", r"asynciomodule")),
]
_COMPILED = [(name, re.compile("|".join(pats))) for name, pats in STEPS]
# steps named by a frame anywhere on the stack, before the innermost match: background work
OUTER: list[tuple[str, re.Pattern]] = [
    ("replica manager tick (200 ms)", re.compile(r"^(ReplicaManager\.(tick|_tick_loop)|LeaderTicker\.tick) ")),
    ("other threads (raft log, metrics endpoint, cleaners)", re.compile(r"^Thread\._bootstrap ")),
]
# which request a sample serves, by the outermost frame that tells
CONTEXTS: list[tuple[str, re.Pattern]] = [
    ("fetcher", re.compile(_FOLLOWER_SIDE + r"|replica_fetcher\.py")),
    ("Fetch", re.compile(r"api_01_fetch\.py|<codec Fetch(Request|Response) |protocol/hot/fetch_v")),
    ("Produce", re.compile(r"api_00_produce\.py|<codec Produce(Request|Response) |protocol/hot/produce_v")),
]
OTHER = "other (controller channel, metadata, GC)"
IDLE = "idle wait"
# py-spy --native counts a thread blocked in a lock or in epoll as active: such samples are dropped
_WAIT_PY = re.compile(r"^(Condition\.wait|Event\.wait|_worker|EpollSelector\.select|sync_flush) ")
_WAIT_NATIVE = re.compile(r"acquire_lock|timedwait|epoll_wait|fsync|fdatasync|0x[0-9a-f]+ \(libc")


def step_of(frames: list[str]) -> str:
    """The step of one sample: a background step named anywhere on its stack, else the innermost
    frame that matches a step's patterns; IDLE for a thread asleep in a wait. Prefixed by the
    request it serves where its stack tells ("Produce: encode")."""
    python = [i for i, f in enumerate(frames) if ".py)" in f]
    if python and _WAIT_PY.search(frames[python[-1]]) and \
            all(_WAIT_NATIVE.search(f) or ".c)" in f or ".h)" in f for f in frames[python[-1] + 1:]):
        return IDLE
    for name, pattern in OUTER:
        if any(pattern.search(f) for f in frames):
            return name
    step = OTHER
    for frame in reversed(frames):
        found = next((name for name, pattern in _COMPILED if pattern.search(frame)), None)
        if found:
            step = found
            break
    for context, pattern in CONTEXTS:
        if any(pattern.search(f) for f in frames):
            return f"{context}: {step}"
    return step


def steps(stacks) -> tuple[int, Counter]:
    shares: Counter = Counter()
    total = 0
    for frames, count in stacks:
        step = step_of(frames)
        if step != IDLE:
            total += count
            shares[step] += count
    return total, shares


def requests_seen(metrics_addr: str) -> Counter:
    """Answered requests by (request, version) from a node's Prometheus endpoint."""
    text = urllib.request.urlopen(f"http://{metrics_addr}/metrics", timeout=10).read().decode()
    seen: Counter = Counter()
    for line in text.splitlines():
        if line.startswith("kafka_network_requestmetrics_requests_total{"):
            labels, value = line.rsplit(" ", 1)
            name = re.search(r'request="([^"]+)"', labels).group(1)
            seen[name] += int(float(value))
    return seen


def cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def produce(bootstrap: str, topic: str, rate: int, seconds: float, acks: str) -> dict:
    cmd = [sys.executable, str(HERE / "workload.py"), "rate", "--bootstrap", bootstrap, "--topic", topic,
           "--acks", acks, "--record-size", str(RECORD_SIZE), "--mib-per-s", str(rate * RECORD_SIZE / 2**20),
           "--partitions", str(PARTITIONS), "--spread", "round-robin", "--seconds", str(seconds)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def sampled(pid: int, metrics: str, folded: Path | None, work) -> dict:
    """Run ``work()`` with py-spy --native on ``pid`` (none when ``folded`` is None: the CPU figure
    without the sampler's stops); its CPU, request counts and load average."""
    spy = None
    if folded is not None:
        spy = subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--native", "--format", "raw",
                                "--rate", str(SAMPLE_HZ), "-o", str(folded)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
    before_req, before_cpu = requests_seen(metrics), cpu_split(pid)
    load = os.getloadavg()[0]
    result = work()
    user, system = (a - b for a, b in zip(cpu_split(pid), before_cpu, strict=True))
    counts = requests_seen(metrics) - before_req
    if spy is not None:
        spy.send_signal(2)
        spy.wait(120)
    return {"cpu_s": user + system, "user_s": user, "system_s": system, "requests": dict(counts),
            "load_before": load, "load_after": os.getloadavg()[0],
            "producer": {k: result[k] for k in ("records", "seconds", "latency_ms", "errors")}}


def run_single(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="tierlog-request-path-") as tmp:
        metrics = f"127.0.0.1:{free_port()}"
        broker = start_broker("tierlog", Path(tmp) / "b", {"metrics.prometheus.listener": metrics})
        try:
            from workload import ensure_topic
            ensure_topic(broker.bootstrap, "path", PARTITIONS)
            produce(broker.bootstrap, "path", args.rate, 2.0, "1")           # warm up
            return sampled(broker.pid, metrics, args.folded,
                           lambda: produce(broker.bootstrap, "path", args.rate, args.seconds, "1"))
        finally:
            broker.stop()


CONNECTIONS = 4
WINDOW = 8


def _produce_frames(topic: str, count: int, connection: int, acks: int = 1) -> list[bytes]:
    from tierlog.protocol import encode_request
    from tierlog.records.builder import build_batch
    from tierlog.records.record import Record
    value = os.urandom(RECORD_SIZE)
    frames = []
    for i in range(count):
        batch = build_batch([Record(0, 1_700_000_000_000, None, value)])
        body = {"TransactionalId": None, "Acks": acks, "TimeoutMs": 30_000,
                "TopicData": [{"Name": topic, "PartitionData": [{"Index": (i * CONNECTIONS + connection) % PARTITIONS,
                                                                 "Records": batch}]}]}
        frame = encode_request(0, 9, i, "request-path", body)
        frames.append(len(frame).to_bytes(4, "big") + frame)
    return frames


def _send_all(port: int, frames: list[bytes]) -> None:
    """Send ``frames`` keeping WINDOW answers outstanding; read every answer."""
    import socket
    sock = socket.create_connection(("127.0.0.1", port))
    buf, sent, answered = bytearray(), 0, 0
    try:
        while answered < len(frames):
            while sent < len(frames) and sent - answered < WINDOW:
                sock.sendall(frames[sent])
                sent += 1
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            buf += chunk
            while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big"):
                del buf[:4 + int.from_bytes(buf[:4], "big")]
                answered += 1
    finally:
        sock.close()


def direct_produce(port: int, topic: str, requests: int, acks: int = 1) -> dict:
    import threading
    per = requests // CONNECTIONS
    frames = [_produce_frames(topic, per, c, acks) for c in range(CONNECTIONS)]
    start = time.monotonic()
    threads = [threading.Thread(target=_send_all, args=(port, f)) for f in frames]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"records": per * CONNECTIONS, "seconds": time.monotonic() - start, "latency_ms": None, "errors": 0}


def run_direct(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="tierlog-request-path-") as tmp:
        metrics = f"127.0.0.1:{free_port()}"
        broker = start_broker("tierlog", Path(tmp) / "b", {"metrics.prometheus.listener": metrics})
        try:
            from workload import ensure_topic
            ensure_topic(broker.bootstrap, "path", PARTITIONS)
            direct_produce(broker.port, "path", 2000)                            # warm up
            return sampled(broker.pid, metrics, args.folded,
                           lambda: direct_produce(broker.port, "path", args.requests, args.acks))
        finally:
            broker.stop()


def run_replicated(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="tierlog-request-path-") as tmp:
        cluster = Cluster(Path(tmp), brokers=3, controllers=1)
        try:
            first = min(n for n, info in cluster.nodes.items() if "broker" in info["roles"])
            node = cluster.nodes[first]
            create_topic(cluster.bootstrap, "path", PARTITIONS)
            produce(cluster.bootstrap, "path", args.rate, 2.0, "all")
            return sampled(node["pid"], node["metrics"], args.folded,
                           lambda: produce(cluster.bootstrap, "path", args.rate, args.seconds, "all"))
        finally:
            cluster.stop()


def table(stacks, run: dict) -> str:
    total, shares = steps(stacks)
    produce_n = run["requests"].get("Produce", 0)
    fetch_n = run["requests"].get("FetchFollower", 0)
    per = f"{'ms per Produce':>15}" + (f" {'ms per follower Fetch':>22}" if fetch_n else "")
    lines = [(f"broker CPU {run['cpu_s']:.2f} s ({run['system_s']:.2f} system), {run['producer']['records']} records, "
             f"{produce_n} Produce, {fetch_n} follower Fetch requests, "
             f"{run['cpu_s'] / max(produce_n, 1) * 1000:.3f} ms CPU per Produce; load average "
             f"{run['load_before']:.1f}-{run['load_after']:.1f}; {total} samples"),
             f"{'step':<42} {'share':>6} {per}"]
    for name, n in shares.most_common():
        ms = run["cpu_s"] * n / total * 1000
        row = f"{name:<42} {100 * n / total:5.1f}% {ms / max(produce_n, 1):15.4f}"
        if fetch_n:
            row += f" {ms / fetch_n:22.4f}"
        lines.append(row)
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["single", "replicated", "direct", "steps"])
    p.add_argument("folded_in", nargs="?", type=Path)
    p.add_argument("--rate", type=int, default=None, help="records/s (single 5000, replicated 1000)")
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--requests", type=int, default=20_000, help="direct: Produce requests to send")
    p.add_argument("--no-profile", action="store_true", help="CPU and requests only, no py-spy")
    p.add_argument("--acks", type=int, default=1, choices=(-1, 0, 1), help="direct: the requests' acks")
    p.add_argument("--name", default=None, help="result file stem (default request_path-<mode>)")
    args = p.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    if args.mode == "steps":
        saved = json.loads(args.folded_in.with_suffix(".json").read_text())
        print(table(read_folded(args.folded_in), saved))
        return 0
    args.rate = args.rate or (5000 if args.mode == "single" else 1000)
    stem = args.name or f"request_path-{args.mode}"
    args.folded = None if args.no_profile else RESULTS / f"{stem}.folded"
    run = {"single": run_single, "replicated": run_replicated, "direct": run_direct}[args.mode](args)
    run.update(mode=args.mode, rate=args.rate, seconds=args.seconds,
               pythonpath=os.environ.get("PYTHONPATH"))
    (RESULTS / f"{stem}.json").write_text(json.dumps(run, indent=1))
    if args.folded is None:
        print(f"broker CPU {run['cpu_s']:.2f} s, {run['requests']}, load average "
              f"{run['load_before']:.1f}-{run['load_after']:.1f}")
    else:
        print(table(read_folded(args.folded), run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
