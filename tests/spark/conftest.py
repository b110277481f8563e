"""One SparkSession (local[2]) and one tierlog node for all the Spark tests; per module, a node for
the example pipeline's fixed topics and nodes with a tiered topic on fs and on moto S3."""
import os
import shutil
import sys
from pathlib import Path

import pytest
import tiered_topic
from nodeproc import (
    NodeProcess,  # tests/integration, on pytest's pythonpath (pyproject.toml)
)
from tiered import MOTO_CREDENTIALS, MOTO_REGION, TIERED_BROKER, MotoServer, fs_props

from tierlog.spark.pipeline import JVM_THREAD_STACK


def _java_found() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(home and Path(home, "bin", "java").exists()) or shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark():
    if not _java_found():
        pytest.skip("no Java runtime: java is not on PATH and JAVA_HOME is unset (./dev setup installs one)")
    os.environ["PYSPARK_PYTHON"] = sys.executable          # Spark's workers use this environment
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import tierlog.spark
    session = (SparkSession.builder.master("local[2]").appName("tierlog-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.python.worker.reuse", "true")
               .config("spark.sql.streaming.stopTimeout", "30s")
               .config("spark.driver.extraJavaOptions", JVM_THREAD_STACK)
               # the moto server's dummy credentials, for executors reading an S3 store directly
               .config("spark.executorEnv.AWS_ACCESS_KEY_ID", MOTO_CREDENTIALS["AWS_ACCESS_KEY_ID"])
               .config("spark.executorEnv.AWS_SECRET_ACCESS_KEY", MOTO_CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
               .config("spark.executorEnv.AWS_DEFAULT_REGION", MOTO_REGION)
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    tierlog.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_node(tmp_path_factory):
    n = NodeProcess(tmp_path_factory.mktemp("spark") / "node-1").start()
    yield n
    if n.alive():
        n.stop()


@pytest.fixture(scope="module")
def pipeline_node(tmp_path_factory):
    """A node of the module's own: the example pipeline's topics have fixed names (test_pipeline.py
    fills spark_node's)."""
    node = NodeProcess(tmp_path_factory.mktemp("pipeline") / "node-1").start()
    yield node
    if node.alive():
        node.stop()


@pytest.fixture(scope="module")
def tiered_node(tmp_path_factory):
    """A node with ``tiered_topic`` on an fs store (``node.remote``)."""
    root = tmp_path_factory.mktemp("spark-remote")
    remote = root / "remote-storage"
    props = {**fs_props(remote), "metrics.prometheus.listener": "127.0.0.1:0",
             "rlmm.config.example.password": "not-shown"}     # a plugin setting of unknown type
    node = NodeProcess(root / "node-1", props=props).start()
    try:
        tiered_topic.fill(node)
        node.remote = remote
        yield node
    finally:
        if node.alive():
            node.stop()


@pytest.fixture(scope="module")
def s3_tiered_node(tmp_path_factory):
    """``tiered_topic`` on a moto S3 store (``node.settings``: the broker's rsm.config.*; executors get
    the credentials from spark.executorEnv)."""
    root = tmp_path_factory.mktemp("spark-remote-s3")
    with pytest.MonkeyPatch.context() as env, MotoServer(root) as moto:
        for key, value in {**MOTO_CREDENTIALS, "AWS_DEFAULT_REGION": MOTO_REGION}.items():
            env.setenv(key, value)
        env.delenv("AWS_PROFILE", raising=False)
        node = NodeProcess(root / "node-1", props={**TIERED_BROKER, **moto.settings()}).start()
        try:
            tiered_topic.fill(node)
            node.settings = moto.settings()
            yield node
        finally:
            if node.alive():
                node.stop()
