"""The ``tierlog`` PySpark data source (Spark 4 Python Data Source API).

    import tierlog.spark
    tierlog.spark.register(spark)
    df = (spark.read.format("tierlog")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events").load())

Options, schema and semantics follow Spark's Kafka source and sink; no JVM
connector jar is needed. Spark's Python workers must run an interpreter with
tierlog installed (set PYSPARK_PYTHON, e.g. to ``sys.executable``).
It needs the ``spark`` extra (``pip install 'tierlog[spark]'``); without it,
importing this package raises a one-line MissingExtraError naming it.
"""

from __future__ import annotations

from tierlog.extras import require

require("spark", "the tierlog Spark data source")     # before the modules that import pyspark

from tierlog.spark.options import OptionError
from tierlog.spark.progress import offsets_behind_latest
from tierlog.spark.save_mode import default_mode_appends
from tierlog.spark.source import SCHEMA, SCHEMA_WITH_HEADERS, TierlogDataSource

__all__ = ["SCHEMA", "SCHEMA_WITH_HEADERS", "OptionError", "TierlogDataSource", "is_connect", "offsets_behind_latest", "register"]


def register(spark) -> None:
    """Make ``format("tierlog")`` available in ``spark`` (a classic or a Spark Connect SparkSession),
    and a batch write to it in Spark's default save mode append, as with Spark's Kafka sink
    (`tierlog.spark.save_mode`; in this process: a foreachBatch function that a Connect server runs
    in its own Python gives the mode itself). Turns ``spark.sql.python.filterPushdown.enabled`` on
    for the table read's file pruning (docs/tables.md)."""
    spark.dataSource.register(TierlogDataSource)
    # a table read (spark/table_read.py) plans with the filters Spark pushes; a reader with pushFilters
    # fails while this is off (Spark 4.1's default), and only readers that have it are affected
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    if is_connect(spark):
        from pyspark.sql.connect.readwriter import DataFrameWriter
    else:
        from pyspark.sql.readwriter import DataFrameWriter  # type: ignore[assignment]
    default_mode_appends(DataFrameWriter)


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no SparkContext, no JVM here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")
