"""Spark batch read and topic-to-topic copy through the tierlog data source.

    .venv/bin/python bench/spark_read.py                # 1 GiB topic, 4 partitions, local[2]
    .venv/bin/python bench/spark_read.py --size-mib 128  # quicker

Phases, all against one tierlog node started here, in the same run:

1. fill: a topic of ``--size-mib`` MiB of 1 KiB values (4 partitions) with confluent-kafka.
2. client: tierlog's own Fetch client (what a Spark task runs), one partition
   after another in this process, Arrow batches out.
3. one whole unmeasured Spark read (the JVM's JIT warm-up), then two rounds (A B A B) of:
   one confluent-kafka Consumer in this process (``assign()`` at the beginning,
   ``consume(num_messages=10000)`` until every record is seen), and Spark ``local[2]``
   reading ``sum(length(value))`` through the ``tierlog`` source (every value reaches
   the JVM) after a warm-up of 100 records per partition. Both read the same files
   from the same node, whose page cache holds the topic for both.
4. spark copy (unless ``--no-copy``): the same read written with ``format("tierlog")`` to a
   second topic (acks=all), i.e. read + write.

``--tiered``: instead, a tiered topic (16 MiB segments, small local retention; remote
storage on the filesystem, or ``--backend s3`` on a moto S3 server) is filled and, once at
least 90% of it is uploaded and gone locally, read in two rounds (A B C A B C) by one
confluent-kafka consumer through the broker, Spark through the brokers (``remoteStorage=off``)
and Spark straight from remote storage (``remoteStorage=DIR|s3://...``), then once with the
default ``auto`` (which finds the store from the broker). The broker's chunk cache is kept at
64 MiB, far below the topic, so no read through the broker is served from what an earlier one
cached: every phase reads the store.

``--ab OPTION=VALUE`` (repeatable) adds a Spark read with those source options to each round
(a lever's A/B in one run; ``schema=DDL`` reads with that schema: the columns it names); ``--profile DIR`` runs py-spy on the Spark Python workers during
each Spark phase (``spark_probe``; ``folded_top.py`` summarises the folded stacks). Each
phase records the CPU seconds of the node, the moto server and the reader, split into the
driver (or the consumer), Spark's JVM (with its busiest threads) and its Python workers.

MB/s counts record value bytes (MiB = 2^20). Results go to
``bench/results/spark_<timestamp>.json`` and ``bench/results/spark_latest.json``
(``spark_tiered_<backend>_...`` with ``--tiered``; ``bench/spark_plot.py`` plots those).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # bench/profile.py shadows profile
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))
sys.path.append(str(HERE))            # cputree, after the standard library

from nodeproc import NodeProcess
from spark_probe import CpuMeter

RECORD = 1024


TIERED_SEGMENT_BYTES = 16 * 1024 * 1024
TIERED_TOPIC = {"remote.storage.enable": "true", "segment.bytes": str(TIERED_SEGMENT_BYTES),
                "local.retention.bytes": str(TIERED_SEGMENT_BYTES)}
TIERED_SHARE = 0.9          # read once this share of every partition is uploaded
# Kafka's broker session defaults, not the tests' fast ones (tiered.TIERED_BROKER): on a loaded machine
# a starved node would be fenced every few seconds and its leaders bounce mid-read
KAFKA_SESSION = {"broker.heartbeat.interval.ms": "2000", "broker.session.timeout.ms": "9000"}
# the broker's chunk cache far smaller than the topic: a sequential pass evicts what the previous pass
# cached, so no read through the broker (Spark's or the consumer's) is spared its GETs by an earlier one
SMALL_CHUNK_CACHE = 64 * 1024 * 1024
SMALL_CACHE = {"rsm.config.fetch.chunk.cache.size": str(SMALL_CHUNK_CACHE)}


def fill(bootstrap: str, topic: str, partitions: int, n: int, config: dict | None = None) -> float:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 20, "batch.size": 1_000_000,
                  "queue.buffering.max.kbytes": 512 * 1024})
    value = os.urandom(RECORD)
    t = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(300) == 0
    return time.perf_counter() - t


def consumer_read(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "auto.offset.reset": "error",        # never skip to the end: the count would never be reached
                  "fetch.max.bytes": 64 * 1024 * 1024, "max.partition.fetch.bytes": 8 * 1024 * 1024})
    c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    seen, nbytes = 0, 0
    t = time.perf_counter()
    while seen < n:
        for m in c.consume(num_messages=10000, timeout=1.0):
            if m.error() is None:
                seen += 1
                nbytes += len(m.value())
            elif m.error().code() == KafkaError._AUTO_OFFSET_RESET:
                raise SystemExit(f"consumer: {m.error()}")
    dt = time.perf_counter() - t
    c.close()
    assert nbytes == n * RECORD
    return dt


def client_read(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    from tierlog.client import LATEST, Cluster, read_range

    cluster = Cluster(bootstrap)
    t = time.perf_counter()
    rows = 0
    tps = cluster.partitions_of([topic])
    ends = cluster.list_offsets(tps, LATEST)
    for tp in tps:
        for batch in read_range(cluster, tp[0], tp[1], 0, ends[tp]):
            rows += batch.num_rows
    dt = time.perf_counter() - t
    cluster.close()
    assert rows == n
    return dt


def spark_session():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import tierlog.spark
    s = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g").getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    tierlog.spark.register(s)
    return s


def wait_tiered(bootstrap: str, topic: str, partitions: int, n: int) -> dict:
    from tierlog.client import Cluster
    from tierlog.tiered.read_rules import LATEST_TIERED

    cluster = Cluster(bootstrap)
    tps = [(topic, p) for p in range(partitions)]
    deadline = time.monotonic() + 600
    while True:
        tiered = cluster.list_offsets(tps, LATEST_TIERED)
        if all(off + 1 >= TIERED_SHARE * n / partitions for off in tiered.values()):
            cluster.close()
            return {f"{t}-{p}": off for (t, p), off in tiered.items()}
        if time.monotonic() > deadline:
            raise SystemExit(f"not tiered after 600 s: {tiered}")
        time.sleep(1)


def spark_sum(spark, bootstrap: str, topic: str, options: dict) -> tuple[float, int]:
    reader = spark.read.format("tierlog").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for k, v in options.items():
        reader = reader.schema(v) if k == "schema" else reader.option(k, v)     # --ab schema=DDL: the columns read
    t = time.perf_counter()
    total = reader.load().selectExpr("sum(length(value)) as b").collect()[0].b
    dt = time.perf_counter() - t
    return dt, total


def tiered_store(root: Path, backend: str, stack: contextlib.ExitStack) -> tuple[dict, dict, int | None]:
    """The broker's remote storage settings, the source's ``remoteStorage`` options for the same store,
    and the moto server's pid (s3)."""
    from tiered import (  # tests/integration
        MOTO_CREDENTIALS,
        MOTO_REGION,
        TIERED_BROKER,
        MotoServer,
        fs_props,
    )

    if backend == "fs":
        remote = root / "remote-storage"
        return {**fs_props(remote), **KAFKA_SESSION, **SMALL_CACHE}, {"remoteStorage": str(remote)}, None
    os.environ.update({**MOTO_CREDENTIALS, "AWS_DEFAULT_REGION": MOTO_REGION})   # the node's and executors' boto3
    moto = stack.enter_context(MotoServer(root))
    settings = moto.settings()
    location = f"s3://{settings['rsm.config.storage.s3.bucket.name']}/{settings['rsm.config.storage.s3.prefix']}"
    options = {k: v for k, v in settings.items()
               if k.startswith("rsm.config.storage.s3.") and not k.endswith((".bucket.name", ".prefix"))}
    return {**TIERED_BROKER, **settings, **KAFKA_SESSION, **SMALL_CACHE}, {"remoteStorage": location, **options}, moto.proc.pid


def tiered_main(args, n: int, mib: float) -> dict:
    root = Path(tempfile.mkdtemp(prefix="bench-spark-tiered-"))
    out: dict = {"mode": "tiered", "backend": args.backend, "size_mib": mib, "records": n, "record_bytes": RECORD,
                 "partitions": args.partitions, "segment_bytes": TIERED_SEGMENT_BYTES,
                 "broker_chunk_cache_bytes": SMALL_CHUNK_CACHE,
                 "machine": {"cpus": os.cpu_count(), "load_avg_start": os.getloadavg()}}
    topic = "bench-tiered"
    with contextlib.ExitStack() as stack:
        broker_props, direct, moto_pid = tiered_store(root, args.backend, stack)
        node = NodeProcess(root / "node-1", props=broker_props).start()
        stack.callback(node.stop)
        meter = CpuMeter(node.proc.pid, moto_pid, args.profile)
        out["fill_s"] = fill(node.bootstrap, topic, args.partitions, n, TIERED_TOPIC)
        out["highest_tiered"] = wait_tiered(node.bootstrap, topic, args.partitions, n)
        print(f"filled {mib:.0f} MiB in {out['fill_s']:.1f} s; tiered: {out['highest_tiered']}")
        spark = spark_session()
        spark_phases = [("spark_read_brokers", {"remoteStorage": "off"}), ("spark_read_direct", direct)]
        if args.ab:
            spark_phases.append(("spark_read_direct_ab", {**direct, **args.ab}))
        warm_up_jvm(spark, node.bootstrap, topic, [options for _, options in spark_phases], args.warm_up)
        for suffix in ("", "_2"):                     # A B A B: no reader goes first or last only
            run_phase(out, meter, "confluent_consumer" + suffix, mib,
                      lambda: consumer_read(node.bootstrap, topic, args.partitions, n))
            for name, options in spark_phases:
                spark_phase(out, meter, spark, node.bootstrap, topic, args.partitions, name + suffix, options, n)
        spark_phase(out, meter, spark, node.bootstrap, topic, args.partitions, "spark_read_auto", {}, n)
        spark.stop()
    out["machine"]["load_avg_end"] = os.getloadavg()
    out["direct_vs_brokers"] = pair_ratio(out, "spark_read_direct", "spark_read_brokers")
    out["auto_vs_brokers"] = out["spark_read_auto"]["mib_s"] / mean_mib_s(out, "spark_read_brokers")
    out["brokers_vs_consumer"] = pair_ratio(out, "spark_read_brokers", "confluent_consumer")
    if args.ab:
        out["ab"] = {"options": args.ab, "vs_direct": pair_ratio(out, "spark_read_direct_ab", "spark_read_direct")}
    return out


def warm_up_jvm(spark, bootstrap: str, topic: str, option_sets: list[dict], rounds: int = 1) -> None:
    """``rounds`` whole unmeasured reads per kind of Spark read: the JVM's JIT compiles the Arrow-to-rows
    path during the first GiB (its compiler threads took 2-4 CPU s of a first 1 GiB read, under 1 s by
    the seventh), which would otherwise count against whichever read came first; and it goes on
    compiling Spark's planner and scheduler for several queries more (``--warm-up``)."""
    for _ in range(rounds):
        for options in option_sets:
            spark_sum(spark, bootstrap, topic, options)


def run_phase(out: dict, meter: CpuMeter, name: str, mib: float, run, *, profile: bool = False) -> None:
    dt, cpu = meter.phase(name, run, profile=profile)
    out[name] = {"seconds": dt, "mib_s": mib / dt, "cpu_s": cpu, "load_avg": os.getloadavg()[0]}
    print(f"{name}: {mib / dt:.0f} MiB/s, CPU s {cpu}", flush=True)


def spark_phase(out: dict, meter: CpuMeter, spark, bootstrap: str, topic: str, partitions: int, name: str,
                options: dict, n: int) -> None:
    """A warm-up of 100 records per partition, then ``sum(length(value))`` over the whole topic."""
    warm_up = json.dumps({topic: {str(p): 100 for p in range(partitions)}})
    spark_sum(spark, bootstrap, topic, {**options, "endingOffsets": warm_up})

    def read() -> float:
        dt, total = spark_sum(spark, bootstrap, topic, options)
        assert total == n * RECORD, total
        return dt
    run_phase(out, meter, name, n * RECORD / 2**20, read, profile=True)
    out[name]["options"] = {k: v for k, v in options.items() if "secret" not in k}


def mean_mib_s(out: dict, name: str) -> float:
    """MiB/s over both rounds of a phase (total bytes over total seconds)."""
    runs = [out[k] for k in (name, name + "_2") if k in out]
    return sum(r["mib_s"] * r["seconds"] for r in runs) / sum(r["seconds"] for r in runs)


def pair_ratio(out: dict, a: str, b: str) -> dict:
    """``a`` over ``b`` in MiB/s, round by round and over both rounds."""
    return {"round_1": out[a]["mib_s"] / out[b]["mib_s"], "round_2": out[a + "_2"]["mib_s"] / out[b + "_2"]["mib_s"],
            "both": mean_mib_s(out, a) / mean_mib_s(out, b)}


def write_results(prefix: str, out: dict) -> None:
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"{prefix}_{stamp}.json", f"{prefix}_latest.json"):
        (results / name).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


def plain_main(args, n: int, mib: float) -> dict:
    node = NodeProcess(Path(tempfile.mkdtemp(prefix="bench-spark-")) / "node-1").start()
    out: dict = {"size_mib": mib, "records": n, "record_bytes": RECORD, "partitions": args.partitions,
                 "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                             "load_avg_start": os.getloadavg()}}
    topic = "bench-src"
    try:
        b = node.bootstrap
        meter = CpuMeter(node.proc.pid, None, args.profile)
        out["fill_s"] = fill(b, topic, args.partitions, n)
        print(f"filled {mib:.0f} MiB in {out['fill_s']:.1f} s")
        run_phase(out, meter, "tierlog_client", mib, lambda: client_read(b, topic, args.partitions, n))
        spark = spark_session()
        warm_up_jvm(spark, b, topic, [{}, args.ab] if args.ab else [{}])
        for suffix in ("", "_2"):                     # A B A B: the consumer alternates with the Spark reads
            run_phase(out, meter, "confluent_consumer" + suffix, mib, lambda: consumer_read(b, topic, args.partitions, n))
            spark_phase(out, meter, spark, b, topic, args.partitions, "spark_read" + suffix, {}, n)
            if args.ab:
                spark_phase(out, meter, spark, b, topic, args.partitions, "spark_read_ab" + suffix, args.ab, n)
        if not args.no_copy:
            run_phase(out, meter, "spark_copy", mib, lambda: spark_copy(spark, b, topic, args.partitions))
        spark.stop()
    finally:
        node.stop()
    out["machine"]["load_avg_end"] = os.getloadavg()
    out["spark_vs_consumer"] = pair_ratio(out, "spark_read", "confluent_consumer")
    if args.ab:
        out["ab"] = {"options": args.ab, "vs_spark_read": pair_ratio(out, "spark_read_ab", "spark_read")}
    return out


def spark_copy(spark, bootstrap: str, topic: str, partitions: int) -> float:
    """The topic read and written with ``format("tierlog")`` to a second topic (acks=all)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("bench-dst", partitions, 1)])["bench-dst"].result(30)
    t = time.perf_counter()
    (spark.read.format("tierlog").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()
     .select("key", "value", "partition").write.format("tierlog")
     .option("kafka.bootstrap.servers", bootstrap).option("topic", "bench-dst").mode("append").save())
    return time.perf_counter() - t


def source_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r}: OPTION=VALUE expected")
    return key, value


def main() -> None:
    global RECORD                   # every phase reads the record size from here
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--record-bytes", type=int, default=RECORD,
                    help="each record's value size (results of another size than 1024 get a _<size>b suffix)")
    ap.add_argument("--no-copy", action="store_true", help="skip the topic-to-topic copy")
    ap.add_argument("--tiered", action="store_true",
                    help="a tiered topic read through the brokers and straight from remote storage")
    ap.add_argument("--backend", choices=("fs", "s3"), default="fs",
                    help="--tiered: remote storage on the filesystem or on a moto S3 server")
    ap.add_argument("--ab", type=source_option, action="append", default=[], metavar="OPTION=VALUE",
                    help="one more Spark read with these source options, alternated with the default one (a lever's A/B)")
    ap.add_argument("--warm-up", type=int, default=1, metavar="N",
                    help="unmeasured reads of each kind before the measured rounds (--tiered; default 1)")
    ap.add_argument("--profile", type=Path, metavar="DIR",
                    help="py-spy record --subprocesses of the pyspark daemon per Spark phase, folded stacks into DIR")
    args = ap.parse_args()
    args.ab = dict(args.ab)
    suffix = "" if args.record_bytes == RECORD else f"_{args.record_bytes}b"
    RECORD = args.record_bytes
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    n = args.size_mib * 1024 * 1024 // RECORD
    mib = n * RECORD / 2**20
    if args.tiered:
        write_results(f"spark_tiered_{args.backend}{suffix}", tiered_main(args, n, mib))
    else:
        write_results(f"spark{suffix}", plain_main(args, n, mib))


if __name__ == "__main__":
    main()
