"""Spark Connect: a Connect server started from the pyspark wheel (spark-submit --class
SparkConnectServer; the wheel has no sbin/start-connect-server.sh, but has the spark-connect jar),
tierlog shipped to it with --py-files, and a batch read through the tierlog source from a Connect
client with exactly the rows a classic session reads.

Needs the Connect client's packages (pyspark[connect]: grpcio, grpcio-status,
googleapis-common-protos, zstandard; in the dev extra). About 30-50 s on 2 cores.
"""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest
from clients import create_topic, produce_all
from cluster_job import digest, read
from nodeproc import free_port

from tierlog.spark.ship import package_zip

pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (the dev extra)")

SPARK_HOME = Path(pyspark.__file__).parent
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
TOPIC = "over-connect"
START_TIMEOUT_S = 120


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """``sc://127.0.0.1:PORT``: a Connect server on local[2] whose Python workers import the shipped tierlog."""
    root = tmp_path_factory.mktemp("spark-connect")
    port = free_port()
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", "local[2]",
           "--py-files", str(package_zip(root)), "--conf", f"spark.connect.grpc.binding.port={port}",
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


def test_a_batch_read_over_spark_connect_equals_a_classic_session(spark, spark_node, connect_server):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from tierlog.spark import TierlogDataSource

    create_topic(spark_node.bootstrap, TOPIC, 2)
    produce_all(spark_node.bootstrap, TOPIC, [(i % 2, b"k%d" % i, b"v%d" % i, None, None) for i in range(1000)])
    classic = digest(read(spark, spark_node.bootstrap, TOPIC))
    assert classic["rows"] == 1000

    remote = ConnectSession.builder.remote(connect_server).create()
    try:
        remote.dataSource.register(TierlogDataSource)
        assert digest(read(remote, spark_node.bootstrap, TOPIC)) == classic
    finally:
        remote.stop()
