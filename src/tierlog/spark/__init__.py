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

__all__ = ["SCHEMA", "SCHEMA_WITH_HEADERS", "OptionError", "TierlogDataSource", "offsets_behind_latest", "register"]


def register(spark) -> None:
    """Make ``format("tierlog")`` available in ``spark`` (a SparkSession), and a batch write to it
    in Spark's default save mode append, as with Spark's Kafka sink (`tierlog.spark.save_mode`)."""
    from pyspark.sql.readwriter import DataFrameWriter

    spark.dataSource.register(TierlogDataSource)
    default_mode_appends(DataFrameWriter)
