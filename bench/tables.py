"""Topics as Iceberg tables: upload throughput with the table on vs off, and Spark reading a topic
from its table vs from its segments vs through the brokers.

    .venv/bin/python bench/tables.py                 # 1 GiB per topic
    .venv/bin/python bench/tables.py --mib 128       # smoke run
    .venv/bin/python bench/tables.py --upload-only   # phase 1 only: results/tables_upload_*.json
    .venv/bin/python bench/tables.py --spark-only    # phase 2 only: results/tables_spark_*.json
    .venv/bin/python bench/tables.py --upload-only --store s3   # results/tables_upload_s3_*.json

One tierlog node (broker and controller), fs remote storage in a temp directory (deleted at the end;
``--keep`` keeps it, with the node's log).

1. **upload**: for ``tierlog.table.mode`` ``off`` then ``key_value``, a topic of 4 partitions
   (16 MiB segments, ``--segment-mib``; copies held back with ``remote.log.copy.disable=true``) is filled with
   ``--mib`` of 1 KiB random values; then copying is turned on (IncrementalAlterConfigs) and
   the clock runs until every closed segment is uploaded (ListOffsets -5 reaches the offset
   before each partition's active segment). Before both, unmeasured, a small table topic is
   uploaded: the broker's first table commit imports pyiceberg and opens the catalog, once per
   process (seconds under load), which is not upload throughput. MiB/s = closed segment bytes /
   that time, and the broker's CPU seconds over it (/proc: steadier than time on a shared
   machine); with the table on, each upload includes its Parquet file and Iceberg commit.
   ``--rounds N`` alternates off and key_value N times; the ratio on/off is the median. Each
   measured topic is deleted (and its segments waited for) before the next phase. ``--store s3``
   (with ``--upload-only``): the remote storage a moto S3 server process, the catalog SQLite.
2. **spark** (``local[2]``, read_committed, two aggregations over the key_value topic:
   ``values``, ``sum(length(value))``, every value reaching the JVM; ``per_minute``, records per
   partition and minute, with the schema ``partition int, timestamp timestamp``, so the table
   reads two columns from its files while the segments and the brokers decode every record),
   each after unmeasured warm-up reads (each way twice: a way's first reads pay most of the
   JVM's JIT compiling):
   ``remoteStorage=table`` (the table's Parquet files where the table covers, the local tail
   through the broker), ``remoteStorage=DIR`` (segments straight from the store, tail through
   the broker), ``remoteStorage=off`` (all through the broker), ``--rounds`` times in turn,
   each round starting with the next way (the median); with the CPU seconds of this process's
   tree (the driver, Spark's JVM and its Python workers) and of the broker, per GiB. Then ``option("table")`` with a filter on ``timestamp`` keeping the last
   ~10 % of records: the files pyiceberg plans of all. ``--spark-only`` fills and uploads (unmeasured)
   only the key_value topic, then runs this phase.

Writes ``results/tables_<timestamp>.json`` and ``results/tables_latest.json``; the machine's
load average at the start and end is in the file (the machine is shared).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # bench/profile.py shadows profile
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))
sys.path.append(str(HERE))

from cputree import own_cpu_s, tree_cpu_s
from nodeproc import NodeProcess
from spark_read import KAFKA_SESSION, RECORD, TIERED_SEGMENT_BYTES, fill, spark_session
from tiered import fs_props

MIB = 1 << 20
PARTITIONS = 4
SEGMENT_BYTES = [TIERED_SEGMENT_BYTES]      # the run's segment.bytes (--segment-mib)
S3: list = [None]                           # the MotoServer of --store s3
TOPIC_CONFIG = {"remote.storage.enable": "true", "segment.bytes": str(TIERED_SEGMENT_BYTES),     # --segment-mib
                "remote.log.copy.disable": "true"}


def _closed_ends(data_dir: Path, topic: str) -> dict[int, int]:
    """Per partition, the last offset of its closed segments (the active segment's base offset - 1)."""
    out = {}
    for p in range(PARTITIONS):
        bases = sorted(int(f.stem) for f in (data_dir / f"{topic}-{p}").glob("*.log"))
        out[p] = bases[-1] - 1
    return out


def _closed_bytes(data_dir: Path, topic: str) -> int:
    total = 0
    for p in range(PARTITIONS):
        logs = sorted((data_dir / f"{topic}-{p}").glob("*.log"), key=lambda f: int(f.stem))
        total += sum(f.stat().st_size for f in logs[:-1])
    return total


def upload_phase(node, data_dir: Path, mode: str, n: int, name: str = "upload") -> dict:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    from tierlog.client import Cluster
    from tierlog.tiered.read_rules import LATEST_TIERED

    topic = f"{name}-{mode}"
    fill(node.bootstrap, topic, PARTITIONS, n, {**TOPIC_CONFIG, "segment.bytes": str(SEGMENT_BYTES[0]),
                                                "tierlog.table.mode": mode})
    ends, size = _closed_ends(data_dir, topic), _closed_bytes(data_dir, topic)
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("remote.log.copy.disable", "false", incremental_operation=AlterConfigOpType.SET)])
    cluster = Cluster(node.bootstrap)
    pid = int(node.announced["pid"])
    cpu = own_cpu_s(pid)
    t = time.perf_counter()
    admin.incremental_alter_configs([resource])[resource].result(30)
    deadline = time.monotonic() + 1800
    while True:
        tiered = cluster.list_offsets([(topic, p) for p in range(PARTITIONS)], LATEST_TIERED)
        if all(tiered[(topic, p)] >= ends[p] for p in range(PARTITIONS)):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"{topic}: not uploaded after 1800 s: {tiered} of {ends}")
        time.sleep(0.1)
    dt = time.perf_counter() - t
    cpu = own_cpu_s(pid) - cpu
    cluster.close()
    print(f"upload, table {mode}: {size / MIB:.0f} MiB in {dt:.1f} s = {size / MIB / dt:.1f} MiB/s, broker CPU "
          f"{cpu:.1f} s ({cpu / (size / MIB / 1024):.1f} s/GiB)", flush=True)
    return {"topic": topic, "closed_bytes": size, "seconds": dt, "mib_s": size / MIB / dt, "broker_cpu_s": cpu,
            "broker_cpu_s_per_gib": cpu / (size / MIB / 1024)}


# the two aggregations: every value's bytes to the JVM; records per partition and minute (no value:
# the schema names two columns, so the table reads two from its files, the others decode every record)
QUERIES = {"values": (None, ("count(*) as n", "sum(length(value)) as b")),
           "per_minute": ("partition int, timestamp timestamp", ("count(*) as n", "count(distinct partition, "
                                                                 "date_trunc('minute', timestamp)) as b"))}


def spark_phase(spark, node, topic: str, options: dict, query: str = "values") -> dict:
    schema, aggregate = QUERIES[query]
    reader = spark.read.format("tierlog").option("kafka.bootstrap.servers", node.bootstrap) \
        .option("subscribe", topic).option("kafka.isolation.level", "read_committed")
    if schema:
        reader = reader.schema(schema)
    for k, v in options.items():
        reader = reader.option(k, v)
    pid = int(node.announced["pid"])
    spark_cpu, broker_cpu = tree_cpu_s(os.getpid()), tree_cpu_s(pid)     # the node is in this tree too
    t = time.perf_counter()
    row = reader.load().selectExpr(*aggregate).collect()[0]
    dt = time.perf_counter() - t
    broker_cpu = tree_cpu_s(pid) - broker_cpu
    cpu = tree_cpu_s(os.getpid()) - spark_cpu - broker_cpu, broker_cpu
    size = row.n * RECORD                   # the topic's value bytes (every value is RECORD bytes)
    return {"options": options, "query": query, "records": row.n, "result": row.b, "seconds": dt,
            "mib_s": size / MIB / dt, "spark_cpu_s": cpu[0], "broker_cpu_s": cpu[1],
            "cpu_s_per_gib": sum(cpu) / (size / MIB / 1024)}


def filtered_table_read(spark, remote: Path, topic: str) -> dict:
    """option("table") with a timestamp filter keeping the last ~10 %: files planned of all, and time."""
    from tierlog.spark.table_read import TierlogTableReader, arrow_schema, load_table, table_read_options
    opts = table_read_options({"table": topic, "storage": str(remote)})
    table = load_table(opts)
    ts = table.scan(selected_fields=("timestamp",)).to_arrow().column("timestamp")
    cut = sorted(ts.to_pylist())[int(len(ts) * 0.9)]
    where = f"timestamp >= timestamp'{cut.astimezone(datetime.UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    reader = TierlogTableReader(opts, arrow_schema(table))
    reader.row_filter = f"timestamp >= '{cut.isoformat()}'"
    planned = sum(len(p.files) for p in reader.partitions())
    files = len(list(table.scan().plan_files()))
    timed = {}
    for name, condition in (("unfiltered", "true"), ("filtered", where)) * 2:     # the first of each unmeasured
        t = time.perf_counter()
        n = spark.read.format("tierlog").option("table", topic).option("storage", str(remote)).load() \
            .where(condition).selectExpr("count(*) as n").collect()[0].n
        timed[name] = (n, time.perf_counter() - t)
    return {"filter": where, "files_planned": planned, "files": files, "records": timed["filtered"][0],
            "seconds": timed["filtered"][1], "unfiltered_records": timed["unfiltered"][0],
            "unfiltered_seconds": timed["unfiltered"][1]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=float, default=1024.0, help="data per topic (default 1 GiB)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--upload-only", action="store_true", help="phase 1 only (results/tables_upload_*.json)")
    p.add_argument("--spark-only", action="store_true", help="phase 2 only (results/tables_spark_*.json)")
    p.add_argument("--rounds", type=int, default=1, help="upload off / key_value rounds, alternated (the median ratio)")
    p.add_argument("--segment-mib", type=int, default=TIERED_SEGMENT_BYTES // MIB,
                   help=f"segment.bytes of the topics in MiB (default {TIERED_SEGMENT_BYTES // MIB}; Kafka's is 1024)")
    p.add_argument("--store", choices=("fs", "s3"), default="fs",
                   help="remote storage: a directory (default) or a moto S3 server process (with --upload-only)")
    p.add_argument("--keep", action="store_true", help="keep the node's directory (logs, store) instead of deleting it")
    args = p.parse_args()
    if args.store == "s3" and not args.upload_only:
        p.error("--store s3 measures the upload only: add --upload-only")
    n = int(args.mib * MIB / RECORD)
    SEGMENT_BYTES[0] = args.segment_mib * MIB
    root = Path(tempfile.mkdtemp(prefix="bench-tables-"))
    remote = root / "remote-storage"
    out: dict = {"mib": args.mib, "records": n, "rounds": args.rounds, "record_bytes": RECORD, "partitions": PARTITIONS,
                 "segment_bytes": SEGMENT_BYTES[0], "machine": {"cpus": os.cpu_count(),
                                                                    "load_avg_start": os.getloadavg()}}
    out["store"] = args.store
    with contextlib.ExitStack() as stack:
        props = {**fs_props(remote), **KAFKA_SESSION} if args.store == "fs" else {**s3_props(stack, root), **KAFKA_SESSION}
        run(args, out, root, props, n)
    out["machine"]["load_avg_end"] = os.getloadavg()
    write_results(args, out)


def run(args, out: dict, root: Path, props: dict, n: int) -> None:
    remote = root / "remote-storage"
    node = NodeProcess(root / "node-1", props=props).start()
    try:
        data_dir = root / "node-1" / "data"
        if args.spark_only:          # the key_value topic only, its upload not measured
            out["upload"] = {"key_value": upload_phase(node, data_dir, "key_value", n)}
        else:
            upload_rounds(out, node, data_dir, n)
        if not args.upload_only:
            spark_phases(out, node, remote)
    finally:
        node.stop()
        if args.keep:
            print(f"kept {root}", flush=True)
        else:                       # GiBs per run: never left for others to delete by name
            shutil.rmtree(root, ignore_errors=True)


def s3_props(stack: contextlib.ExitStack, root: Path) -> dict:
    """A moto S3 server process for the node's remote storage, the catalog a SQLite file beside it."""
    from tiered import MOTO_CREDENTIALS, MOTO_REGION, TIERED_BROKER, MotoServer
    os.environ.update({**MOTO_CREDENTIALS, "AWS_DEFAULT_REGION": MOTO_REGION})   # the node's boto3
    moto = stack.enter_context(MotoServer(root / "moto"))
    S3[0] = moto
    return {**TIERED_BROKER, **moto.settings(), "tierlog.table.catalog.uri": f"sqlite:///{root / 'catalog.db'}"}


def write_results(args, out: dict) -> None:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    args.out.mkdir(parents=True, exist_ok=True)
    upload = "tables_upload_s3" if args.store == "s3" else "tables_upload"
    prefix = upload if args.upload_only else "tables_spark" if args.spark_only else "tables"
    for name in (f"{prefix}_{stamp}.json", f"{prefix}_latest.json"):
        (args.out / name).write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(json.dumps({"upload_on_vs_off": out.get("upload_on_vs_off"), "load": out["machine"]}, default=str))


def upload_rounds(out: dict, node, data_dir: Path, n: int) -> None:
    """Phase 1: off and key_value uploads alternated ``rounds`` times, into ``out``."""
    # unmeasured: the broker's first table commit loads pyiceberg and the catalog, once per process
    upload_phase(node, data_dir, "key_value", int(1.5 * PARTITIONS * SEGMENT_BYTES[0] / RECORD), name="warm-up")
    rounds = []
    for r in range(args_rounds(out)):                     # A B A B: the machine's load moves between phases
        rounds.append({})
        for mode in ("off", "key_value"):
            rounds[-1][mode] = upload_phase(node, data_dir, mode, n, name=f"upload{r or ''}")
            if r < args_rounds(out) - 1 or mode == "off":     # the last key_value topic is the Spark phase's
                drop_topic(node, data_dir, rounds[-1][mode]["topic"])
    out["upload"], out["upload_rounds"] = rounds[-1], rounds
    ratios = sorted(r["key_value"]["mib_s"] / r["off"]["mib_s"] for r in rounds)
    out["upload_on_vs_off"] = statistics.median(ratios)
    out["upload_on_vs_off_rounds"] = ratios
    out["upload_cpu_on_vs_off"] = statistics.median(r["off"]["broker_cpu_s"] / r["key_value"]["broker_cpu_s"]
                                                    for r in rounds)
    print(f"upload on/off: {out['upload_on_vs_off']:.2f}x (rounds {', '.join(f'{x:.2f}' for x in ratios)}); "
          f"broker CPU off/on {out['upload_cpu_on_vs_off']:.2f}x", flush=True)


def drop_topic(node, data_dir: Path, topic: str) -> None:
    """Delete a measured topic and wait until its local and remote segments are gone: the next phase
    then starts without a GiB more of page cache to write back and no deletion under way (the first
    round's `off` was 2-3x faster than the later ones' while the topics stayed)."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": node.bootstrap})     # kept: the future needs its handle
    admin.delete_topics([topic])[topic].result(30)
    remote = data_dir.parent.parent / "remote-storage"
    deadline = time.monotonic() + 300
    while any(data_dir.glob(f"{topic}-*")) or any(remote.glob(f"{topic}-*/*.log")) or _in_s3(topic):
        if time.monotonic() > deadline:
            raise SystemExit(f"{topic}: its segments not deleted after 300 s")
        time.sleep(0.2)
    os.sync()


def _in_s3(topic: str) -> bool:
    """Whether the moto store (``--store s3``) still holds a segment of ``topic``."""
    if S3[0] is None:
        return False
    import boto3

    from tiered import MOTO_REGION
    settings = S3[0].settings()
    client = boto3.client("s3", endpoint_url=S3[0].endpoint, region_name=MOTO_REGION)
    listed = client.list_objects_v2(Bucket=settings["rsm.config.storage.s3.bucket.name"],
                                          Prefix=f"{settings['rsm.config.storage.s3.prefix']}{topic}-")
    return any(o["Key"].endswith(".log") for o in listed.get("Contents", ()))


def args_rounds(out: dict) -> int:
    return int(out.get("rounds", 1))


def spark_phases(out: dict, node, remote: Path) -> None:
    """Phase 2: the Spark reads of the key_value topic, each query each way, into ``out``."""
    topic = out["upload"]["key_value"]["topic"]
    spark = spark_session()
    reads = {"table": {"remoteStorage": "table"}, "segments": {"remoteStorage": str(remote)},
             "brokers": {"remoteStorage": "off"}}
    names = list(reads)
    out["spark"], out["spark_rounds"] = {}, {}
    for query in QUERIES:
        for _ in range(2):      # unmeasured: the JVM's JIT (a way's first reads compile most), pyiceberg's import
            for name in names:
                spark_phase(spark, node, topic, reads[name], query)
        rounds = out["spark_rounds"][query] = []
        for r in range(args_rounds(out)):
            rounds.append({})
            for name in names[r % 3:] + names[:r % 3]:      # each round starts with another way
                rounds[-1][name] = run = spark_phase(spark, node, topic, reads[name], query)
                print(f"spark {query} from {name}: {run['mib_s']:.1f} MiB/s ({run['seconds']:.2f} s), CPU "
                      f"{run['spark_cpu_s']:.2f} s Spark + {run['broker_cpu_s']:.2f} s broker", flush=True)
        out["spark"][query] = {name: {"mib_s": statistics.median(r[name]["mib_s"] for r in rounds),
                                      "cpu_s_per_gib": statistics.median(r[name]["cpu_s_per_gib"] for r in rounds)}
                               for name in reads}
    out["spark_filtered_table"] = filtered_table_read(spark, remote, topic)
    print(f"table read with a timestamp filter: {out['spark_filtered_table']}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
