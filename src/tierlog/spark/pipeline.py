"""The example pipeline: generated events -> tierlog -> Structured Streaming -> results.

    ./dev pipeline                      # local cluster in a temp dir, runs until Ctrl-C
    ./dev pipeline --duration 60        # stop by itself after a minute
    ./dev pipeline --bootstrap HOST:PORT
    ./dev pipeline --master spark://HOST:7077   # on a Spark standalone cluster (docs/spark.md)
    ./dev pipeline --remote sc://HOST:15002     # through a Spark Connect server

1. A generator thread produces JSON click-stream events (user, action, amount)
   to the topic ``events`` (3 partitions, keyed by user) at ``--rate`` events/s.
2. A Spark Structured Streaming job reads ``events`` with the ``tierlog``
   source, parses the JSON, and counts events and sums amounts per action in
   10-second event-time windows (``--window``, late events up to ``--watermark``).
3. The running aggregates go to the topic ``event-counts`` (update mode, JSON
   values keyed by action) through foreachBatch and the ``tierlog`` sink, and
   the closed windows to Parquet files under ``--out`` (append mode).

Progress (events produced, each query's batches, rates and offsets behind the
latest, the latest windows) is shown with rich while it runs on a terminal; in a
pipe or a file it is one plain line every 5 s, never wrapped (`console_for`).
Ctrl-C or ``--duration`` stops everything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from tierlog.clock import monotonic_s
from tierlog.spark.pipeline_cluster import CLIENT_LOGS, TOPIC_PARTITIONS, LocalCluster, create_topics, topics_of

EVENTS_TOPIC = "events"
RESULTS_TOPIC = "event-counts"
# The driver JVM's thread stack. A streaming query's execution thread once died of a
# StackOverflowError deep in java.util.regex (a recursive pattern over a long string; the caller
# was cut off the trace), with pyspark 4.2.1 and 4.3.0 alike, in about one run in four of
# tests/spark/test_pipeline.py. 16 MiB instead of the JVM's 1 MiB leaves room for it; which Spark
# regex and which string is still to find.
JVM_THREAD_STACK = "-Xss16m"
LOCAL_MASTER = "local[2]"
ACTIONS = ("view", "click", "add_to_cart", "purchase")


def _parse_args(argv):
    p = argparse.ArgumentParser(prog="./dev pipeline", description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--master", default=LOCAL_MASTER, metavar="URL",
                       help=f"Spark master (default {LOCAL_MASTER}); spark://HOST:PORT ships tierlog to the executors, "
                            "whose Python (PYSPARK_PYTHON, default this one) needs tierlog's dependencies")
    where.add_argument("--remote", metavar="sc://HOST:PORT",
                       help="a Spark Connect server instead of a master: tierlog is shipped to the server's session "
                            "(addArtifacts), whose Python workers need tierlog's dependencies")
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="an existing cluster (default: start one in a temp dir)")
    p.add_argument("--duration", type=float, default=0, metavar="SECONDS", help="stop after this long (0: Ctrl-C)")
    p.add_argument("--rate", type=int, default=2000, metavar="N", help="generated events per second")
    p.add_argument("--window", default="10 seconds", help="event-time window of the aggregation")
    p.add_argument("--watermark", default="5 seconds", help="how late events may arrive")
    p.add_argument("--trigger", default="2 seconds", help="micro-batch interval")
    p.add_argument("--out", default="./pipeline-out", help="Parquet output and checkpoints")
    p.add_argument("--events-topic", default=EVENTS_TOPIC, metavar="NAME",
                   help=f"the topic of the generated events (default {EVENTS_TOPIC}; "
                        f"{TOPIC_PARTITIONS['events']} partitions, created if missing)")
    p.add_argument("--results-topic", default=RESULTS_TOPIC, metavar="NAME",
                   help=f"the topic of the window counts (default {RESULTS_TOPIC}; "
                        f"{TOPIC_PARTITIONS['results']} partition, created if missing)")
    return p.parse_args(argv)


# -- the event generator -------------------------------------------------------------


class Generator(threading.Thread):
    """Click-stream events at a fixed rate, JSON values keyed by user."""

    def __init__(self, bootstrap: str, rate: int, topic: str):
        super().__init__(daemon=True, name="event-generator")
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, **CLIENT_LOGS})
        self.rate = rate
        self.topic = topic
        self.sent = 0
        self.errors = 0
        self._halt = threading.Event()

    def _delivered(self, err, _msg):
        if err is not None:
            self.errors += 1

    def run(self) -> None:
        rng = random.Random(7)
        start = monotonic_s()
        while not self._halt.is_set():
            due = int((monotonic_s() - start) * self.rate)
            for _ in range(min(due - self.sent, self.rate)):
                user = f"user-{rng.randrange(1000)}"
                event = {"user": user, "action": rng.choices(ACTIONS, weights=(60, 30, 8, 2))[0],
                         "amount": round(rng.uniform(1, 200), 2)}
                try:
                    self.producer.produce(self.topic, json.dumps(event).encode(), user.encode(),
                                          on_delivery=self._delivered)
                except BufferError:
                    break
                self.sent += 1
            self.producer.poll(0.02)
        self.producer.flush(30)

    def stop(self) -> None:
        self._halt.set()
        self.join(60)


# -- the Spark job -------------------------------------------------------------------


# session settings of the pipeline's Spark, classic or Connect
SESSION_CONF: dict[str, str | int | float | bool | None] = {
    "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"}


def _spark(master: str = LOCAL_MASTER, out: Path | None = None, remote: str | None = None):
    if remote:
        return _connect(remote, out)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import tierlog.spark
    from tierlog.spark.ship import ship

    on_interrupt = signal.getsignal(signal.SIGINT)
    spark = (SparkSession.builder.master(master).appName("tierlog-pipeline")
             .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
             .config("spark.ui.enabled", "false")
             .config("spark.driver.extraJavaOptions", JVM_THREAD_STACK)
             .config("spark.ui.showConsoleProgress", "false")      # the rich view shows progress
             .config(map=SESSION_CONF)
             .getOrCreate())
    if threading.current_thread() is threading.main_thread():
        # PySpark's own SIGINT handler cancels every job and raises KeyboardInterrupt wherever the
        # driver is; the pipeline's (main) stops its queries between micro-batches instead
        signal.signal(signal.SIGINT, on_interrupt)
    _log_level(spark, "ERROR")
    _quiet_accumulator_server(spark)
    if not master.startswith("local"):       # executors elsewhere: send them tierlog's code
        ship(spark, out or Path(tempfile.mkdtemp(prefix="tierlog-ship-")))
    tierlog.spark.register(spark)
    return spark


def _quiet_accumulator_server(spark) -> None:
    """pyspark's accumulator server (a socketserver in this process) reads the JVM's connection closing
    at spark.stop() as an EOFError, and socketserver prints its traceback after "stopping"; that close
    is the normal end here, any other error is still printed."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is None:
        return
    report = server.handle_error

    def handle_error(request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], EOFError):
            report(request, client_address)
    server.handle_error = handle_error


def _connect(url: str, out: Path | None):
    """A Spark Connect session on ``url`` that can run the pipeline: tierlog shipped to the server's
    session (its executors' Python workers and the one that runs foreachBatch import it from there),
    the source registered in it."""
    import importlib.util

    if importlib.util.find_spec("grpc") is None:
        raise SystemExit("pipeline: --remote needs the Spark Connect client: pip install 'pyspark[connect]'")
    from pyspark.sql import SparkSession

    import tierlog.spark
    from tierlog.spark.ship import ship

    spark = SparkSession.builder.remote(url).getOrCreate()
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, str(value))
    ship(spark, out or Path(tempfile.mkdtemp(prefix="tierlog-ship-")))
    tierlog.spark.register(spark)
    return spark


def _log_level(spark, level: str) -> None:
    """The driver's log level (a Connect client has no driver here: the server's stays as it is)."""
    import tierlog.spark

    if not tierlog.spark.is_connect(spark):
        spark.sparkContext.setLogLevel(level)


def start_queries(spark, bootstrap: str, args, out: Path):
    from pyspark.sql import functions as F

    events = (spark.readStream.format("tierlog")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", args.events_topic)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(max(1000, args.rate * 10)))
              .load()
              .select(F.from_json(F.col("value").cast("string"),
                                  "user string, action string, amount double").alias("e"), "timestamp")
              .select("e.*", "timestamp"))
    windows = (events.withWatermark("timestamp", args.watermark)
               .groupBy(F.window("timestamp", args.window).alias("window"), "action")
               .agg(F.count("*").alias("events"), F.round(F.sum("amount"), 2).alias("amount"))
               .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                       "action", "events", "amount"))
    counts = windows.select(F.col("action").cast("binary").alias("key"),
                            F.to_json(F.struct("*")).cast("binary").alias("value"))

    def write_counts(batch_df, _batch_id):
        # Spark's Python streaming sinks take append mode only; update mode goes through foreachBatch
        # and the batch sink (each task flushes with acks=all before the batch commits).
        (batch_df.write.format("tierlog").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", args.results_topic).mode("append").save())

    to_topic = (counts.writeStream.queryName("counts-to-topic").outputMode("update")
                .foreachBatch(write_counts)
                .option("checkpointLocation", str(out / "checkpoints" / "topic"))
                .trigger(processingTime=args.trigger).start())
    to_parquet = (windows.writeStream.queryName("windows-to-parquet").outputMode("append")
                  .format("parquet").option("path", str(out / "parquet"))
                  .option("checkpointLocation", str(out / "checkpoints" / "parquet"))
                  .trigger(processingTime=args.trigger).start())
    return [to_topic, to_parquet]


# -- progress ------------------------------------------------------------------------


class LatestResults(threading.Thread):
    """Follows the results topic so the progress view can show the latest windows."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True, name="results-follower")
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tierlog-pipeline-view", **CLIENT_LOGS,
                                  "enable.auto.commit": False})
        self.topic = topic
        self.consumer.assign([TopicPartition(topic, 0, -2)])
        self.latest: dict[tuple, dict] = {}
        self.received = 0
        self.first_at: float | None = None         # monotonic_s() of the first result record
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            for msg in self.consumer.consume(500, 0.5):
                value = msg.value()
                if msg.error() is None and value:
                    row = json.loads(value)
                    self.latest[(row["window_start"], row["action"])] = row
                    self.received += 1
                    if self.first_at is None:
                        self.first_at = monotonic_s()
        self.consumer.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


def _progress(query) -> dict:
    """The last progress report as a plain dict (None before the first batch)."""
    p = query.lastProgress
    if p is None:
        return {}
    if isinstance(p, dict):
        return p
    return json.loads(p.json) if hasattr(p, "json") else dict(p)


def _behind(query) -> str:
    """The Kafka source's maxOffsetsBehindLatest of the query's last batch ("-" before one)."""
    from tierlog.spark.progress import offsets_behind_latest

    metrics = offsets_behind_latest((_progress(query).get("sources") or [{}])[0])
    return f"{int(metrics['maxOffsetsBehindLatest']):,}" if metrics else "-"


def _events_read(query) -> int:
    src = (_progress(query).get("sources") or [{}])[0]
    end = src.get("endOffset")
    if isinstance(end, str):
        end = json.loads(end)
    # the query reads one topic: every partition in its end offsets is one of the events topic's
    return sum(sum(parts.values()) for parts in end.values()) if isinstance(end, dict) else 0


def parquet_rows(path: Path) -> tuple[int, int]:
    """(files, rows) of the Parquet output committed so far: the files the sink's
    ``_spark_metadata`` log lists, which is what a reader of the directory sees (a batch
    interrupted by the stop leaves files it never committed)."""
    import pyarrow.parquet as pq

    files = _committed_files(path)
    rows = 0
    for f in files:
        try:
            rows += pq.ParquetFile(f).metadata.num_rows
        except Exception:        # noqa: BLE001, S110 - a file being written right now: counted next time
            pass
    return len(files), rows


def _committed_files(path: Path) -> list[Path]:
    """The files Spark's file sink committed under ``path``: each ``_spark_metadata/<batch>``
    (or ``<batch>.compact``) file is a version line, then one JSON entry per file with its
    ``path`` and ``action`` (add / delete)."""
    log = path / "_spark_metadata"
    if not log.is_dir():
        return sorted(path.glob("*.parquet")) if path.exists() else []
    batches = sorted((f for f in log.iterdir() if f.name.split(".")[0].isdigit()),
                     key=lambda f: int(f.name.split(".")[0]))
    committed: dict[str, bool] = {}
    for batch in batches:
        try:
            lines = batch.read_text().splitlines()[1:]
        except OSError:             # being written right now: counted next time
            continue
        for line in lines:
            entry = json.loads(line)
            committed[entry["path"]] = entry.get("action", "add") == "add"
    return sorted(Path(unquote(urlparse(p).path)) for p, added in committed.items() if added)


def _view(gen: Generator, queries, results: LatestResults, out: Path, started: float):
    from rich.console import Group
    from rich.table import Table

    head = Table.grid(padding=(0, 2))
    files = len(list((out / "parquet").glob("*.parquet"))) if (out / "parquet").exists() else 0
    head.add_row("running", f"{monotonic_s() - started:,.0f} s",
                 "events produced", f"{gen.sent:,}", "delivery errors", f"{gen.errors:,}",
                 "result records", f"{results.received:,}", "parquet files", f"{files:,}")
    qt = Table(title="streaming queries", expand=False)
    for col in ("query", "batch", "input rows", "input rows/s", "processed rows/s", "events read",
                "max behind latest"):
        qt.add_column(col, justify="right" if col != "query" else "left")
    for q in queries:
        p = _progress(q)
        qt.add_row(q.name, str(p.get("batchId", "-")), f"{p.get('numInputRows', 0):,}",
                   f"{p.get('inputRowsPerSecond', 0) or 0:,.0f}", f"{p.get('processedRowsPerSecond', 0) or 0:,.0f}",
                   f"{_events_read(q):,}", _behind(q))
    wt = Table(title=f"latest windows (topic {results.topic})")
    for col in ("window start", "action", "events", "amount"):
        wt.add_column(col, justify="right" if col in ("events", "amount") else "left")
    for (start, action), row in sorted(results.latest.items(), reverse=True)[:8]:
        wt.add_row(str(start), action, f"{row['events']:,}", f"{row['amount']:,.2f}")
    return Group(head, qt, wt)


def _status_line(gen: Generator, queries, results: LatestResults, out: Path, started: float) -> str:
    """One plain line of progress, for output that is not a terminal (logs, CI)."""
    files = len(list((out / "parquet").glob("*.parquet"))) if (out / "parquet").exists() else 0
    batches = ", ".join(f"{q.name} batch {_progress(q).get('batchId', '-')} ({_behind(q)} behind)"
                        for q in queries)
    return (f"{monotonic_s() - started:4.0f} s: {gen.sent:,} events produced, {batches}, "
            f"{results.received:,} result records, {files} parquet files")


STOP_WAIT_S = 15      # how long the stop waits, for all the queries together, for gaps between micro-batches


def _stop_between_batches(query, deadline: float) -> None:
    """stop() once no micro-batch is running, or at ``deadline`` (monotonic_s): stopping one mid-batch
    interrupts its tasks and Python workers, which Spark reports with long stack traces that mean
    nothing here."""
    while query.isActive and monotonic_s() < deadline:
        try:
            if not query.status.get("isTriggerActive"):
                break
        except Exception:        # noqa: BLE001 - the query ended meanwhile
            break
        time.sleep(0.05)
    query.stop()


@dataclass
class Summary:
    seconds: float
    events_produced: int
    delivery_errors: int
    events_read: int
    result_records: int          # running counts written to the results topic (update mode)
    windows_in_topic: int        # distinct (window, action) among them
    parquet_files: int
    parquet_rows: int            # closed windows (one row per window and action)
    first_result_s: float | None  # after the streaming queries started
    first_parquet_s: float | None
    parquet_path: Path
    results_topic: str

    def text(self) -> str:
        def at(t):
            return f"{t:.0f} s after the queries started" if t is not None else "never"
        return (f"done after {self.seconds:.0f} s: {self.events_produced:,} events produced "
                f"({self.delivery_errors:,} delivery errors), {self.events_read:,} read by Spark\n"
                f"  topic {self.results_topic}: {self.result_records:,} window results "
                f"({self.windows_in_topic:,} windows x actions), first one {at(self.first_result_s)}\n"
                f"  Parquet: {self.parquet_rows:,} closed windows x actions in {self.parquet_files:,} files under "
                f"{self.parquet_path}, first one {at(self.first_parquet_s)}")


def console_for(file=None):
    """A rich console on ``file`` (stdout): live views on a terminal; elsewhere plain, colourless
    lines that are never wrapped (rich would wrap them at 80 columns)."""
    from rich.console import Console

    console = Console(file=file, highlight=False)
    if console.is_terminal:
        return console
    return Console(file=file, highlight=False, no_color=True, soft_wrap=True, width=_PLAIN_WIDTH)


_PLAIN_WIDTH = 1000      # columns of a console that is not a terminal (soft_wrap keeps lines whole)


def run(bootstrap: str, args, out: Path, *, console=None, spark=None, stopping: threading.Event | None = None
        ) -> Summary:
    """Create the topics, generate events and run the queries until ``args.duration`` or ``stopping``.

    ``spark``: a session to use (and leave running); by default one is started and stopped.
    """
    console = console or console_for()
    stopping = stopping or threading.Event()
    gen = results = None
    own_spark = spark is None
    queries = []
    started = monotonic_s()
    first_parquet = None
    events_read = 0
    try:
        topics = topics_of(args)
        console.print(f"creating topics {', '.join(f'{t} ({n} partitions)' for t, (_, n) in topics.items())} "
                      "and waiting for their leaders")
        create_topics(bootstrap, topics)
        console.print(f"[bold]starting Spark[/] ({_where(args, spark)}) and the streaming queries")
        if spark is None:
            spark = _spark(args.master, out, args.remote)
        else:
            import tierlog.spark
            tierlog.spark.register(spark)
        gen = Generator(bootstrap, args.rate, args.events_topic)     # once Spark is up: no backlog for the first batch
        gen.start()
        queries = start_queries(spark, bootstrap, args, out)
        results = LatestResults(bootstrap, args.results_topic)
        results.start()
        started = monotonic_s()
        console.print(f"queries running: {args.window} windows, watermark {args.watermark}, "
                      f"a micro-batch every {args.trigger}")
        live = _live(console, _view(gen, queries, results, out, started))
        last_line = 0.0
        with live or contextlib.nullcontext():
            while not stopping.is_set():
                now = monotonic_s()
                if args.duration and now - started >= args.duration:
                    break
                failed = [q for q in queries if not q.isActive]
                if failed:
                    raise SystemExit(f"pipeline: query {failed[0].name} stopped: {failed[0].exception()}")
                if first_parquet is None and parquet_rows(out / "parquet")[1]:
                    first_parquet = now - started
                if live is not None:
                    live.update(_view(gen, queries, results, out, started))
                elif now - last_line >= 5:
                    console.print(_status_line(gen, queries, results, out, started))
                    last_line = now
                stopping.wait(1)
            if live is not None:
                live.update(_view(gen, queries, results, out, started))
            else:
                console.print(_status_line(gen, queries, results, out, started))
        console.print("[bold]stopping[/]")
        events_read = max((_events_read(q) for q in queries), default=0)
    finally:
        if queries:
            # a batch interrupted by stop() logs its InterruptedException: nothing is wrong
            _log_level(spark, "OFF")
        deadline = monotonic_s() + STOP_WAIT_S
        for q in queries:
            try:
                _stop_between_batches(q, deadline)
            except Exception as e:          # noqa: BLE001 - report and go on stopping the rest
                console.print(f"stopping {q.name}: {e}")
        if gen is not None:
            gen.stop()
        if results is not None:
            results.stop()
        if spark is not None and own_spark:
            spark.stop()
        elif queries:
            _log_level(spark, "ERROR")
    files, rows = parquet_rows(out / "parquet")
    if first_parquet is None and rows:
        first_parquet = monotonic_s() - started
    return Summary(
        seconds=monotonic_s() - started, events_produced=gen.sent, delivery_errors=gen.errors,
        events_read=events_read, result_records=results.received, windows_in_topic=len(results.latest),
        parquet_files=files, parquet_rows=rows,
        first_result_s=None if results.first_at is None else results.first_at - started,
        first_parquet_s=first_parquet, parquet_path=out / "parquet", results_topic=args.results_topic)


def _where(args, spark) -> str:
    """Where the queries run, for the start line."""
    if spark is not None:
        return spark.conf.get("spark.master")
    return f"Spark Connect {args.remote}" if args.remote else args.master


def _live(console, view):
    """A rich Live view on a terminal; None elsewhere (plain status lines instead)."""
    if not console.is_terminal:
        return None
    from rich.live import Live

    return Live(view, console=console, refresh_per_second=2)


def main(argv=None) -> int:
    args = _parse_args(argv)
    console = console_for()
    out = Path(args.out).resolve()
    cluster = None
    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        console.print("[bold]starting a local tierlog cluster[/] (tierlog up: 3 controllers + 3 brokers, "
                      "in a temp dir)")
        cluster = LocalCluster()
        bootstrap = cluster.bootstrap
        shutil.rmtree(out / "checkpoints", ignore_errors=True)   # offsets of an earlier cluster mean nothing here
        shutil.rmtree(out / "parquet", ignore_errors=True)
    console.print(f"bootstrap.servers={bootstrap}; output under {out}")
    stopping = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        summary = run(bootstrap, args, out, console=console, stopping=stopping)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if cluster is not None:
            cluster.stop()
    console.print(summary.text(), highlight=False)
    return 0 if summary.parquet_rows or summary.result_records else 1


if __name__ == "__main__":
    sys.exit(main())
