"""KIP-1023 and KIP-1303 on a tiered topic: what a new replica copies, and who leads after a failure.

    python bench/kip1023.py                       # 2 GiB per topic, about 15 min on 2 shared cores
    python bench/kip1023.py --mib 256 --segment-mib 8    # development run, a few minutes

``tierlog up --controllers 1 --brokers 4`` (brokers 2-5; fs remote storage under
the data dir; uploads, retention checks and segment deletion every second;
automatic leader rebalance off, so only the elections measured here move
leaders). Two identical topics, ``elig-on`` and ``elig-off``: one partition,
replicas [2, 3] (2 leads), tiered, ``segment.bytes`` ``--segment-mib``,
``local.retention.bytes`` ``--local-keep`` of the data; ``--mib`` of 1 KiB
records each (librdkafka, acks=all). Once every rolled segment is uploaded and
local retention has run on the leader:

1. **KIP-1023**, per topic and one at a time: with
   ``follower.fetch.last.tiered.offset.enable`` off (cluster-wide, dynamic), a
   reassignment to [2, 3, 4] adds an empty broker 4; then back to [2, 3]; with it
   on, a reassignment to [5, 2, 3] adds an empty broker 5 (first: the preferred
   leader). Per addition: the time from the reassignment request until the new
   replica is in the ISR (DescribeTopicPartitions polled every 0.1 s), the bytes
   of the .log files in its partition directory then (what it copied), and those
   bytes over time. Goal: on copies <= the untiered tail (the leader's bytes from
   its earliest pending upload offset, ListOffsets -6) + one segment, and
   time-to-ISR on/off <= 0.15.
2. **KIP-1303**: ``leader.election.eligible.local.log.bytes`` as a topic override:
   on ``elig-on`` halfway between broker 5's reported local log size and broker
   3's (so above the new replica's), on ``elig-off`` -1. A reader (``wire.py``:
   one Fetch in flight, 1 MiB per partition, every Fetch timed) reads the most
   recent 50 % of each topic from the leader 2; kill -9 of broker 2; the fence
   election of each partition picks from the ISR [5, 3]; the same reader reads
   the same range from each new leader. Per read: p50 / p99 / max Fetch latency
   and the leader's remote GETs during it (its ``remote reads: gets=...`` log
   line, logged every 2 s). Goal: with eligibility on, 0 remote GETs and a p99
   no worse than before the failure.

``--local-keep`` (default 0.6): KIP-1303's consumers read within the local
retention (the KIP's case: the most recent 50 % is on the old replicas' disks);
``--local-keep 0.1`` is "90 % gone locally", where no replica can serve the most
recent 50 % locally. Writes ``results/kip1023_<timestamp>.json``,
``results/kip1023_latest.json`` and ``results/kip1023.png``.
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

from machine import facts as machine_facts
from machine import loadavg
from replication import Cluster
from wire import call, timed_fetches
from workload import latency_summary

MIB = 1 << 20
RECORD_SIZE = 1024
CONTROLLERS, BROKERS = 1, 4
LEADER, FULL, ADDED_OFF, ADDED_ON = 2, 3, 4, 5
TOPICS = ("elig-on", "elig-off")
KIP1023 = "follower.fetch.last.tiered.offset.enable"
ELIGIBLE_BYTES = "leader.election.eligible.local.log.bytes"
LIST_OFFSETS, INCREMENTAL_ALTER_CONFIGS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS, DESCRIBE_TOPIC_PARTITIONS = (
    2, 44, 45, 46, 75)
TOPIC_RESOURCE, BROKER_RESOURCE, SET = 2, 4, 0
LATEST, LOG_START, LOCAL_LOG_START, PENDING_UPLOAD = -1, -2, -4, -6
POLL_S = 0.1
STATS_WAIT_S = 2.5                 # the broker logs its remote read counters every 2 s
STATS_LINE = re.compile(r"remote reads: (.*)$")
SETTINGS = {"remote.log.manager.task.interval.ms": "1000", "log.retention.check.interval.ms": "1000",
            "log.segment.delete.delay.ms": "1000", "auto.leader.rebalance.enable": "false",
            "broker.heartbeat.interval.ms": "500", "broker.session.timeout.ms": "3000", KIP1023: "false"}


def _port(cluster: Cluster, node: int) -> int:
    return int(cluster.nodes[node]["listen"].rsplit(":", 1)[1])


def _any_port(cluster: Cluster, dead: set[int]) -> int:
    return _port(cluster, min(n for n in range(CONTROLLERS + 1, CONTROLLERS + BROKERS + 1) if n not in dead))


def _wait(check, timeout_s: float, what: str, interval_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


def _offset(cluster: Cluster, node: int, topic: str, target: int) -> int | None:
    body = {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [
        {"Name": topic, "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": target}]}]}
    p = call(_port(cluster, node), LIST_OFFSETS, 11, body)["Topics"][0]["Partitions"][0]
    return None if p["ErrorCode"] else p["Offset"]


def _partition(cluster: Cluster, topic: str, dead: set[int] = frozenset()) -> dict | None:
    """Partition 0 as a live broker's DescribeTopicPartitions tells it (with the KIP-1303 coverage)."""
    answer = call(_any_port(cluster, dead), DESCRIBE_TOPIC_PARTITIONS, 0,
                  {"Topics": [{"Name": topic}], "ResponsePartitionLimit": 10, "Cursor": None})
    [t] = answer["Topics"]
    return t["Partitions"][0] if t["ErrorCode"] == 0 and t["Partitions"] else None


def _segments(cluster: Cluster, node: int, topic: str) -> dict[int, int]:
    """Base offset -> bytes of every .log file in ``node``'s directory of ``topic``-0."""
    d = cluster.node_dir(node) / "data" / f"{topic}-0"
    out = {}
    for f in list(d.glob("*.log")) if d.exists() else []:
        try:
            out[int(f.stem)] = f.stat().st_size
        except (OSError, ValueError):
            continue              # deleted or renamed while we looked
    return out


def _alter_configs(cluster: Cluster, resource_type: int, name: str, key: str, value: str) -> None:
    body = {"Resources": [{"ResourceType": resource_type, "ResourceName": name, "Configs": [
        {"Name": key, "ConfigOperation": SET, "Value": value}]}], "ValidateOnly": False}
    answer = call(_any_port(cluster, set()), INCREMENTAL_ALTER_CONFIGS, 1, body)
    if [r["ErrorCode"] for r in answer["Responses"]] != [0]:
        raise RuntimeError(f"IncrementalAlterConfigs {key}={value}: {answer}")


def _create(cluster: Cluster, topic: str, args) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    config = {"remote.storage.enable": "true", "segment.bytes": str(args.segment_mib * MIB),
              "local.retention.bytes": str(int(args.local_keep * args.mib * MIB))}
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[LEADER, FULL]], config=config)],
                        request_timeout=30)[topic].result(timeout=60)
    _wait(lambda: (p := _partition(cluster, topic)) and p["LeaderId"] == LEADER, 60, f"{topic} led by {LEADER}")


def _produce(cluster: Cluster, topic: str, args) -> dict:
    out = subprocess.run([sys.executable, str(HERE / "workload.py"), "produce", "--bootstrap", cluster.bootstrap,
                          "--topic", topic, "--records", str(int(args.mib * MIB / RECORD_SIZE)), "--acks", "all"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"produce to {topic} failed: {out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {k: result[k] for k in ("records", "seconds", "mib_per_s", "errors")}


def _settled(cluster: Cluster, topic: str) -> dict:
    """Wait until every rolled segment of the leader is uploaded (the earliest pending upload offset is its
    active segment's base) and local retention has run (the local log start moved); the same answers
    three times in a row. The leader's offsets and segments then."""
    seen: list = []

    def stable():
        segs = _segments(cluster, LEADER, topic)
        offs = tuple(_offset(cluster, LEADER, topic, t) for t in (LATEST, LOG_START, LOCAL_LOG_START, PENDING_UPLOAD))
        end, start, local_start, pending = offs
        ok = None not in offs and len(segs) > 1 and pending == max(segs) and local_start == min(segs) > 0
        seen.append((offs, tuple(sorted(segs.items()))) if ok else None)
        if len(seen) >= 3 and seen[-1] is not None and seen[-1] == seen[-2] == seen[-3]:
            tail = sum(size for base, size in segs.items() if base >= pending)
            return {"end": end, "log_start": start, "local_log_start": local_start, "pending_upload": pending,
                    "local_bytes": sum(segs.values()), "untiered_tail_bytes": tail, "segments": len(segs)}
        return None
    return _wait(stable, 900, f"{topic}: uploads and local retention settled on broker {LEADER}")


def _reassign(cluster: Cluster, topic: str, replicas: list[int]) -> None:
    body = {"TimeoutMs": 30000, "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": 0,
                                                                            "Replicas": replicas}]}]}
    answer = call(_any_port(cluster, set()), ALTER_REASSIGNMENTS, 0, body)
    codes = [answer["ErrorCode"]] + [p["ErrorCode"] for t in answer["Responses"] for p in t["Partitions"]]
    if any(codes):
        raise RuntimeError(f"reassignment of {topic} to {replicas}: {answer}")


def _reassigning(cluster: Cluster, topic: str) -> bool:
    answer = call(_any_port(cluster, set()), LIST_REASSIGNMENTS, 0,
                  {"TimeoutMs": 30000, "Topics": [{"Name": topic, "PartitionIndexes": [0]}]})
    return any(t["Partitions"] for t in answer["Topics"])


def _add_replica(cluster: Cluster, topic: str, target: list[int], added: int, timeout_s: float) -> dict:
    """Reassign to ``target``; poll until ``added`` is in the ISR: the time it took, what it copied
    (its .log bytes then) and its .log bytes every poll."""
    timeline, start = [], time.monotonic()
    _reassign(cluster, topic, target)
    deadline = start + timeout_s
    while True:
        t = round(time.monotonic() - start, 3)
        segs = _segments(cluster, added, topic)
        timeline.append((t, sum(segs.values())))
        p = _partition(cluster, topic)
        if p is not None and added in p["IsrNodes"]:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"broker {added} not in the ISR of {topic} after {timeout_s:.0f} s: {p}")
        time.sleep(POLL_S)
    # the segments as the replica joined (read again now: the poll's read may predate its last fetch)
    segs = _segments(cluster, added, topic)
    _wait(lambda: not _reassigning(cluster, topic), 120, f"the reassignment of {topic} to finish")
    return {"replica": added, "target": target, "time_to_isr_s": t, "copied_bytes": sum(segs.values()),
            "first_offset": min(segs, default=None), "segments": len(segs), "timeline": timeline}


def _remote_stats(cluster: Cluster, node: int) -> dict:
    """``node``'s latest ``remote reads:`` counters (zeros before the first line)."""
    stats = {"gets": 0, "get_bytes": 0, "chunk_hits": 0, "chunk_misses": 0}
    for line in (cluster.node_dir(node) / "node.log").read_text(errors="replace").splitlines():
        m = STATS_LINE.search(line)
        if m:
            stats.update({k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())})
    return stats


def _read_once(cluster: Cluster, node: int, topic: str, end: int) -> dict:
    """The most recent 50 % of ``topic`` from ``node``, every Fetch timed; its remote GETs meanwhile."""
    before = _remote_stats(cluster, node)
    read = timed_fetches(_port(cluster, node), topic, end // 2, end)
    time.sleep(STATS_WAIT_S)
    after = _remote_stats(cluster, node)
    latencies = read.pop("latencies_ms")
    lat = latency_summary([ms / 1000 for ms in latencies])
    return {"node": node, **read, "latency_ms": {k: round(v, 2) for k, v in lat.items()},
            "remote": {k: after[k] - before.get(k, 0) for k in after}, "loadavg": loadavg(),
            "per_fetch_ms": [round(ms, 2) for ms in latencies]}


def _read_recent(cluster: Cluster, node: int, topic: str, end: int, reads: int) -> dict:
    """``reads`` reads of the most recent 50 %, one after the other: the first (what consumers right after
    the change see; remote GETs fill the chunk cache) and the median of the p99s over all."""
    runs = [_read_once(cluster, node, topic, end) for _ in range(reads)]
    p99s = sorted(r["latency_ms"]["p99"] for r in runs)
    first = runs[0]
    return {"node": node, "latency_ms": first["latency_ms"], "remote": first["remote"],
            "fetches": first["fetches"], "bytes": first["bytes"], "mib_per_s": first["mib_per_s"],
            "errors": first["errors"], "p99_median_ms": p99s[len(p99s) // 2], "p99s_ms": [r["latency_ms"]["p99"]
                                                                                        for r in runs],
            "remote_gets_per_read": [r["remote"]["gets"] for r in runs], "runs": runs}


def _coverage(cluster: Cluster, topic: str) -> dict[int, dict]:
    p = _partition(cluster, topic)
    return {} if p is None else {c["BrokerId"]: c for c in p["LocalLogCoverage"]}


def _kip1023(cluster: Cluster, args, settled: dict) -> dict:
    timeout = max(300.0, args.mib / 2)
    out = {t: {} for t in TOPICS}
    _alter_configs(cluster, BROKER_RESOURCE, "", KIP1023, "false")
    for topic in TOPICS:
        out[topic]["off"] = _add_replica(cluster, topic, [LEADER, FULL, ADDED_OFF], ADDED_OFF, timeout)
        print(f"{topic} off: {_line(out[topic]['off'])}", flush=True)
        _reassign(cluster, topic, [LEADER, FULL])
        _wait(lambda t=topic: not _reassigning(cluster, t) and not _segments(cluster, ADDED_OFF, t), 120,
              f"broker {ADDED_OFF} removed from {topic}")
    _alter_configs(cluster, BROKER_RESOURCE, "", KIP1023, "true")
    for topic in TOPICS:
        out[topic]["on"] = _add_replica(cluster, topic, [ADDED_ON, LEADER, FULL], ADDED_ON, timeout)
        print(f"{topic} on:  {_line(out[topic]['on'])}", flush=True)
    for topic in TOPICS:
        on, off, leader = out[topic]["on"], out[topic]["off"], settled[topic]
        bound = leader["untiered_tail_bytes"] + args.segment_mib * MIB
        out[topic]["copied_on_bound_bytes"] = bound
        out[topic]["copied_on_within_bound"] = on["copied_bytes"] <= bound
        out[topic]["copied_on_over_off"] = round(on["copied_bytes"] / off["copied_bytes"], 4)
        out[topic]["time_on_over_off"] = round(on["time_to_isr_s"] / off["time_to_isr_s"], 4)
    return out


def _kip1303(cluster: Cluster, settled: dict, reads: int) -> dict:
    """Thresholds, the reads before the failure, kill -9 of the leader, the elections, the reads after."""
    cov = _wait(lambda: (c := _coverage(cluster, TOPICS[0])) and all(
        c.get(n, {}).get("LocalLogSizeBytes", -1) > 0 for n in (FULL, ADDED_ON)) and c, 60, "reported coverage")
    new_size, full_size = cov[ADDED_ON]["LocalLogSizeBytes"], cov[FULL]["LocalLogSizeBytes"]
    threshold = (new_size + full_size) // 2
    _alter_configs(cluster, TOPIC_RESOURCE, "elig-on", ELIGIBLE_BYTES, str(threshold))
    _alter_configs(cluster, TOPIC_RESOURCE, "elig-off", ELIGIBLE_BYTES, "-1")
    _wait(lambda: not _coverage(cluster, "elig-on")[ADDED_ON]["Eligible"], 60, "the threshold applied")
    out = {"threshold_bytes": threshold, "new_replica_local_bytes": new_size, "full_replica_local_bytes": full_size,
           "coverage_before": {t: _coverage(cluster, t) for t in TOPICS}, "before": {}, "after": {}, "leaders": {}}
    for topic in TOPICS:
        out["before"][topic] = _read_recent(cluster, LEADER, topic, settled[topic]["end"], reads)
        print(f"{topic} before the failure (leader {LEADER}): {_read_line(out['before'][topic])}", flush=True)
    killed = time.monotonic()
    cluster.kill9(LEADER)
    for topic in TOPICS:
        p = _wait(lambda t=topic: (p := _partition(cluster, t, {LEADER})) and p["LeaderId"] not in (LEADER, -1) and p,
                  120, f"a new leader of {topic}", interval_s=POLL_S)
        out["leaders"][topic] = {"leader": p["LeaderId"], "isr": p["IsrNodes"],
                                 "seconds_after_kill": round(time.monotonic() - killed, 2)}
    for topic in TOPICS:
        node = out["leaders"][topic]["leader"]
        out["after"][topic] = _read_recent(cluster, node, topic, settled[topic]["end"], reads)
        print(f"{topic} after the failure (leader {node}): {_read_line(out['after'][topic])}", flush=True)
    return out


def _line(r: dict) -> str:
    return (f"broker {r['replica']} in the ISR after {r['time_to_isr_s']:.2f} s, copied "
            f"{r['copied_bytes'] / MIB:.1f} MiB from offset {r['first_offset']}")


def _read_line(r: dict) -> str:
    lat = r["latency_ms"]
    return (f"{r['fetches']} fetches, {r['bytes'] / MIB:.0f} MiB at {r['mib_per_s']} MiB/s, p50 {lat['p50']} "
            f"p99 {lat['p99']} max {lat['max']} ms, remote GETs {r['remote']['gets']}, errors {r['errors']}; "
            f"p99 of {len(r['p99s_ms'])} reads {r['p99s_ms']} ms, GETs {r['remote_gets_per_read']}")


def run(args, workdir: Path) -> dict:
    settings = {**SETTINGS, **dict(kv.split("=", 1) for kv in args.set)}
    cluster = Cluster(workdir, brokers=BROKERS, controllers=CONTROLLERS, settings=settings)
    doc = {"args": {k: str(v) for k, v in vars(args).items()}, "settings": settings, "machine_before": machine_facts()}
    try:
        doc["produce"] = {}
        for topic in TOPICS:
            _create(cluster, topic, args)
            doc["produce"][topic] = _produce(cluster, topic, args)
            print(f"{topic}: produced {doc['produce'][topic]}", flush=True)
        doc["leader_before"] = {t: _settled(cluster, t) for t in TOPICS}
        print(f"settled: {doc['leader_before']}", flush=True)
        doc["kip1023"] = _kip1023(cluster, args, doc["leader_before"])
        doc["kip1303"] = _kip1303(cluster, doc["leader_before"], args.reads)
    finally:
        cluster.stop()
    doc["machine_after"] = machine_facts()
    doc["goals"] = goals(doc)
    return doc


def goals(doc: dict) -> dict:
    k23, k1303 = doc["kip1023"], doc["kip1303"]
    on, off = k1303["after"]["elig-on"], k1303["after"]["elig-off"]
    return {
        "kip1023_copied_within_tail_plus_segment": all(k23[t]["copied_on_within_bound"] for t in TOPICS),
        "kip1023_time_on_over_off": [k23[t]["time_on_over_off"] for t in TOPICS],
        "kip1023_time_ratio_le_0.15": all(k23[t]["time_on_over_off"] <= 0.15 for t in TOPICS),
        "kip1303_leaders": {t: k1303["leaders"][t]["leader"] for t in TOPICS},
        "kip1303_on_zero_remote_gets": on["remote"]["gets"] == 0,
        "kip1303_on_p99_no_worse_than_before": on["p99_median_ms"] <= k1303["before"]["elig-on"]["p99_median_ms"],
        "kip1303_on_first_read_p99_no_worse_than_before":
            on["latency_ms"]["p99"] <= k1303["before"]["elig-on"]["latency_ms"]["p99"],
        "kip1303_off_remote_gets": off["remote"]["gets"],
    }


def plot(doc: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (copy_ax, lat_ax, seq_ax) = plt.subplots(1, 3, figsize=(18, 5))
    for topic in TOPICS:
        for mode, style in (("off", "-"), ("on", "--")):
            r = doc["kip1023"][topic][mode]
            copy_ax.plot([t for t, _ in r["timeline"]], [b / MIB for _, b in r["timeline"]], style, marker=".",
                         label=f"{topic}: KIP-1023 {mode}, in the ISR after {r['time_to_isr_s']:.1f} s")
    copy_ax.set(title="KIP-1023: the added replica's local log until it joins the ISR",
                xlabel="seconds since the reassignment", ylabel="MiB of .log files")
    copy_ax.legend(fontsize=7)
    k = doc["kip1303"]
    labels, bars = [], {"p50 (1st read)": [], "p99 (1st read)": [], "p99 (median of reads)": []}
    for phase in ("before", "after"):
        for topic in TOPICS:
            r = k[phase][topic]
            labels.append(f"{topic}\n{phase} kill, leader {r['node']}\nGETs {r['remote_gets_per_read']}")
            bars["p50 (1st read)"].append(r["latency_ms"]["p50"])
            bars["p99 (1st read)"].append(r["latency_ms"]["p99"])
            bars["p99 (median of reads)"].append(r["p99_median_ms"])
    xs = list(range(len(labels)))
    for i, (name, values) in enumerate(bars.items()):
        lat_ax.bar([x + (i - 1) * 0.27 for x in xs], values, width=0.27, label=name)
    lat_ax.set_xticks(xs, labels, fontsize=7)
    lat_ax.set(title="KIP-1303: Fetch latency, most recent 50 %", ylabel="ms per Fetch (1 MiB)")
    lat_ax.legend(fontsize=7)
    for phase, topic, style in (("before", "elig-on", ":"), ("after", "elig-on", "-"), ("after", "elig-off", "--")):
        r = k[phase][topic]
        seq_ax.plot(r["runs"][0]["per_fetch_ms"], style, linewidth=0.8,
                    label=f"{topic} {phase} kill (leader {r['node']})")
    seq_ax.set(title="first read: every Fetch in order", xlabel="Fetch #", ylabel="ms (log scale)", yscale="log")
    seq_ax.legend(fontsize=7)
    fig.suptitle(f"tierlog: {doc['args']['mib']} MiB per topic, segments {doc['args']['segment_mib']} MiB, "
                 f"local retention {float(doc['args']['local_keep']):.0%} of the data")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=int, default=2048, help="data per topic (default 2 GiB)")
    p.add_argument("--segment-mib", type=int, default=64, help="segment.bytes of the topics, MiB")
    p.add_argument("--local-keep", type=float, default=0.6, help="local.retention.bytes as a fraction of --mib")
    p.add_argument("--reads", type=int, default=3, help="reads of the most recent 50 %% per topic and phase")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more tierlog up settings")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--keep-dir", action="store_true", help="keep the cluster's data dir (printed)")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="tierlog-bench-kip1023-")
    print(f"data dir {tmp}", flush=True)
    try:
        doc = run(args, Path(tmp))
    finally:
        if not args.keep_dir:
            subprocess.run(["rm", "-rf", tmp], check=False)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    args.out.mkdir(parents=True, exist_ok=True)
    for name in (f"kip1023_{stamp}.json", "kip1023_latest.json"):
        (args.out / name).write_text(json.dumps(doc, indent=1))
    plot(doc, args.out / "kip1023.png")
    print(json.dumps(doc["goals"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
