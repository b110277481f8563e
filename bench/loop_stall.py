"""Event-loop stalls of real node processes during a metadata-heavy and a produce-heavy run.

    .venv/bin/python bench/loop_stall.py --label after                    # this tree
    PYTHONPATH=/tmp/wt-before/src .venv/bin/python bench/loop_stall.py --label before

Starts 3 controllers + 2 brokers (tests/integration's layout, fsync on), each node in
a wrapper that measures two things inside the node process:

* a loop-lag probe task in the node's own event loop sleeps 1 ms and records how
  much later than asked it woke up: the time the loop was busy with something else
  (a long callback, an fsync inside one) - or the process was not scheduled at all,
  which on a small shared machine is most of it;
* every ``os.fsync`` call, by thread: the ones on the event loop's thread stall
  every connection of the process for their whole duration; those on other
  threads (the Raft writer, the log dirs' writers) do not. For the loop's, where
  the call entered tierlog.storage (``loop_fsync_sites``).

Then, on the fresh cluster:

* produce (``--seconds``): acks=all records of 200 bytes into a 4-partition RF 2
  topic, as fast as one confluent-kafka producer goes;
* metadata (``--topics``, fixed work so both trees do the same): CreateTopics, one
  topic of 1 partition RF 2 per request, each after the previous answer - every
  topic is a Raft append, flush and commit on the controllers and a Fetch +
  append + flush on every broker (observers), plus the partition's creation on
  two brokers. Produce runs first so that the topics created here do not load it;
* bulk (``--partitions``): one CreateTopics of one topic with that many partitions
  (RF 2): one large metadata change, which every node applies (the brokers create
  a log for each of their replicas) while the loop keeps serving - the case of
  issue 26's commit delivery (a pull applied one batch per loop turn) and of
  broker/apply_slices.py. 0 skips it.

Per run it reports, for the active controller, the other controllers and the
brokers: the longest stall, the 99.9th percentile of the samples, how many samples
were over 10 ms, and the fsyncs on the loop thread (count, total and longest ms)
and off it. Results go to ``bench/results/loop_stall.json`` under
``--label`` (other labels already in the file are kept). The nodes' tierlog comes
from PYTHONPATH (or this tree's src/), so the same script measures another commit.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "loop_stall.json"
PROBE_PERIOD_S = 0.001
STOP_TIMEOUT_S = 30


# ---------------------------------------------------------------- inside a node process

def _node_main(config: str, probe_out: str) -> None:
    """Run one tierlog node with the loop-lag probe (``--node`` mode)."""
    import asyncio

    import tierlog.node as node_module
    from tierlog.cli.main import main

    serve = node_module._serve
    _count_fsyncs()

    async def probed(cfg, on_ready):
        task = asyncio.get_running_loop().create_task(_probe(Path(probe_out)))
        try:
            await serve(cfg, on_ready)
        finally:
            task.cancel()

    node_module._serve = probed
    sys.exit(main(["node", "--config", config]))


_FSYNCS: list[tuple[float, float, bool, str]] = []  # (wall time, ms, on the event loop's thread, storage entry)


def _count_fsyncs() -> None:
    """Wrap os.fsync to record every call's duration and thread (the probe writes them out)."""
    import threading

    real, main = os.fsync, threading.main_thread()

    def fsync(fd):
        t0 = time.perf_counter()
        try:
            return real(fd)
        finally:
            on_loop = threading.current_thread() is main
            _FSYNCS.append((time.time(), round((time.perf_counter() - t0) * 1000.0, 3), on_loop,
                            _storage_entry() if on_loop else ""))

    os.fsync = fsync


def _storage_entry() -> str:
    """``module.function`` where the call entered tierlog.storage (or the innermost tierlog
    frame if it did not), to say which work still syncs on the loop."""
    frame, entry = sys._getframe(2), ""
    while frame is not None:
        path = frame.f_code.co_filename
        if "/tierlog/storage/" in path:
            entry = f"{Path(path).stem}.{frame.f_code.co_name}"
        elif entry or "/tierlog/" in path:
            return entry or f"{Path(path).stem}.{frame.f_code.co_name}"
        frame = frame.f_back
    return entry


async def _probe(out: Path) -> None:
    """Record (wall time, lag ms) of every sample over 1 ms late; rewrite ``out`` twice a second."""
    import asyncio

    samples: list[tuple[float, float]] = []
    counts: list[tuple[float, int]] = []  # (wall time, samples so far) at each rewrite
    count, last_dump = 0, time.monotonic()
    while True:
        t0 = time.perf_counter()
        await asyncio.sleep(PROBE_PERIOD_S)
        lag_ms = (time.perf_counter() - t0 - PROBE_PERIOD_S) * 1000.0
        count += 1
        if lag_ms >= 1.0:
            samples.append((time.time(), round(lag_ms, 2)))
        if time.monotonic() - last_dump >= 0.5:
            last_dump = time.monotonic()
            counts.append((time.time(), count))
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps({"counts": counts, "late": samples, "fsyncs": list(_FSYNCS)}))
            os.replace(tmp, out)


# ---------------------------------------------------------------- the cluster

def free_port() -> int:
    """bench/brokers.py's, imported here only: the node processes run this file too."""
    import brokers
    return brokers.free_port()


class _Node:
    def __init__(self, root: Path, node_id: int, props: dict, env: dict):
        self.root, self.node_id = root, node_id
        root.mkdir(parents=True, exist_ok=True)
        self.config = root / "server.properties"
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.probe = root / "probe.json"
        with open(root / "node.log", "ab") as log:
            self.proc = subprocess.Popen([sys.executable, __file__, "--node", str(self.config), str(self.probe)],
                                         stdout=subprocess.PIPE, stderr=log, text=True, env=env)

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("node "):
                return
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError(f"node {self.node_id} did not start: {(self.root / 'node.log').read_text()[-2000:]}")

    def stop(self) -> None:
        """SIGTERM; a node still busy after STOP_TIMEOUT_S (a large change applying on a loaded
        machine) is killed, so the run's figures are still written."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                print(f"node {self.node_id} did not stop within {STOP_TIMEOUT_S}s: killed", file=sys.stderr)
                self.proc.kill()
                self.proc.wait()

    def fsyncs(self, start: float, end: float) -> list[tuple[float, bool, str]]:
        calls = json.loads(self.probe.read_text())["fsyncs"]
        return [(ms, on_loop, site) for t, ms, on_loop, site in calls if start <= t <= end]

    def late_samples(self, start: float, end: float) -> tuple[int, list[float]]:
        """(samples taken in [start, end] (to the probe's 0.5 s resolution), lags of those >= 1 ms)."""
        doc = json.loads(self.probe.read_text())
        before = max((c for t, c in doc["counts"] if t <= start), default=0)
        until = max((c for t, c in doc["counts"] if t <= end), default=0)
        return until - before, [lag for t, lag in doc["late"] if start <= t <= end]


def _start_cluster(root: Path, env: dict) -> tuple[list[_Node], list[_Node], str]:
    cports = [free_port() for _ in range(3)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(cports))
    common = {"cluster.id": "loop-stall-bench", "controller.quorum.voters": voters,
              "controller.listener.names": "CONTROLLER"}
    controllers = [_Node(root / f"node-{i + 1}", i + 1,
                         {**common, "node.id": i + 1, "process.roles": "controller",
                          "listeners": f"CONTROLLER://127.0.0.1:{p}", "log.dirs": root / f"node-{i + 1}" / "data"},
                         env) for i, p in enumerate(cports)]
    for c in controllers:
        c.wait_ready()
    brokers, bootstrap = [], []
    for j in range(2):
        node_id, p = 4 + j, free_port()
        brokers.append(_Node(root / f"node-{node_id}", node_id,
                             {**common, "node.id": node_id, "process.roles": "broker",
                              "listeners": f"PLAINTEXT://127.0.0.1:{p}",
                              "log.dirs": root / f"node-{node_id}" / "data"}, env))
        bootstrap.append(f"127.0.0.1:{p}")
    for b in brokers:
        b.wait_ready()
    return controllers, brokers, ",".join(bootstrap)


def _active_controller(controllers: list[_Node]) -> int:
    """The quorum leader, from DescribeQuorum through tierlog's own codec."""
    import socket
    import struct

    from tierlog.protocol import APIS, decode_response, encode_request
    for c in controllers:
        port = int(next(line for line in c.config.read_text().splitlines()
                        if line.startswith("listeners=")).rsplit(":", 1)[1])
        body = {"Topics": [{"TopicName": "__cluster_metadata", "Partitions": [{"PartitionIndex": 0}]}]}
        frame = encode_request(55, APIS[55].max_version, 1, "bench", body)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            _, resp = decode_response(55, APIS[55].max_version, s.recv(size, socket.MSG_WAITALL))
        part = resp["Topics"][0]["Partitions"][0]
        if part["ErrorCode"] == 0:
            return part["LeaderId"]
    raise RuntimeError("no quorum leader")


# ---------------------------------------------------------------- workloads

def _metadata_run(bootstrap: str, topics: int) -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for i in range(topics):
        for f in admin.create_topics([NewTopic(f"stall-{i}", 1, 2)], operation_timeout=10).values():
            f.result(15)
    return {"topics_created": topics}


def _bulk_run(bootstrap: str, partitions: int) -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("stall-bulk", partitions, 2)], operation_timeout=60).values():
        f.result(120)
    deadline = time.monotonic() + 120      # until both brokers serve every partition's metadata
    while time.monotonic() < deadline:
        topic = admin.list_topics("stall-bulk", timeout=10).topics.get("stall-bulk")
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            break
        time.sleep(0.2)
    return {"partitions_created": partitions}


def _produce_run(bootstrap: str, seconds: float) -> dict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("stall-produce", 4, 2)]).values():
        f.result(15)
    time.sleep(1.0)  # let both brokers learn the topic before the clock starts
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    acked = []
    value = b"x" * 200
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            p.produce("stall-produce", value, on_delivery=lambda err, msg: acked.append(err is None))
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    p.flush(15)
    return {"records_acked": sum(acked)}


def _stats(nodes: list[_Node], start: float, end: float) -> dict:
    lags: list[float] = []
    count = 0
    for n in nodes:
        c, late = n.late_samples(start, end)
        count += c
        lags.extend(late)
    lags.sort()
    over10 = sum(1 for v in lags if v > 10.0)
    # samples under 1 ms are not stored: the 99.9th percentile counts them as 0
    k = int(0.999 * max(count, 1))
    below = max(count - len(lags), 0)
    p999 = 0.0 if k < below else lags[min(k - below, len(lags) - 1)]
    syncs = [s for n in nodes for s in n.fsyncs(start, end)]
    on_loop = [ms for ms, loop, _site in syncs if loop]
    off_loop = [ms for ms, loop, _site in syncs if not loop]
    sites: dict[str, int] = {}
    for _ms, loop, site in syncs:
        if loop:
            sites[site] = sites.get(site, 0) + 1
    return {"max_stall_ms": lags[-1] if lags else 0.0, "p99_9_ms": p999, "samples_over_10ms": over10,
            "loop_fsyncs": len(on_loop), "loop_fsync_total_ms": round(sum(on_loop), 1),
            "loop_fsync_max_ms": round(max(on_loop, default=0.0), 2),
            "writer_fsyncs": len(off_loop), "writer_fsync_total_ms": round(sum(off_loop), 1),
            "loop_fsync_sites": dict(sorted(sites.items(), key=lambda kv: -kv[1]))}


def _measure(label: str, seconds: float, topics: int, partitions: int, env: dict) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="loop-stall-", ignore_cleanup_errors=True) as tmp:
        controllers, brokers, bootstrap = _start_cluster(Path(tmp), env)
        try:
            leader = _active_controller(controllers)
            runs = [("produce", _produce_run, seconds), ("metadata", _metadata_run, topics)]
            runs += [("bulk", _bulk_run, partitions)] if partitions > 0 else []
            for name, run, amount in runs:
                start = time.time()
                work = run(bootstrap, amount)
                end = time.time()
                time.sleep(1.0)  # the probes write twice a second
                out[name] = {"seconds": round(end - start, 1), **work,
                             "active_controller": _stats([c for c in controllers if c.node_id == leader], start, end),
                             "other_controllers": _stats([c for c in controllers if c.node_id != leader],
                                                         start, end),
                             "brokers": _stats(brokers, start, end)}
                print(label, name, json.dumps(out[name]), flush=True)
        finally:
            for n in brokers + controllers:
                n.stop()
    return out


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--node":
        _node_main(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True, help="key in the results file, e.g. before / after")
    ap.add_argument("--seconds", type=float, default=15.0, help="length of the produce run")
    ap.add_argument("--topics", type=int, default=40, help="topics the metadata run creates")
    ap.add_argument("--partitions", type=int, default=2000, help="partitions of the bulk run's one topic (0: none)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    env = dict(os.environ)
    src = env.get("PYTHONPATH") or str(HERE.parent / "src")
    env["PYTHONPATH"] = src
    sys.path.insert(0, src.split(os.pathsep)[0])
    result = {"tierlog_src": src, "commit": _commit(Path(src)), "machine": platform.platform(),
              "cpus": os.cpu_count(), **_measure(args.label, args.seconds, args.topics, args.partitions, env)}
    doc = json.loads(args.out.read_text()) if args.out.exists() else {}
    doc[args.label] = result
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def _commit(src: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
