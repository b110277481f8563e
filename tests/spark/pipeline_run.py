"""The example pipeline (``python -m tierlog.spark.pipeline``, what ``./dev pipeline`` runs) run as
a process on fixed input, and the check of its output: what the standalone-cluster and the Spark
Connect tests share (local mode is test_pipeline.py's).

``--rate 0`` generates nothing; the input is ``EVENTS`` events with fixed event times over 30 s
plus one 10 minutes later, all in one micro-batch, whose watermark closes the first three 10 s
windows. The run is stopped as Ctrl-C stops it once its Parquet output holds every closed
(window, action).
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from clients import consume_all, produce_all
from confluent_kafka import Consumer, TopicPartition

from tierlog.spark import pipeline, pipeline_cluster

ARGS = ["--rate", "0", "--window", "10 seconds", "--watermark", "1 second", "--trigger", "1 second"]
EVENTS, EVENT_GAP_MS = 300, 100         # 30 s of event time: three 10 s windows, all closed by the last event
TIMEOUT_S = 300


def write_fixed_events(bootstrap: str) -> None:
    """The pipeline's input, written before it starts: events with fixed event times a few minutes
    back, then one 10 minutes later whose watermark closes their windows (its own stays open), all
    within one micro-batch (maxOffsetsPerTrigger is 1000)."""
    now_ms = int(time.time() * 1000)
    t0 = now_ms - now_ms % 60_000 - 300_000
    records = []
    for i in range(EVENTS):
        event = {"user": f"user-{i % 17}", "action": pipeline.ACTIONS[i % 3 if i % 11 else 3], "amount": i % 50 + 0.25}
        records.append((i % 3, event["user"].encode(), json.dumps(event).encode(), None, t0 + i * EVENT_GAP_MS))
    records.append((0, b"user-0", json.dumps({"user": "user-0", "action": "view", "amount": 1.0}).encode(), None,
                    t0 + 600_000))
    pipeline_cluster.create_topics(bootstrap, pipeline_cluster.topics_of(pipeline._parse_args([])))
    produce_all(bootstrap, pipeline.EVENTS_TOPIC, records)


def expected() -> list[tuple]:
    """(action, events, amount) of each closed (window, action), sorted: the events of
    ``write_fixed_events`` aggregated as the pipeline does (10 s windows from a minute boundary)."""
    sums: dict[tuple, list] = {}
    for i in range(EVENTS):
        key = ((i * EVENT_GAP_MS) // 10_000, pipeline.ACTIONS[i % 3 if i % 11 else 3])
        agg = sums.setdefault(key, [0, 0.0])
        agg[0] += 1
        agg[1] += i % 50 + 0.25
    return sorted((action, n, round(amount, 2)) for (_, action), (n, amount) in sums.items())


def run(where: list[str], bootstrap: str, out: Path) -> str:
    """``./dev pipeline WHERE --bootstrap ... ARGS`` (what it runs once set up), stopped as Ctrl-C
    stops it once its Parquet output holds every closed window; its output."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    with (out.parent / f"{out.name}.log").open("w+") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tierlog.spark.pipeline", *where, "--bootstrap", bootstrap,
                                 "--duration", str(TIMEOUT_S), *ARGS, "--out", str(out)],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while pipeline.parquet_rows(out / "parquet")[1] < len(expected()) and proc.poll() is None:
                assert time.monotonic() < deadline, f"no complete output from the pipeline ({where})"
                time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            if proc.wait(120) != 0:
                log.seek(0)
                raise AssertionError(f"the pipeline exited with {proc.returncode}:\n{log.read()[-4000:]}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        log.seek(0)
        return log.read()


def check_output(bootstrap: str, out: Path, output: str) -> None:
    """The closed windows in Parquet and the last running count of each (window, action) in the
    results topic are the events' aggregates (the late event's window still open)."""
    assert "done after" in output, output[-4000:]
    assert "Traceback" not in output, output[-4000:]       # a normal stop (spark/runner_exit.py)
    files = pipeline._committed_files(out / "parquet")
    rows = [r for f in files for r in pq.read_table(f).to_pylist()]
    assert sorted((r["action"], r["events"], r["amount"]) for r in rows) == expected()
    results = consume_all(bootstrap, pipeline.RESULTS_TOPIC, 1, _results_end(bootstrap), timeout_s=30)
    late = ("view", 1, 1.0)                 # the event whose watermark closed the others: its window is open
    assert _latest_counts(results) == sorted([*expected(), late])


def _results_end(bootstrap: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "pipeline-results"})
    try:
        return c.get_watermark_offsets(TopicPartition(pipeline.RESULTS_TOPIC, 0), timeout=10)[1]
    finally:
        c.close()


def _latest_counts(messages) -> list[tuple]:
    """The last running count of each (window, action) among the results topic's ``messages``,
    as sorted (action, events, amount)."""
    latest = {}
    for m in messages:
        row = json.loads(m.value())
        latest[row["window_start"], row["action"]] = (row["action"], row["events"], row["amount"])
    return sorted(latest.values())
