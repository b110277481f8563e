"""One SparkSession (local[2]) and one tierlog node for all the Spark tests."""
import os
import shutil
import sys
from pathlib import Path

import pytest
from nodeproc import (
    NodeProcess,  # tests/integration, on pytest's pythonpath (pyproject.toml)
)
from tiered import MOTO_CREDENTIALS, MOTO_REGION

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
