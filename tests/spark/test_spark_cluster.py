"""A real Spark cluster: a standalone master and two workers started from the pyspark wheel on
127.0.0.1, a batch read through the tierlog source submitted to it with the source shipped as
``--py-files`` (``tierlog.spark.ship``), with exactly the rows local mode reads; and the example
pipeline (``./dev pipeline --master spark://...``) on it, aggregating every event.

About 40-60 s on 2 cores for the batch read (three JVMs start, then a driver and two
executors); about a minute more for the pipeline.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pipeline_run
import pyspark
import pytest
from clients import create_topic, produce_all
from cluster_job import digest, read
from nodeproc import free_port

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


def test_the_pipeline_on_a_standalone_cluster_aggregates_every_event(pipeline_node, standalone, tmp_path):
    """``./dev pipeline --master spark://...`` on fixed input (`pipeline_run`)."""
    pipeline_run.write_fixed_events(pipeline_node.bootstrap)
    output = pipeline_run.run(["--master", standalone], pipeline_node.bootstrap, tmp_path / "cluster")
    pipeline_run.check_output(pipeline_node.bootstrap, tmp_path / "cluster", output)
