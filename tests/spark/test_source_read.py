"""The readers' ``read`` takes any InputPartition, as PySpark calls it (pure; no Spark, no node)."""
import pytest
from pyspark.sql.datasource import InputPartition

from tierlog.spark.options import parse_source_options
from tierlog.spark.source import TierlogBatchReader, TierlogStreamReader


@pytest.mark.parametrize("reader, streaming", [(TierlogBatchReader, False), (TierlogStreamReader, True)])
def test_the_stand_in_partition_of_an_empty_plan_reads_nothing(reader, streaming):
    """PySpark plans one default InputPartition when ``partitions`` gives none; reading it must
    neither fail nor reach for a broker (h:1 answers nothing)."""
    opts = parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t"}, streaming=streaming)
    assert list(reader(opts).read(InputPartition(0))) == []
