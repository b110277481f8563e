"""A real Spark cluster: a standalone master and two workers started from the pyspark wheel on
127.0.0.1, a batch read through the tierlog source submitted to it with the source shipped as
``--py-files`` (``tierlog.spark.ship``), with exactly the rows local mode reads; and the example
pipeline (``./dev pipeline --master spark://...``) on it, aggregating every event.

About 40-60 s on 2 cores for the batch read (three JVMs start, then a driver and two
executors); about a minute more for the pipeline.
"""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pyspark
import pytest
from clients import consume_all, create_topic, produce_all
from cluster_job import digest, read
from confluent_kafka import Consumer, TopicPartition
from nodeproc import NodeProcess, free_port

from tierlog.spark import pipeline
from tierlog.spark.ship import package_zip

SPARK_HOME = Path(pyspark.__file__).parent
TOPIC = "on-a-cluster"
WORKERS = 2
START_TIMEOUT_S = 90


def _daemon(log: Path, *args) -> subprocess.Popen:
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_DAEMON_MEMORY": "256m",
           "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
            return int(json.loads(resp.read()).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """``spark://127.0.0.1:PORT``: a master and two workers of one core and 1 GiB each."""
    root = tmp_path_factory.mktemp("spark-standalone")
    port, ui = free_port(), free_port()
    procs = [_daemon(root / "master.log", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(port), "--webui-port", str(ui))]
    master = f"spark://127.0.0.1:{port}"
    try:
        for i in range(WORKERS):
            procs.append(_daemon(root / f"worker-{i}.log", "org.apache.spark.deploy.worker.Worker", master,
                                 "--host", "127.0.0.1", "--webui-port", str(free_port()), "--cores", "1",
                                 "--memory", "1g", "--work-dir", str(root / f"work-{i}")))
        deadline = time.monotonic() + START_TIMEOUT_S
        while _alive_workers(ui) < WORKERS:
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
                (root / "master.log").read_text()[-3000:]
            time.sleep(0.5)
        yield master
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)


def _submit(master: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master,
           "--py-files", str(package_zip(tmp_path)),
           "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=512m",
           "--conf", "spark.ui.enabled=false", *args]
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_batch_read_on_a_standalone_cluster_equals_local_mode(spark, spark_node, standalone, tmp_path):
    create_topic(spark_node.bootstrap, TOPIC, 3)
    produce_all(spark_node.bootstrap, TOPIC, [(i % 3, b"k%d" % i, b"v%d" % i, None, None) for i in range(3000)])
    local = digest(read(spark, spark_node.bootstrap, TOPIC))
    assert local["rows"] == 3000

    done = _submit(standalone, tmp_path, str(Path(__file__).with_name("cluster_job.py")), spark_node.bootstrap, TOPIC)
    result = next((json.loads(line[len("RESULT "):]) for line in done.stdout.splitlines()
                   if line.startswith("RESULT ")), None)
    assert result is not None, done.stderr[-4000:]
    assert {k: result[k] for k in local} == local
    # the executors imported the shipped zip (in the workers' work dirs), not an installed tierlog
    assert result["tierlog_on_executors"] and all("tierlog.zip" in f for f in result["tierlog_on_executors"])



# -- the pipeline --------------------------------------------------------------------------

PIPELINE_ARGS = ["--rate", "0", "--window", "10 seconds", "--watermark", "1 second", "--trigger", "1 second"]
EVENTS, EVENT_GAP_MS = 300, 100         # 30 s of event time: three 10 s windows, all closed by the last event
PIPELINE_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def pipeline_node(tmp_path_factory):
    """A node of its own: the pipeline's topics have fixed names (test_pipeline.py fills spark_node's)."""
    node = NodeProcess(tmp_path_factory.mktemp("pipeline") / "node-1").start()
    yield node
    if node.alive():
        node.stop()


def _fixed_events(bootstrap: str) -> None:
    """The pipeline's input, written before it starts (--rate 0 generates none): events with fixed
    event times a few minutes back, then one 10 minutes later whose watermark closes their windows
    (its own stays open), all within one micro-batch (maxOffsetsPerTrigger is 1000)."""
    now_ms = int(time.time() * 1000)
    t0 = now_ms - now_ms % 60_000 - 300_000
    records = []
    for i in range(EVENTS):
        event = {"user": f"user-{i % 17}", "action": pipeline.ACTIONS[i % 3 if i % 11 else 3], "amount": i % 50 + 0.25}
        records.append((i % 3, event["user"].encode(), json.dumps(event).encode(), None, t0 + i * EVENT_GAP_MS))
    records.append((0, b"user-0", json.dumps({"user": "user-0", "action": "view", "amount": 1.0}).encode(), None,
                    t0 + 600_000))
    pipeline.create_topics(bootstrap)
    produce_all(bootstrap, pipeline.EVENTS_TOPIC, records)


def _expected() -> list[tuple]:
    """(action, events, amount) of each closed (window, action), sorted: the events of
    ``_fixed_events`` aggregated as the pipeline does (10 s windows from a minute boundary)."""
    sums: dict[tuple, list] = {}
    for i in range(EVENTS):
        key = ((i * EVENT_GAP_MS) // 10_000, pipeline.ACTIONS[i % 3 if i % 11 else 3])
        agg = sums.setdefault(key, [0, 0.0])
        agg[0] += 1
        agg[1] += i % 50 + 0.25
    return sorted((action, n, round(amount, 2)) for (_, action), (n, amount) in sums.items())


def _expected_windows() -> int:
    """The closed (window, action) pairs: what the Parquet output holds when complete."""
    return len(_expected())


def _parquet(out: Path) -> list[tuple]:
    files = pipeline._committed_files(out / "parquet")
    rows = [r for f in files for r in pq.read_table(f).to_pylist()]
    return sorted((str(r["window_start"]), str(r["window_end"]), r["action"], r["events"], r["amount"])
                  for r in rows)


def _wait_for_windows(out: Path, deadline: float) -> None:
    while pipeline.parquet_rows(out / "parquet")[1] < _expected_windows():
        assert time.monotonic() < deadline, f"the pipeline wrote {pipeline.parquet_rows(out / 'parquet')} by now"
        time.sleep(0.5)


def _run_on_cluster(master: str, bootstrap: str, out: Path) -> str:
    """``./dev pipeline --master spark://...`` (what it runs once set up), stopped as Ctrl-C stops it
    once its Parquet output holds every closed window; its output."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    with (out.parent / f"{out.name}.log").open("w+") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tierlog.spark.pipeline", "--master", master, "--bootstrap",
                                 bootstrap, "--duration", str(PIPELINE_TIMEOUT_S), *PIPELINE_ARGS, "--out", str(out)],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + PIPELINE_TIMEOUT_S
            while pipeline.parquet_rows(out / "parquet")[1] < _expected_windows() and proc.poll() is None:
                assert time.monotonic() < deadline, "no complete output from the pipeline on the cluster"
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


def test_the_pipeline_on_a_standalone_cluster_aggregates_every_event(pipeline_node, standalone, tmp_path):
    """``./dev pipeline --master spark://...``: the closed windows in Parquet and the running counts
    in the results topic are the events' aggregates (local mode is test_pipeline.py's)."""
    boot = pipeline_node.bootstrap
    _fixed_events(boot)
    output = _run_on_cluster(standalone, boot, tmp_path / "cluster")
    assert "done after" in output, output[-4000:]
    rows = _parquet(tmp_path / "cluster")
    assert sorted((action, events, amount) for _, _, action, events, amount in rows) == _expected()
    results = consume_all(boot, pipeline.RESULTS_TOPIC, 1, _results_end(boot), timeout_s=30)
    late = ("view", 1, 1.0)                 # the event whose watermark closed the others: its window is open
    assert _latest_counts(results) == sorted([*_expected(), late])
