"""Spark Connect: a Connect server started from the pyspark wheel (spark-submit --class
SparkConnectServer; the wheel has no sbin/start-connect-server.sh, but has the spark-connect jar).
A Connect client ships tierlog to its session (``tierlog.spark.ship``: addArtifacts), and

- a batch read through the tierlog source has exactly the rows a classic session reads, with the
  server's Python workers importing tierlog from the shipped zip;
- the example pipeline (``./dev pipeline --remote sc://...``) aggregates every event, its
  foreachBatch sink run by the server's Python.

Needs the Connect client's packages (pyspark[connect]: grpcio, grpcio-status,
googleapis-common-protos, zstandard; in the spark extra). About 30-50 s on 2 cores for the server
and the read, about a minute more for the pipeline.
"""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pipeline_run
import pyspark
import pytest
from clients import create_topic, produce_all
from cluster_job import digest, read
from nodeproc import free_port

import tierlog.spark
from tierlog.spark.ship import ship

pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (the spark extra)")

SPARK_HOME = Path(pyspark.__file__).parent
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
TOPIC = "over-connect"
START_TIMEOUT_S = 120


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """``sc://127.0.0.1:PORT``: a Connect server on local[2], without tierlog: each client ships it."""
    root = tmp_path_factory.mktemp("spark-connect")
    port = free_port()
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", "local[2]",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.ui.enabled=false",
           "--conf", f"spark.pyspark.python={sys.executable}"]
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable}
    log = root / "server.log"
    server = subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(port):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, 15)        # spark-submit's shell and the server's JVM
        server.wait(30)


def test_a_batch_read_over_spark_connect_equals_a_classic_session(spark, spark_node, connect_server, tmp_path):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    create_topic(spark_node.bootstrap, TOPIC, 2)
    produce_all(spark_node.bootstrap, TOPIC, [(i % 2, b"k%d" % i, b"v%d" % i, None, None) for i in range(1000)])
    classic = digest(read(spark, spark_node.bootstrap, TOPIC))
    assert classic["rows"] == 1000

    remote = ConnectSession.builder.remote(connect_server).create()
    try:
        ship(remote, tmp_path)
        tierlog.spark.register(remote)
        assert digest(read(remote, spark_node.bootstrap, TOPIC)) == classic

        def tierlog_file(_):
            import tierlog
            return tierlog.__file__
        remote.udf.register("tierlog_file", tierlog_file, "string")   # a Connect UDF (F.udf makes a classic one here)
        imported = {r[0] for r in remote.range(4).selectExpr("tierlog_file(id)").collect()}
        assert imported and all("tierlog.zip" in f for f in imported), imported    # not the installed one

        # a save in Spark's default mode appends, as with a classic session (tierlog.spark.save_mode)
        (remote.createDataFrame([(b"k-new", b"v-new")], "key binary, value binary").write.format("tierlog")
         .option("kafka.bootstrap.servers", spark_node.bootstrap).option("topic", TOPIC).save())
        assert digest(read(remote, spark_node.bootstrap, TOPIC))["rows"] == 1001
    finally:
        remote.stop()


def test_the_pipeline_over_spark_connect_aggregates_every_event(pipeline_node, connect_server, tmp_path):
    """``./dev pipeline --remote sc://...`` on fixed input (`pipeline_run`)."""
    pipeline_run.write_fixed_events(pipeline_node.bootstrap)
    output = pipeline_run.run(["--remote", connect_server], pipeline_node.bootstrap, tmp_path / "connect")
    assert "starting Spark (Spark Connect sc://" in output
    pipeline_run.check_output(pipeline_node.bootstrap, tmp_path / "connect", output)
