"""A nemesis soak (issue 40): every workload at once under overlapping faults, then a checker.

    PYTHONPATH=src .venv/bin/python bench/soak.py --seconds 1800 --seed 1     # as root
    PYTHONPATH=src .venv/bin/python bench/soak.py --short --seed 7            # what the suite runs

A cluster of 3 controllers and 4 brokers, each node in a network namespace of its own on a
bridge in a hub namespace (bench/soak_lab.py: no address outside them), the brokers' log dirs
on tmpfs mounts, remote storage on a moto S3 server in a namespace of its own.  At the same
time: two confluent-kafka and one kafka-python idempotent acks=all producers writing
sequence-numbered records, one more writing a topic that turns tiered (remote.storage.enable
altered on) and uploads, a classic and a KIP-848 group of two members each committing,
transactional producers and read_committed group readers (tests/support/txn_workload.py), a
transactional consume-transform-produce loop (bench/soak_ctp.py), and topics created,
reassigned and deleted.  The nemesis (bench/soak_nemesis.py) injects overlapping faults from
a schedule the seed draws; then every fault stops, the cluster must
converge, and the checker (bench/soak_checker.py, tests/support/txn_anomalies.py) looks for
what was lost.  A failure prints the seed and the schedule; the same seed replays the schedule.

Writes ``bench/results/soak_<timestamp>.json`` and ``soak_latest.json`` (recovery per fault kind,
every fault, the anomalies) and a timeline PNG (``--png``).  Exits 1 on any anomaly.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # bench/profile.py shadows profile
for helpers in ("tests/integration", "tests/support"):
    sys.path.insert(0, str(HERE.parent / helpers))
sys.path.insert(0, str(HERE))

import soak_checker as checker
import soak_lab as lab
import soak_report as report
import txn_anomalies
import txn_workload
from cluster import FAST_REPLICATION, wait_for
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from nodeproc import start_all, stop_all
from soak_ctp import GROUP as CTP_GROUP
from soak_ctp import CtpLoop, exactly_once
from soak_nemesis import KINDS, Nemesis, schedule
from soak_workload import QUIET, CommitWatch, GroupMember, SeqProducer, TopicChurn, turn_tiered

from tierlog.parent_watch import child_env, exit_with_parent

DATA, TIERED, TXN, OUT, LOSSY = "soak-data", "soak-tiered", "soak-txn", "soak-out", "soak-lossy"
PARTITIONS = {DATA: 4, TIERED: 2, TXN: 4, OUT: 4, LOSSY: 1}
GROUPS = {"soak-classic": "classic", "soak-848": "consumer"}
TIDS = ["soak-txn-0", "soak-txn-1"]
MOTO_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "tierlog-soak", "AWS_SECRET_ACCESS_KEY": "tierlog-soak-secret",
                    "AWS_DEFAULT_REGION": "us-east-1"}
BUCKET = "tierlog-soak"
MOTO_MAIN = ("import sys; from tierlog.parent_watch import exit_with_parent; exit_with_parent(); "
             "from moto.server import main; main(sys.argv[1:])")     # moto ends with the soak, however it ends
CONVERGE_S = 240            # after the faults stop, the cluster converges within this
SHORT_ENOUGH_S = 90         # --short: the faults stop here once each kind was applied (else up to 120 s)
NODE_PROPS = {**FAST_REPLICATION, **txn_workload.CLUSTER_PROPS,
              "remote.log.storage.system.enable": "true", "remote.log.manager.task.interval.ms": "500",
              "log.retention.check.interval.ms": "1000", "log.segment.delete.delay.ms": "1000",
              "remote.log.manager.task.retry.backoff.ms": "200", "remote.log.manager.task.retry.backoff.max.ms": "2000",
              "rsm.config.storage.backend": "s3", "rsm.config.storage.s3.bucket.name": BUCKET,
              "rsm.config.storage.s3.prefix": "soak/",
              "rsm.config.storage.s3.endpoint.url": f"http://{lab.host(lab.MOTO_ID)}:{lab.MOTO_PORT}",
              "rsm.config.storage.s3.region": "us-east-1", "rsm.config.storage.s3.path.style.access.enabled": "true"}


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1800, help="how long the faults go on")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--short", action="store_true",
                    help=f"the suite's soak: faults one every 5-10 s, for {SHORT_ENOUGH_S:.0f} s once every kind "
                         f"was applied, at most 120 s")
    ap.add_argument("--overlap", type=int, default=2, help="at most this many faults at once")
    ap.add_argument("--rate", type=float, default=40, help="records/s of each sequence producer")
    ap.add_argument("--root", help="where the nodes' dirs go (default: a new temporary dir)")
    ap.add_argument("--results", default=str(HERE / "results"), help="where the JSON and the PNG go")
    ap.add_argument("--png", help="the timeline's file name in --results (default soak_<timestamp>.png)")
    ap.add_argument("--print-schedule", action="store_true", help="print the seed's schedule and exit")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tag", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.short:
        args.seconds = min(args.seconds, 120)
    return args


def plan(args):
    gap = (5, 10) if args.short else (8, 20)
    return schedule(args.seed, args.seconds, warmup_s=15, gap_s=gap, length_s=(3, 10))


def _exit_on_sigterm(*_) -> None:
    sys.exit(143)       # the finally blocks stop the nodes and moto, and take the namespaces down


def main() -> int:
    args = parse()
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if args.print_schedule:
        print("\n".join(str(p) for p in plan(args)))
        return 0
    return inner(args) if args.inner else outer(args)


def outer(args) -> int:
    """Make the namespaces and the disks, run the soak inside the hub, take it all down."""
    why = lab.available()
    if why:
        print(f"soak: {why}", file=sys.stderr)
        return 2
    lab.Net.sweep()
    root = Path(args.root or tempfile.mkdtemp(prefix="tierlog-soak-"))
    net = lab.Net([*lab.CONTROLLERS, *lab.BROKERS, lab.MOTO_ID]).create()
    try:
        cmd = [*lab.mount_disks(root), "ip", "netns", "exec", net.hub, sys.executable, __file__, "--inner",
               "--tag", net.tag, "--root", str(root), *sys.argv[1:]]
        return subprocess.run(cmd, check=False, env=child_env()).returncode
    finally:
        net.destroy()


def inner(args) -> int:
    exit_with_parent()          # a driver killed -9 (a test's timeout) takes this soak with it
    os.environ.update(MOTO_CREDENTIALS)
    os.environ.pop("AWS_PROFILE", None)
    root = Path(args.root)
    net = lab.Net([*lab.CONTROLLERS, *lab.BROKERS, lab.MOTO_ID], tag=args.tag)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    moto = start_moto(net, root)
    cluster = lab.SoakCluster(root, net, NODE_PROPS)
    t0 = time.monotonic()
    out: dict = {"seed": args.seed, "seconds": args.seconds, "short": args.short, "overlap": args.overlap,
                 "load_avg_start": os.getloadavg()}
    try:
        start_all(list(cluster.nodes.values()))
        out.update(soak(args, cluster, net, moto, t0))
    finally:
        stop_all(list(cluster.nodes.values()))
        moto.terminate()
        moto.wait(10)
        if out.get("anomalies") or "anomalies" not in out:     # the tmpfs log dirs go with this process
            for b in cluster.brokers:
                shutil.copytree(b.data_dir, root / "kept" / f"node-{b.node_id}", dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("soak-filler", "__*"))
            print(f"the brokers' log dirs are kept in {root / 'kept'}", file=sys.stderr)
    out["load_avg_end"] = os.getloadavg()
    out["wall_s"] = round(time.monotonic() - t0, 1)
    Path(args.results).mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"soak_{stamp}.json", "soak_latest.json"):
        (Path(args.results) / name).write_text(json.dumps(out, indent=2) + "\n")
    summary(out)
    return 1 if out.get("anomalies") else 0


def start_moto(net, root: Path) -> subprocess.Popen:
    with open(root / "moto.log", "wb") as log:
        proc = subprocess.Popen(["ip", "netns", "exec", net.ns(lab.MOTO_ID), sys.executable, "-c", MOTO_MAIN,
                                 "-H", lab.host(lab.MOTO_ID), "-p", str(lab.MOTO_PORT)], stdout=log,
                                stderr=subprocess.STDOUT, env=child_env())
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError
    s3 = boto3.client("s3", endpoint_url=NODE_PROPS["rsm.config.storage.s3.endpoint.url"], region_name="us-east-1")

    def bucket():
        try:
            s3.create_bucket(Bucket=BUCKET)
            return True
        except (BotoCoreError, ClientError):
            return False
    wait_for(bucket, 120, "the moto S3 server")
    return proc


def create_topics(boot: str) -> None:
    """The soak's topics, each retried until created (the machine may be loaded: a request may time out)."""
    tiered_conf = {"min.insync.replicas": "2", "segment.bytes": str(1024 * 1024),
                   "local.retention.bytes": str(1024 * 1024)}
    plain = {"min.insync.replicas": "2"}
    for topic, config in ((DATA, plain), (TIERED, tiered_conf), (TXN, plain), (OUT, plain),
                          (LOSSY, {**tiered_conf, "remote.storage.enable": "true"})):
        _retry(lambda topic=topic, config=config: _create_topic(boot, NewTopic(topic, PARTITIONS[topic], 3,
                                                                                config=config)), 180)


def _create_topic(boot: str, new: NewTopic) -> None:
    admin = AdminClient({**QUIET, "bootstrap.servers": boot})
    try:
        admin.create_topics([new], request_timeout=30)[new.topic].result(60)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:     # an earlier attempt got there
            raise


def soak(args, cluster: lab.SoakCluster, net, moto, t0: float) -> dict:
    boot = cluster.bootstrap
    converge(cluster, 300, "the cluster up")
    create_topics(boot)
    converge(cluster, 300, "the topics everywhere")
    rng = random.Random(args.seed)
    producers = [SeqProducer("ck-0", boot, DATA, PARTITIONS[DATA], "confluent", args.rate, t0),
                 SeqProducer("ck-1", boot, DATA, PARTITIONS[DATA], "confluent", args.rate, t0),
                 SeqProducer("kp-0", boot, DATA, PARTITIONS[DATA], "kafka-python", args.rate, t0)]
    tiered = SeqProducer("tiered-0", boot, TIERED, PARTITIONS[TIERED], "confluent", args.rate * 3, t0, pad=1000)
    lossy = SeqProducer("lossy-0", boot, LOSSY, 1, "confluent", args.rate * 2, t0, pad=1000)
    members = [GroupMember(f"{g}-{i}", boot, DATA, g, proto, t0) for g, proto in GROUPS.items() for i in range(2)]
    watch = CommitWatch(boot, DATA, PARTITIONS[DATA], list(GROUPS), t0)
    rec, txn_stop = txn_workload.Recorder(), threading.Event()
    txn_threads = [txn_workload.TxnProducer(boot, TXN, PARTITIONS[TXN], tid, random.Random(rng.random()), rec,
                                            txn_stop) for tid in TIDS]
    txn_threads.append(txn_workload.GroupReader(boot, TXN, list(range(PARTITIONS[TXN])), "txn-reader",
                                                random.Random(rng.random()), rec, txn_stop))
    churn = TopicChurn(boot, list(lab.BROKERS), random.Random(rng.random()), 8 if args.short else 15, t0)
    ctp = CtpLoop(boot, DATA, OUT, t0)
    health = report.Health(cluster, t0)
    threads = [*producers, tiered, lossy, *members, watch, *txn_threads, churn, ctp, health]
    for t in threads:
        t.start()
    tiered_on = threading.Event()
    tiering = threading.Thread(target=lambda: _retry(lambda: turn_tiered(boot, TIERED, tiered_on), 120), daemon=True)
    threading.Timer(10, tiering.start).start()
    faults_from = time.monotonic() - t0
    the_plan = [type(p)(p.at_s + faults_from, p.kind, p.role, p.pick, p.duration_s) for p in plan(args)]
    store = {k: v for k, v in NODE_PROPS.items() if k.startswith("rsm.config.")}
    nemesis = Nemesis(cluster, net, store, LOSSY, list(GROUPS), TIDS, t0, args.overlap)
    nemesis.run(the_plan, faults_from + args.seconds, faults_from + SHORT_ENOUGH_S if args.short else None)
    healed = time.monotonic() - t0
    anomalies: list[str] = []
    try:
        wait_for(lambda: not checker.convergence_problems(cluster), CONVERGE_S, "convergence", interval_s=1)
    except AssertionError:
        anomalies += [f"not converged {CONVERGE_S}s after healing: {p}" for p in checker.convergence_problems(cluster)]
    converged = time.monotonic() - t0
    # the workloads stop only now: what was sent during the faults must get through
    unsent = {p.name: p.finish(120) for p in [*producers, tiered, lossy]}
    flushed = time.monotonic() - t0
    for m in members:
        m.stopping.set()
    watch.stopping.set()
    churn.stopping.set()
    txn_stop.set()
    ctp.stopping.set()
    workloads = [*members, watch, churn, *txn_threads, ctp]
    stop_deadline = time.monotonic() + 60          # they stop at once, so they are waited for together
    for t in workloads:
        t.join(max(0.0, stop_deadline - time.monotonic()))
    stuck = {t.name: where(t) for t in workloads if t.is_alive()}
    joined = time.monotonic() - t0
    for tid in TIDS:
        txn_workload.new_producer(boot, tid, rec.note)
    converge(cluster, CONVERGE_S, "convergence after the workloads")
    health.stopping.set()
    end_s = time.monotonic() - t0
    if not tiered_on.is_set():
        anomalies.append(f"{TIERED}: remote.storage.enable could not be turned on")
    found = check(cluster, producers, tiered, members, watch, churn, rec, boot)
    known = [a for a in found if known_duplicate(a, [*producers, tiered])]
    anomalies += [a for a in found if a not in known]
    anomalies += check_ctp(ctp, boot)
    anomalies += [f"a node's traceback: {c}" for c in checker.crashes(cluster)]
    anomalies += checker.lost_object(remote_verify(LOSSY), nemesis.lost, boot, LOSSY, lossy.acks)
    checked = time.monotonic() - t0
    acks = {p.name: p.acks for p in producers}
    rows, table = report.recovery(nemesis.faults, acks, health.samples, end_s)
    out = {"healed_at_s": round(healed, 1), "converged_s": round(converged - healed, 1),
           "phases_s": {k: round(v, 1) for k, v in (("start", faults_from), ("faults", healed - faults_from),
                                                    ("converge", converged - healed),
                                                    ("stop_producers", flushed - converged),
                                                    ("stop_workloads", joined - flushed),
                                                    ("stop_rest", end_s - joined), ("checks", checked - end_s))},
           "not_stopped_in_60s": stuck,
           "acknowledged": {p.name: len(p.acks) for p in [*producers, tiered, lossy]},
           "known": known, "epoch_bumps": {p.name: [line for line in p.idemp_log if "bumped epoch" in line]
                                           for p in [*producers, tiered] if p.client == "confluent"},
           "acknowledged_without_offset": {p.name: sum(1 for a in p.acks if a.offset is None)
                                           for p in [*producers, tiered, lossy]},
           "lost_segments": nemesis.lost,
           "unacknowledged": unsent, "producer_errors": {p.name: p.errors[:5] for p in [*producers, tiered, lossy]},
           "txn_outcomes": _count(t.outcome for t in rec.history().txns),
           "ctp": {"committed": ctp.committed, "aborted": ctp.aborted, "replaced": ctp.replaced,
                   "events": ctp.events[-20:]},
           "group_reads": {m.name: len(m.reads) for m in members},
           "churn": {"created": len(churn.state.created), "deleted": len(churn.state.deleted),
                     "reassigned": len(churn.state.reassigned)},
           "schedule": [str(p) for p in plan(args)], "kinds_done": sorted({f.planned.kind for f in nemesis.faults}),
           "faults": rows, "recovery": table, "anomalies": anomalies, "nemesis_log": nemesis.events}
    if set(KINDS) - {f.planned.kind for f in nemesis.faults}:
        out["note"] = "some fault kinds were not applied (no free target at the time)"
    png = Path(args.results) / (args.png or f"soak_{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.png")
    Path(args.results).mkdir(parents=True, exist_ok=True)
    report.timeline(png, nemesis.faults, acks, health.samples, sorted(cluster.nodes), end_s,
                    f"tierlog soak, seed {args.seed}, {healed - faults_from:.0f} s of faults (overlap {args.overlap}); "
                    f"{sum(len(p.acks) for p in producers)} acks, {len(anomalies)} anomalies")
    out["png"] = str(png)
    if anomalies or known:
        out["logs_tail"] = cluster.logs_tail(20)
        out["idempotence_log"] = {p.name: p.idemp_log[-200:] for p in [*producers, tiered, lossy]}
    return out


def check(cluster, producers, tiered, members, watch, churn, rec, boot) -> list[str]:
    out: list[str] = []
    data = checker.read_all(boot, DATA, PARTITIONS[DATA])
    out += checker.acknowledged(DATA, {p.name: p.acks for p in producers}, data)
    tiered_log = checker.read_all(boot, TIERED, PARTITIONS[TIERED])
    out += checker.acknowledged(TIERED, {tiered.name: tiered.acks}, tiered_log)
    out += [f"{TIERED}-{p}: the log does not start at offset 0 (starts at {min(r) if r else None})"
            for p, r in tiered_log.items() if r and min(r) != 0]
    out += [f"{TIERED}-{p}: nothing uploaded (highest tiered offset {t})"
            for p, t in checker.tiered_offsets(cluster, TIERED, PARTITIONS[TIERED]).items() if t is None or t < 0]
    log_start = {p: min(r) if r else 0 for p, r in data.items()}
    final = {g: {} for g in GROUPS}
    for g, samples in watch.seen.items():
        if samples:
            final[g] = samples[-1][1]
    reads = {g: set().union(*(m.reads for m in members if m.consumer and m.name.startswith(g))) for g in GROUPS}
    out += checker.groups(watch.seen, reads, final, log_start)
    out += [f"group member {m.name} failed: {m.error!r}" for m in members if m.error]
    history = rec.history()
    with rec.lock:
        rec.sessions.append((next(rec.begun), txn_workload.drain(boot, TXN, PARTITIONS[TXN])))
    history = rec.history()
    out += [f"transactions: {a.kind}: {a.detail}" for a in txn_anomalies.check(history)][:30]
    existing = {t["Name"] for t in checker.metadata(cluster.brokers[0])["Topics"]}
    out += checker.churn(churn.state, existing)
    return out


def where(thread: threading.Thread) -> list[str]:
    """The innermost calls ``thread`` is in (why a workload did not stop)."""
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return []
    return [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in traceback.extract_stack(frame)[-4:]]


def converge(cluster, timeout_s: float, what: str) -> None:
    try:
        wait_for(lambda: not checker.convergence_problems(cluster), timeout_s, what, interval_s=0.5)
    except AssertionError as e:
        raise AssertionError(f"{e}: {checker.convergence_problems(cluster)}") from None


def remote_verify(topic: str) -> list[list[str]]:
    """``tierlog remote verify`` of ``topic``'s remote segments, straight from the bucket: its problem rows."""
    sets = [f"{k}={NODE_PROPS[k]}" for k in ("rsm.config.storage.s3.endpoint.url", "rsm.config.storage.s3.region",
                                              "rsm.config.storage.s3.path.style.access.enabled")]
    run = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "remote", "verify", "--storage",
                          f"s3://{BUCKET}/{NODE_PROPS['rsm.config.storage.s3.prefix'].rstrip('/')}", "--topic", topic,
                          *(w for s in sets for w in ("--set", s))], capture_output=True, text=True, timeout=120,
                         check=False)
    if run.returncode not in (0, 1):
        raise RuntimeError(f"tierlog remote verify: {run.stderr.strip()}")
    return [line.split("\t") for line in run.stdout.splitlines()[1:] if line.strip()]


# the confluent-kafka producers: ck-N on soak-data, tiered-0 on soak-tiered (its values padded with x)
KNOWN_DUPLICATE = re.compile(rf"^(?:{DATA}|{TIERED})-\d+: (?:b'(?P<a>(?:ck|tiered)-\d+):\d+(?:\|x*)?' at \d+ and "
                             r"again at \d+ \(duplicate\)|(?P<b>(?:ck|tiered)-\d+) seq \d+ at \d+ after seq \d+ at \d+ "
                             r"\(order\))$")


def known_duplicate(anomaly: str, producers) -> bool:
    """librdkafka's open bug #4953 (fix proposed in its PR #4972): when a Produce request fails (a
    leader moved, a connection reset), the requests in flight behind it get OUT_OF_ORDER_SEQUENCE_NUMBER,
    as Apache Kafka's broker answers them too, and librdkafka bumps its epoch ("skipped sequence
    numbers") and sends them again under it, although the broker may hold them: the same records twice.
    Counted and shown apart, never silently, and only for a producer whose log shows that bump."""
    m = KNOWN_DUPLICATE.match(anomaly)
    name = m and (m.group("a") or m.group("b"))
    return bool(name) and any(p.name == name and any("bumped epoch" in line for line in p.idemp_log)
                              for p in producers)


def check_ctp(ctp: CtpLoop, boot: str) -> list[str]:
    out = [f"ctp loop failed: {ctp.error!r}"] if ctp.error else []
    drained = txn_workload.drain(boot, OUT, PARTITIONS[OUT])
    outputs: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS[OUT])}
    for r in drained.reads:
        outputs[r.partition].append(r.value.encode())
    reader = Consumer({**QUIET, "bootstrap.servers": boot, "group.id": CTP_GROUP})
    try:
        got = reader.committed([TopicPartition(DATA, p) for p in range(PARTITIONS[DATA])], timeout=30)
    finally:
        reader.close()
    return out + exactly_once(outputs, {tp.partition: max(tp.offset, 0) for tp in got})


def _retry(fn, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except Exception:       # noqa: BLE001 - during faults; the checker finds the topic not tiered
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out


def summary(out: dict) -> None:
    print(f"soak seed {out['seed']}: {out.get('wall_s')} s, acknowledged {out.get('acknowledged')}, "
          f"transactions {out.get('txn_outcomes')}, faults {len(out.get('faults', []))} "
          f"({', '.join(out.get('kinds_done', []))}), converged {out.get('converged_s')} s after healing; "
          f"phases (s) {out.get('phases_s')}")
    for kind, entry in out.get("recovery", {}).items():
        print(f"  {kind:17} x{entry['faults']:<3} produce {entry['produce_recovery_s']}  "
              f"replicated {entry['replicated_s']}")
    if out.get("known"):
        print(f"KNOWN BUGS ({len(out['known'])}, bench/README.md), first {out['known'][0]}; "
              f"epoch bumps: {out.get('epoch_bumps')}")
    if out.get("anomalies"):
        print(f"ANOMALIES ({len(out['anomalies'])}), seed {out['seed']} replays the schedule:")
        print("\n".join(f"  {a}" for a in out["anomalies"][:40]))
        print("schedule:\n" + "\n".join(f"  {s}" for s in out["schedule"]))
        print("nemesis:\n" + "\n".join(f"  {s}" for s in out["nemesis_log"]))
    else:
        print("no anomaly")


if __name__ == "__main__":
    sys.exit(main())
