"""Getting the tierlog data source to executors on a Spark cluster.

A Python data source runs in each executor's Python workers, so ``tierlog`` must import
there. Two ways, documented in docs/spark.md:

- install tierlog (with the ``spark`` extra) in the Python every worker runs
  (``spark.pyspark.python`` / ``PYSPARK_PYTHON``), or
- ship tierlog's own code from the driver: ``package_zip`` writes the imported ``tierlog``
  package as a zip, for ``spark-submit --py-files`` / ``spark.submit.pyFiles``, and ``ship``
  adds it to a running session, classic or Spark Connect; the workers' Python must still
  have tierlog's dependencies (pyarrow, confluent-kafka; boto3 for S3 stores).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import tierlog

__all__ = ["package_zip", "ship"]


def package_zip(directory: Path) -> Path:
    """``directory/tierlog.zip`` (the directory made if missing): the ``tierlog`` package this process
    imports, sources only."""
    package = Path(tierlog.__file__).parent
    Path(directory).mkdir(parents=True, exist_ok=True)
    target = Path(directory) / "tierlog.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.rglob("*.py")):
            zf.write(path, Path("tierlog") / path.relative_to(package))
    return target


def ship(spark, directory: Path) -> Path:
    """Make tierlog importable on ``spark``'s executors: ``SparkContext.addPyFile`` in a classic
    session; in a Spark Connect session ``addArtifacts(pyfile=True)``, which also reaches the
    server's Python that runs foreachBatch functions."""
    from tierlog.spark import is_connect

    target = package_zip(directory)
    if is_connect(spark):
        spark.addArtifacts(str(target), pyfile=True)
    else:
        spark.sparkContext.addPyFile(str(target))
    return target
