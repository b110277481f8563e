"""A real Spark cluster: a standalone master and two workers started from the pyspark wheel on
127.0.0.1. Submitted to it with the source shipped as ``--py-files`` (``tierlog.spark.ship``): batch
reads through the tierlog source with exactly the rows local mode reads, through a broker and
straight from fs and S3 stores with no broker running; and the example pipeline
(``./dev pipeline --master spark://...``), aggregating every event.

About 70-80 s on 2 cores for the reads (three JVMs start, then a driver and two executors);
about 100 s more for the pipeline.
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
import tiered_topic
from clients import create_topic, produce_all
from cluster_job import digest, read
from nodeproc import free_port
from tiered import LATEST_TIERED, MOTO_CREDENTIALS, MOTO_REGION, offsets

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


def _tiered_range(node) -> str:
    """endingOffsets of ``tiered_topic``'s uploaded range (JSON)."""
    return json.dumps({tiered_topic.TOPIC: {str(p): offsets(node, tiered_topic.TOPIC, p, LATEST_TIERED) + 1
                                            for p in range(tiered_topic.PARTITIONS)}})


def _s3_options(node) -> dict:
    """remoteStorage and the rsm.config.storage.s3.* options naming ``node``'s moto store."""
    settings = node.settings
    location = f"s3://{settings['rsm.config.storage.s3.bucket.name']}/{settings['rsm.config.storage.s3.prefix']}"
    return {"remoteStorage": location, **{k: v for k, v in settings.items() if k.startswith("rsm.config.storage.s3.")
                                          and not k.endswith((".bucket.name", ".prefix"))}}


def test_batch_reads_on_a_standalone_cluster_equal_local_mode_and_direct_ones_need_no_broker(
        spark, spark_node, tiered_node, s3_tiered_node, standalone, tmp_path):
    """One job (one driver, executors on both workers; a submission costs about a minute here)
    reads a plain topic through the broker, and the uploaded range of a tiered topic straight from
    an fs store and from a moto S3 store with their only broker stopped; each equals what local
    mode reads through the brokers."""
    create_topic(spark_node.bootstrap, TOPIC, 3)
    produce_all(spark_node.bootstrap, TOPIC, [(i % 3, b"k%d" % i, b"v%d" % i, None, None) for i in range(3000)])
    reads = {"plain": (spark_node, TOPIC, {})}
    for name, node, store in (("fs", tiered_node, {"remoteStorage": str(tiered_node.remote)}),
                              ("s3", s3_tiered_node, _s3_options(s3_tiered_node))):
        ends = _tiered_range(node)
        reads[name] = (node, tiered_topic.TOPIC, {**store, "endingOffsets": ends, "kafka.request.timeout.ms": "2000"})
    expected = {name: digest(read(spark, node.bootstrap, topic, endingOffsets=options.get("endingOffsets", "latest"),
                                  remoteStorage="off"))
                for name, (node, topic, options) in reads.items()}
    assert expected["plain"]["rows"] == 3000 and min(e["rows"] for e in expected.values()) > 1000
    tiered_node.stop()
    s3_tiered_node.stop()

    credentials = [arg for key, value in {**MOTO_CREDENTIALS, "AWS_DEFAULT_REGION": MOTO_REGION}.items()
                   for arg in ("--conf", f"spark.executorEnv.{key}={value}")]
    job = [{"name": name, "bootstrap": node.bootstrap, "topic": topic, "options": options}
           for name, (node, topic, options) in reads.items()]
    done = _submit(standalone, tmp_path, *credentials, str(Path(__file__).with_name("cluster_job.py")), json.dumps(job))
    results = {r["name"]: r for r in (json.loads(line[len("RESULT "):]) for line in done.stdout.splitlines()
                                      if line.startswith("RESULT "))}
    assert set(results) == set(reads), done.stderr[-4000:]
    for name, want in expected.items():
        assert {k: results[name][k] for k in want} == want, name
    # the executors imported the shipped zip (in the workers' work dirs), not an installed tierlog
    on_executors = results["plain"]["tierlog_on_executors"]
    assert on_executors and all("tierlog.zip" in f for f in on_executors)


# -- the pipeline --------------------------------------------------------------------------


def test_the_pipeline_on_a_standalone_cluster_aggregates_every_event(pipeline_node, standalone, tmp_path):
    """``./dev pipeline --master spark://...`` on fixed input (`pipeline_run`)."""
    pipeline_run.write_fixed_events(pipeline_node.bootstrap)
    output = pipeline_run.run(["--master", standalone], pipeline_node.bootstrap, tmp_path / "cluster")
    pipeline_run.check_output(pipeline_node.bootstrap, tmp_path / "cluster", output)
