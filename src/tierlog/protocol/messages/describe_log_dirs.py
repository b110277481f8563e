"""DescribeLogDirs (key 35), versions 0-4, flexible from 2.

A null Topics asks for every partition. v1 is v0; v3 adds the response's
top-level ErrorCode; v4 each log dir's TotalBytes and UsableBytes (-1 when
unknown). Kafka 4.x serves v1-4 (v0 was removed by KIP-896). Nothing is
left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC = Struct([
    Field("Topic", "string"),
    Field("Partitions", ["int32"]),
], name="DescribableLogDirTopic")

REQUEST = Struct([
    Field("Topics", [_TOPIC], nullable="0+", default=None),
], name="DescribeLogDirsRequest")

_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("PartitionSize", "int64"),
    Field("OffsetLag", "int64"),
    Field("IsFutureKey", "bool", default=False),
], name="DescribeLogDirsPartition")

_RESULT_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="DescribeLogDirsTopic")

_RESULT = Struct([
    Field("ErrorCode", "int16"),
    Field("LogDir", "string"),
    Field("Topics", [_RESULT_TOPIC]),
    Field("TotalBytes", "int64", versions="4+", default=-1),
    Field("UsableBytes", "int64", versions="4+", default=-1),
], name="DescribeLogDirsResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16", versions="3+", default=0),
    Field("Results", [_RESULT]),
], name="DescribeLogDirsResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_LOG_DIRS, "DescribeLogDirs", 0, 4, 2, REQUEST, RESPONSE)
