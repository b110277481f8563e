"""Spark batch read and topic-to-topic copy through the tierlog data source.

    .venv/bin/python bench/spark_read.py                # 1 GiB topic, 4 partitions, local[2]
    .venv/bin/python bench/spark_read.py --size-mib 128  # quicker

Phases, all against one tierlog node started here, in the same run:

1. fill: a topic of ``--size-mib`` MiB of 1 KiB values (4 partitions) with confluent-kafka.
2. consumer: one confluent-kafka Consumer in this process, ``assign()`` at the
   beginning, ``consume(num_messages=10000)`` until every record is seen.
3. client: tierlog's own Fetch client (what a Spark task runs), one partition
   after another in this process, Arrow batches out.
4. spark read: ``spark.read.format("tierlog")...load()`` written to the ``noop``
   sink, local[2], after a warm-up read; then ``sum(length(value))`` (every value
   reaches the JVM) four times, alternating ``readAheadBatches=0`` and the default.
5. spark copy: the same read written with ``format("tierlog")`` to a second
   topic (acks=all), i.e. read + write.

``--tiered``: instead, a tiered topic (16 MiB segments, small local retention; remote
storage on the filesystem, or ``--backend s3`` on a moto S3 server) is filled and, once at
least 90% of it is uploaded and gone locally, read by Spark through the brokers
(``remoteStorage=off``) and straight from remote storage (``remoteStorage=DIR|s3://...``, and
the default ``auto``, which finds the store from the broker; the explicit store twice with
``remoteReadAheadChunks=0`` and twice with the default read-ahead, alternating), each after a warm-up of 100
records per partition, then by one confluent-kafka consumer (last: the chunks the broker keeps
in its cache would spare the Spark read through the brokers its GETs), in the same run. Each phase also records the
CPU seconds of the reader (this process and its children: Spark's JVM and Python
workers), the node and the moto server (``cputree``).

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

RECORD = 1024


TIERED_SEGMENT_BYTES = 16 * 1024 * 1024
TIERED_TOPIC = {"remote.storage.enable": "true", "segment.bytes": str(TIERED_SEGMENT_BYTES),
                "local.retention.bytes": str(TIERED_SEGMENT_BYTES)}
TIERED_SHARE = 0.9          # read once this share of every partition is uploaded
# Kafka's broker session defaults, not the tests' fast ones (tiered.TIERED_BROKER): on a loaded machine
# a starved node would be fenced every few seconds and its leaders bounce mid-read
KAFKA_SESSION = {"broker.heartbeat.interval.ms": "2000", "broker.session.timeout.ms": "9000"}


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
         .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g").getOrCreate())
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
        reader = reader.option(k, v)
    t = time.perf_counter()
    total = reader.load().selectExpr("sum(length(value)) as b").collect()[0].b
    dt = time.perf_counter() - t
    return dt, total


class CpuMeter:
    """CPU seconds of this process's tree (the driver, Spark's JVM and Python workers, or the consumer),
    of the node and of the moto server, over one phase (``cputree``)."""

    def __init__(self, node_pid: int, moto_pid: int | None):
        self.pids = {"node": node_pid, "moto": moto_pid}

    def _now(self) -> dict:
        from cputree import tree_cpu_s

        out = {name: tree_cpu_s(pid) for name, pid in self.pids.items() if pid is not None}
        out["reader"] = tree_cpu_s(os.getpid()) - sum(out.values())
        return out

    def phase(self, run):
        """``run()``'s result and the CPU seconds each part spent on it."""
        before = self._now()
        result = run()
        after = self._now()
        return result, {k: round(after[k] - before[k], 2) for k in after}


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
        return {**fs_props(remote), **KAFKA_SESSION}, {"remoteStorage": str(remote)}, None
    os.environ.update({**MOTO_CREDENTIALS, "AWS_DEFAULT_REGION": MOTO_REGION})   # the node's and executors' boto3
    moto = stack.enter_context(MotoServer(root))
    settings = moto.settings()
    location = f"s3://{settings['rsm.config.storage.s3.bucket.name']}/{settings['rsm.config.storage.s3.prefix']}"
    options = {k: v for k, v in settings.items()
               if k.startswith("rsm.config.storage.s3.") and not k.endswith((".bucket.name", ".prefix"))}
    return {**TIERED_BROKER, **settings, **KAFKA_SESSION}, {"remoteStorage": location, **options}, moto.proc.pid


def tiered_main(args, n: int, mib: float) -> dict:
    root = Path(tempfile.mkdtemp(prefix="bench-spark-tiered-"))
    out: dict = {"mode": "tiered", "backend": args.backend, "size_mib": mib, "records": n,
                 "partitions": args.partitions, "segment_bytes": TIERED_SEGMENT_BYTES,
                 "machine": {"cpus": os.cpu_count(), "load_avg_start": os.getloadavg()}}
    with contextlib.ExitStack() as stack:
        broker_props, direct, moto_pid = tiered_store(root, args.backend, stack)
        node = NodeProcess(root / "node-1", props=broker_props).start()
        stack.callback(node.stop)
        meter = CpuMeter(node.proc.pid, moto_pid)
        out["fill_s"] = fill(node.bootstrap, "bench-tiered", args.partitions, n, TIERED_TOPIC)
        out["highest_tiered"] = wait_tiered(node.bootstrap, "bench-tiered", args.partitions, n)
        print(f"filled {mib:.0f} MiB in {out['fill_s']:.1f} s; tiered: {out['highest_tiered']}")
        spark = spark_session()
        sync = {**direct, "remoteReadAheadChunks": "0"}     # one GET after another: read-ahead's A/B, A B A B
        for name, options in (("spark_read_brokers", {"remoteStorage": "off"}),
                              ("spark_read_direct_no_read_ahead", sync), ("spark_read_direct", direct),
                              ("spark_read_direct_no_read_ahead_2", sync), ("spark_read_direct_2", direct),
                              ("spark_read_auto", {})):         # the default: the store found from the broker
            spark_sum(spark, node.bootstrap, "bench-tiered", {**options, "endingOffsets": json.dumps(
                {"bench-tiered": {str(p): 100 for p in range(args.partitions)}})})          # warm-up
            (dt, total), cpu = meter.phase(lambda o=options: spark_sum(spark, node.bootstrap, "bench-tiered", o))
            assert total == n * RECORD, total
            out[name] = {"seconds": dt, "mib_s": mib / dt, "cpu_s": cpu}
            print(f"{name} (local[2], sum(length(value))): {mib / dt:.0f} MiB/s, CPU s {cpu}")
        spark.stop()
        # last: the broker's chunk cache (rsm.config.fetch.chunk.cache.*) it fills would serve the Spark
        # read through the brokers without a GET otherwise (this read gets that advantage instead)
        dt, cpu = meter.phase(lambda: consumer_read(node.bootstrap, "bench-tiered", args.partitions, n))
        out["confluent_consumer"] = {"seconds": dt, "mib_s": mib / dt, "cpu_s": cpu}
        print(f"confluent-kafka consumer through the broker: {mib / dt:.0f} MiB/s, CPU s {cpu}")
    out["machine"]["load_avg_end"] = os.getloadavg()
    brokers = out["spark_read_brokers"]["mib_s"]
    out["direct_vs_brokers"] = out["spark_read_direct"]["mib_s"] / brokers
    out["read_ahead_speedup"] = ((out["spark_read_direct_no_read_ahead"]["seconds"]
                                  + out["spark_read_direct_no_read_ahead_2"]["seconds"])
                                 / (out["spark_read_direct"]["seconds"] + out["spark_read_direct_2"]["seconds"]))
    out["auto_vs_brokers"] = out["spark_read_auto"]["mib_s"] / brokers
    out["brokers_vs_consumer"] = brokers / out["confluent_consumer"]["mib_s"]
    return out


def write_results(prefix: str, out: dict) -> None:
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"{prefix}_{stamp}.json", f"{prefix}_latest.json"):
        (results / name).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--no-copy", action="store_true", help="skip the topic-to-topic copy")
    ap.add_argument("--tiered", action="store_true",
                    help="a tiered topic read through the brokers and straight from remote storage")
    ap.add_argument("--backend", choices=("fs", "s3"), default="fs",
                    help="--tiered: remote storage on the filesystem or on a moto S3 server")
    args = ap.parse_args()
    n = args.size_mib * 1024 * 1024 // RECORD
    mib = n * RECORD / 2**20
    if args.tiered:
        write_results(f"spark_tiered_{args.backend}", tiered_main(args, n, mib))
        return
    node = NodeProcess(Path(tempfile.mkdtemp(prefix="bench-spark-")) / "node-1").start()
    out: dict = {"size_mib": mib, "records": n, "record_bytes": RECORD, "partitions": args.partitions,
                 "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                             "load_avg_start": os.getloadavg()}}
    try:
        b = node.bootstrap
        out["fill_s"] = fill(b, "bench-src", args.partitions, n)
        print(f"filled {mib:.0f} MiB in {out['fill_s']:.1f} s")
        dt = consumer_read(b, "bench-src", args.partitions, n)
        out["confluent_consumer"] = {"seconds": dt, "mib_s": mib / dt}
        print(f"confluent-kafka consumer: {mib / dt:.0f} MiB/s")
        dt = client_read(b, "bench-src", args.partitions, n)
        out["tierlog_client"] = {"seconds": dt, "mib_s": mib / dt}
        print(f"tierlog client (1 process, Arrow): {mib / dt:.0f} MiB/s")
        spark = spark_session()
        def reader():        # a new DataFrameReader each time: .option() changes a reader in place
            return spark.read.format("tierlog").option("kafka.bootstrap.servers", b).option("subscribe", "bench-src")

        reader().option("endingOffsets", json.dumps({"bench-src": {str(p): 100 for p in range(args.partitions)}})) \
            .load().write.format("noop").mode("overwrite").save()                     # warm-up
        t = time.perf_counter()
        reader().load().write.format("noop").mode("overwrite").save()
        dt = time.perf_counter() - t
        out["spark_read_noop"] = {"seconds": dt, "mib_s": mib / dt, "master": "local[2]"}
        print(f"spark read (local[2], noop sink): {mib / dt:.0f} MiB/s")
        for name, ahead in (("spark_read_no_read_ahead", "0"), ("spark_read", None),     # A B A B
                            ("spark_read_no_read_ahead_2", "0"), ("spark_read_2", None)):
            r = reader() if ahead is None else reader().option("readAheadBatches", ahead)
            t = time.perf_counter()
            total = r.load().selectExpr("sum(length(value)) as b").collect()[0].b
            dt = time.perf_counter() - t
            assert total == n * RECORD, total
            out[name] = {"seconds": dt, "mib_s": mib / dt, "master": "local[2]", "readAheadBatches": ahead or "default",
                         "action": "sum(length(value)): every value reaches the JVM"}
            print(f"{name} (local[2], sum(length(value))): {mib / dt:.0f} MiB/s")
        if not args.no_copy:
            from confluent_kafka.admin import AdminClient, NewTopic
            admin = AdminClient({"bootstrap.servers": b})
            admin.create_topics([NewTopic("bench-dst", args.partitions, 1)])["bench-dst"].result(30)
            t = time.perf_counter()
            (reader().load().select("key", "value", "partition").write.format("tierlog")
             .option("kafka.bootstrap.servers", b).option("topic", "bench-dst").mode("append").save())
            dt = time.perf_counter() - t
            out["spark_copy"] = {"seconds": dt, "mib_s": mib / dt}
            print(f"spark topic-to-topic copy (read + write, acks=all): {mib / dt:.0f} MiB/s")
        spark.stop()
    finally:
        node.stop()
    out["machine"]["load_avg_end"] = os.getloadavg()
    out["spark_vs_consumer"] = out["spark_read"]["mib_s"] / out["confluent_consumer"]["mib_s"]
    out["spark_2_vs_consumer"] = out["spark_read_2"]["mib_s"] / out["confluent_consumer"]["mib_s"]
    out["read_ahead_speedup"] = ((out["spark_read_no_read_ahead"]["seconds"] + out["spark_read_no_read_ahead_2"]["seconds"])
                                 / (out["spark_read"]["seconds"] + out["spark_read_2"]["seconds"]))
    write_results("spark", out)


if __name__ == "__main__":
    main()
