"""The example pipeline (./dev pipeline), briefly, against the test node: windows come out.

Slow for a unit test: about 40-55 s on 2 cores (a run of at least 18 s, until windows are out,
plus topic creation, query start and a clean stop), one of the longest Spark tests.
"""
import io
import json
import sys
import threading
import time
import types

from clients import consume_all
from confluent_kafka import Consumer, TopicPartition

from tierlog.spark import pipeline

MIN_RUN_S, MAX_RUN_S = 18, 240


def _stop_once_windows_are_out(bootstrap: str, out, stopping: threading.Event) -> None:
    """Stop the run after ``MIN_RUN_S`` once a closed window is in Parquet and a running count in
    the results topic: a loaded machine (other Spark JVMs beside this one) takes longer for the
    first micro-batches, so the run's length follows what came out, not a fixed time."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "pipeline-test-watch"})
    try:
        t0 = time.monotonic()
        while not stopping.wait(0.5):
            if time.monotonic() - t0 < MIN_RUN_S or not pipeline.parquet_rows(out / "parquet")[1]:
                continue
            if c.get_watermark_offsets(TopicPartition(pipeline.RESULTS_TOPIC, 0), timeout=10)[1] > 0:
                stopping.set()
    finally:
        c.close()


def test_pipeline_writes_windows_to_the_topic_and_parquet(spark, spark_node, tmp_path):
    # short windows so a window closes (and reaches Parquet) within the run
    args = pipeline._parse_args(["--duration", str(MAX_RUN_S), "--rate", "500", "--window", "4 seconds",
                                 "--watermark", "1 second", "--trigger", "1 second", "--out", str(tmp_path)])
    piped = io.StringIO()         # not a terminal: plain lines, as in a pipe or a log file
    stopping = threading.Event()
    watch = threading.Thread(target=_stop_once_windows_are_out, args=(spark_node.bootstrap, tmp_path, stopping))
    watch.start()
    try:
        summary = pipeline.run(spark_node.bootstrap, args, tmp_path, spark=spark, stopping=stopping,
                               console=pipeline.console_for(piped))
    finally:
        stopping.set()
        watch.join()
    assert summary.events_produced > 0 and summary.delivery_errors == 0
    assert summary.result_records > 0 and summary.first_result_s is not None
    assert summary.parquet_rows > 0, summary.text()

    results = consume_all(spark_node.bootstrap, pipeline.RESULTS_TOPIC, 1, summary.result_records, timeout_s=20)
    rows = [json.loads(m.value()) for m in results]
    assert rows and {r["action"] for r in rows} <= set(pipeline.ACTIONS)
    assert all(r["events"] > 0 and r["window_start"] < r["window_end"] for r in rows)

    lines = piped.getvalue().splitlines()
    assert "queries running: 4 seconds windows, watermark 1 second, a micro-batch every 1 second" in lines
    status = [line for line in lines if "events produced" in line]
    assert status and all(line.count(" batch ") == 2 and line.endswith("parquet files") for line in status), lines
    assert not any(c in piped.getvalue() for c in "┃│━\x1b"), "a table or colour in a pipe"

    closed = spark.read.parquet(str(summary.parquet_path)).collect()
    assert len(closed) == summary.parquet_rows
    assert sum(r.events for r in closed) <= summary.events_produced


def test_the_accumulator_servers_eof_at_spark_stop_prints_nothing():
    """The JVM closing its connection at spark.stop() is the normal end (pipeline._quiet_accumulator_server)."""
    reported = []
    server = types.SimpleNamespace(handle_error=lambda request, address: reported.append(sys.exc_info()[0]))
    pipeline._quiet_accumulator_server(types.SimpleNamespace(sparkContext=types.SimpleNamespace(
        _accumulatorServer=server)))
    for error in (EOFError(), ValueError("token")):
        try:
            raise error
        except (EOFError, ValueError):
            server.handle_error(None, ("127.0.0.1", 1))
    assert reported == [ValueError]
