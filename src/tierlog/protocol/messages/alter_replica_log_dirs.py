"""AlterReplicaLogDirs (key 34), versions 0-2, flexible from 2.

v1 is v0 (on a quota violation the answer is sent before throttling); Kafka 4.x
serves v1-2 (v0 was removed by KIP-896). Each Dirs entry names an absolute log
dir path and the partitions to move there. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", ["int32"]),
], name="AlterReplicaLogDirTopic")

_DIR = Struct([
    Field("Path", "string"),
    Field("Topics", [_TOPIC]),
], name="AlterReplicaLogDir")

REQUEST = Struct([
    Field("Dirs", [_DIR]),
], name="AlterReplicaLogDirsRequest")

_PARTITION_RESULT = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
], name="AlterReplicaLogDirPartitionResult")

_TOPIC_RESULT = Struct([
    Field("TopicName", "string"),
    Field("Partitions", [_PARTITION_RESULT]),
], name="AlterReplicaLogDirTopicResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Results", [_TOPIC_RESULT]),
], name="AlterReplicaLogDirsResponse")

SPEC = ApiSpec(ApiKey.ALTER_REPLICA_LOG_DIRS, "AlterReplicaLogDirs", 0, 2, 2, REQUEST, RESPONSE)
