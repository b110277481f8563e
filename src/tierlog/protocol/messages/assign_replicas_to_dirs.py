"""AssignReplicasToDirs (key 73), version 0, flexible (KIP-858).

A broker tells the active controller which of its log dirs hosts each of its
replicas (dirs by ``directory.id``, then topics by id, then partition indexes);
the answer has an error code per partition. Sent to the controller listener
only. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("BrokerId", "int32"),
    Field("BrokerEpoch", "int64", default=-1),
    Field("Directories", [Struct([
        Field("Id", "uuid"),
        Field("Topics", [Struct([
            Field("TopicId", "uuid"),
            Field("Partitions", [Struct([Field("PartitionIndex", "int32")], name="PartitionData")]),
        ], name="TopicData")]),
    ], name="DirectoryData")]),
], name="AssignReplicasToDirsRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("Directories", [Struct([
        Field("Id", "uuid"),
        Field("Topics", [Struct([
            Field("TopicId", "uuid"),
            Field("Partitions", [Struct([
                Field("PartitionIndex", "int32"),
                Field("ErrorCode", "int16"),
            ], name="PartitionData")]),
        ], name="TopicData")]),
    ], name="DirectoryData")]),
], name="AssignReplicasToDirsResponse")

SPEC = ApiSpec(ApiKey.ASSIGN_REPLICAS_TO_DIRS, "AssignReplicasToDirs", 0, 0, 0, REQUEST, RESPONSE)
