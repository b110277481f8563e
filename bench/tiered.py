"""Tiered storage: consuming data that lives in remote storage, against the same data on local disk.

    python bench/tiered.py                       # 1 GiB, local-directory then moto S3 remote storage
    python bench/tiered.py --mib 128 --backend fs   # smoke run, about a minute

One tierlog node (broker and controller) per backend, tiered storage on,
remote storage in a temp directory (``fs``) or a moto S3 server process on
127.0.0.1 (``s3``). Per backend:

1. **upload**: ``bench/workload.py rate`` produces ``--mib`` of 1 KiB records at
   ``--rate-mib`` MiB/s (acks=1) to a tiered topic (16 MiB segments, local
   retention 10 % of the data). Sampled every 0.5 s: the log end and the highest
   offset in remote storage (ListOffsets -1 / -5). Upload lag = log end -
   (highest tiered + 1), in MiB; "keeps up" when the lag stays within two
   segments plus one task interval of data, and the figure after the stream
   is how long the last rolled segment took to reach remote storage.
2. **local**: the same records to a topic that is not tiered; consume it from
   offset 0 (``bench/workload.py consume``): MiB/s from local segments.
3. **remote, first reader**: wait until at most 10 % of the tiered topic is
   local, consume it from offset 0: MiB/s, and the broker's remote GETs for it.
4. **remote, second reader**: the same range again: MiB/s and remote GETs.

Remote GETs and chunk cache hits come from the broker's ``remote reads:``
log line (the RemoteReader's counters, logged every 2 s when they changed).
Writes ``results/tiered_<timestamp>.json``, ``results/tiered_latest.json`` and
``results/tiered.png``.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from brokers import free_port, start_broker
from machine import facts as machine_facts

from tierlog.protocol import decode_response, encode_request

MIB = 1 << 20
RECORD_SIZE = 1024
SEGMENT_BYTES = 16 * MIB
TASK_INTERVAL_MS = 1000
SAMPLE_S = 0.5
STATS_WAIT_S = 2.5
LIST_OFFSETS = 2
LATEST, LATEST_TIERED, EARLIEST_LOCAL = -1, -5, -4
STATS_LINE = re.compile(r"remote reads: (.*)$")
MOTO_REGION = "us-east-1"
MOTO_KEYS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret", "AWS_DEFAULT_REGION": MOTO_REGION}


def _list_offset(port: int, topic: str, target: int) -> int:
    import socket
    import struct
    body = {"ReplicaId": -1, "IsolationLevel": 0, "TimeoutMs": 5000, "Topics": [
        {"Name": topic, "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": target}]}]}
    frame = encode_request(LIST_OFFSETS, 9, 1, "bench", body)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _recv(s, 4))[0]
        _, answer = decode_response(LIST_OFFSETS, 9, _recv(s, size))
    p = answer["Topics"][0]["Partitions"][0]
    return -1 if p["ErrorCode"] else p["Offset"]


def _recv(s, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def _workload(*args: str) -> dict:
    out = subprocess.run([sys.executable, str(HERE / "workload.py"), *args], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"workload {args[0]} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _remote_stats(broker) -> dict:
    """The broker's latest ``remote reads:`` counters (zeros before the first)."""
    stats = {"gets": 0, "get_bytes": 0, "chunk_hits": 0, "chunk_misses": 0}
    for line in broker.stderr_path.read_text(errors="replace").splitlines():
        m = STATS_LINE.search(line)
        if m:
            stats.update({k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())})
    return stats


def _delta(after: dict, before: dict) -> dict:
    return {k: after[k] - before.get(k, 0) for k in after}


def _upload_phase(broker, args, topic: str) -> dict:
    """Produce at a fixed rate while sampling the upload lag."""
    config = [f"--topic-config={k}={v}" for k, v in (
        ("remote.storage.enable", "true"), ("segment.bytes", SEGMENT_BYTES),
        ("local.retention.bytes", int(args.mib * MIB * 0.1)))]
    seconds = args.mib / args.rate_mib
    proc = subprocess.Popen([sys.executable, str(HERE / "workload.py"), "rate", "--bootstrap", broker.bootstrap,
                             "--topic", topic, "--create", "--acks", "1", "--mib-per-s", str(args.rate_mib),
                             "--seconds", str(seconds), *config], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    samples, start = [], time.monotonic()
    while proc.poll() is None:
        samples.append(_sample(broker, topic, start))
        time.sleep(SAMPLE_S)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"rate phase failed: {err[-2000:]}")
    produced = json.loads(out.strip().splitlines()[-1])
    end = _list_offset(broker.port, topic, LATEST)
    stream_end = time.monotonic()
    while True:        # until every rolled segment is in remote storage
        sample = _sample(broker, topic, start)
        samples.append(sample)
        if end - (sample["tiered"] + 1) <= SEGMENT_BYTES // RECORD_SIZE or time.monotonic() - stream_end > 300:
            break
        time.sleep(SAMPLE_S)
    lag_mib = [s["lag_mib"] for s in samples if s["t"] <= stream_end - start]
    return {"produce": produced, "samples": samples, "max_lag_mib": max(lag_mib, default=0.0),
            "keep_up_bound_mib": 2 * SEGMENT_BYTES / MIB + args.rate_mib * TASK_INTERVAL_MS / 1000,
            "drain_s_after_stream": round(samples[-1]["t"] - (stream_end - start), 2)}


def _sample(broker, topic: str, start: float) -> dict:
    end, tiered = _list_offset(broker.port, topic, LATEST), _list_offset(broker.port, topic, LATEST_TIERED)
    return {"t": round(time.monotonic() - start, 2), "end": end, "tiered": tiered,
            "lag_mib": round(max(0, end - (tiered + 1)) * RECORD_SIZE / MIB, 1)}


def _wait_mostly_remote(broker, topic: str, fraction: float = 0.9, timeout_s: float = 300) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        end = _list_offset(broker.port, topic, LATEST)
        local_start = _list_offset(broker.port, topic, EARLIEST_LOCAL)
        if local_start >= fraction * end * 0.98 or time.monotonic() > deadline:
            return {"end": end, "local_log_start": local_start, "remote_fraction": round(local_start / end, 3)}
        time.sleep(SAMPLE_S)


def _consume(broker, topic: str) -> dict:
    result = _workload("consume", "--bootstrap", broker.bootstrap, "--topic", topic)
    time.sleep(STATS_WAIT_S)            # the broker logs its remote read counters every 2 s
    return result


def run_backend(backend: str, args, workdir: Path) -> dict:
    props, env_extra, moto = {"remote.log.storage.system.enable": "true",
                              "remote.log.manager.task.interval.ms": str(TASK_INTERVAL_MS),
                              "log.retention.check.interval.ms": "1000", "log.segment.delete.delay.ms": "1000"}, {}, None
    if backend == "fs":
        props.update({"rsm.config.storage.backend": "fs", "rsm.config.storage.root": str(workdir / "remote")})
    else:
        moto, bucket = _start_moto(workdir)
        props.update({"rsm.config.storage.backend": "s3", "rsm.config.storage.s3.bucket.name": bucket,
                      "rsm.config.storage.s3.endpoint.url": moto[1], "rsm.config.storage.s3.region": MOTO_REGION,
                      "rsm.config.storage.s3.path.style.access.enabled": "true"})
        env_extra = MOTO_KEYS
    broker = start_broker("tierlog", workdir / "node", props=props, env=env_extra)
    try:
        upload = _upload_phase(broker, args, "tiered")
        records = int(args.mib * MIB / RECORD_SIZE)
        _workload("produce", "--bootstrap", broker.bootstrap, "--topic", "local", "--create", "--records",
                  str(records), "--acks", "1")
        local = _consume(broker, "local")
        placement = _wait_mostly_remote(broker, "tiered")
        before = _remote_stats(broker)
        first = _consume(broker, "tiered")
        middle = _remote_stats(broker)
        second = _consume(broker, "tiered")
        after = _remote_stats(broker)
    finally:
        broker.stop()
        if moto is not None:
            moto[0].terminate()
            moto[0].wait(10)
    return {"backend": backend, "upload": upload, "placement": placement, "local_consume": local,
            "remote_consume_first": {**first, "remote": _delta(middle, before)},
            "remote_consume_second": {**second, "remote": _delta(after, middle)},
            "remote_vs_local": round(first["mib_per_s"] / local["mib_per_s"], 2)}


def _start_moto(workdir: Path):
    import boto3
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = open(workdir / "moto.log", "wb")      # noqa: SIM115 (the server's whole life)
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    client = boto3.client("s3", endpoint_url=endpoint, region_name=MOTO_REGION,
                          aws_access_key_id="bench", aws_secret_access_key="bench-secret")
    deadline = time.monotonic() + 30
    while True:
        try:
            client.create_bucket(Bucket="tierlog-bench")
            return (proc, endpoint), "tierlog-bench"
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _table(results: list[dict]) -> str:
    rows = [("| backend | local consume MiB/s | remote consume MiB/s (1st) | ratio | 2nd reader MiB/s | "
            "remote GETs 1st / 2nd | max upload lag MiB (bound) | upload drain after stream |"),
            "|---|---|---|---|---|---|---|---|"]
    for r in results:
        first, second = r["remote_consume_first"], r["remote_consume_second"]
        rows.append(f"| {r['backend']} | {r['local_consume']['mib_per_s']:.1f} | {first['mib_per_s']:.1f} | "
                    f"{r['remote_vs_local']:.2f}x | {second['mib_per_s']:.1f} | "
                    f"{first['remote']['gets']} / {second['remote']['gets']} | "
                    f"{r['upload']['max_lag_mib']:.0f} ({r['upload']['keep_up_bound_mib']:.0f}) | "
                    f"{r['upload']['drain_s_after_stream']:.1f} s |")
    return "\n".join(rows)


def _plot(results: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (lag, speed) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in results:
        samples = r["upload"]["samples"]
        lag.plot([s["t"] for s in samples], [s["lag_mib"] for s in samples], label=r["backend"])
    lag.set_xlabel("seconds since the stream started")
    lag.set_ylabel("MiB not yet in remote storage")
    lag.set_title("upload lag at the produce rate")
    lag.legend()
    labels, values = [], []
    for r in results:
        for key, name in (("local_consume", "local"), ("remote_consume_first", "remote 1st"),
                          ("remote_consume_second", "remote 2nd")):
            labels.append(f"{r['backend']}\n{name}")
            values.append(r[key]["mib_per_s"])
    speed.bar(labels, values)
    speed.set_ylabel("MiB/s consumed from offset 0")
    speed.set_title("consume throughput")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=float, default=1024.0, help="data per topic (default 1 GiB)")
    p.add_argument("--rate-mib", type=float, default=50.0, help="produce rate of the upload phase")
    p.add_argument("--backend", choices=["fs", "s3", "both"], default="both")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    results = []
    for backend in (["fs", "s3"] if args.backend == "both" else [args.backend]):
        with tempfile.TemporaryDirectory(prefix=f"tierlog-bench-tiered-{backend}-") as tmp:
            results.append(run_backend(backend, args, Path(tmp)))
            print(_table(results[-1:]), flush=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    doc = {"machine": machine_facts(), "args": {k: str(v) for k, v in vars(args).items()}, "results": results}
    args.out.mkdir(parents=True, exist_ok=True)
    for name in (f"tiered_{stamp}.json", "tiered_latest.json"):
        (args.out / name).write_text(json.dumps(doc, indent=1))
    _plot(results, args.out / "tiered.png")
    print(_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
