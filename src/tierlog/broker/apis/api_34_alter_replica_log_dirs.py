"""AlterReplicaLogDirs (34), v1-2: move replicas of this broker to other log dirs of it (KIP-113).

Per partition, Kafka's rules (``broker.log_dir_moves``): LOG_DIR_NOT_FOUND when
Path is not one of this broker's log dirs (compared as absolute paths),
KAFKA_STORAGE_ERROR when that dir (or the partition, with its dir) is offline,
REPLICA_NOT_AVAILABLE when this broker does not host the partition; else NONE
and the move runs in the background (a future log in the target dir catches up,
then swaps; DescribeLogDirs shows it with IsFutureKey true meanwhile).  Asking
for the dir the replica is in cancels a move under way.  Unlike Kafka, a dir
asked for a partition not hosted yet is not remembered for its creation.
v0 (removed in Kafka 4.0, KIP-896) is not served.
ACLs: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_replica_log_dirs import (
        AlterReplicaLogDirsRequest,
        AlterReplicaLogDirsResponse,
        AlterReplicaLogDirTopicResult,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ALTER_REPLICA_LOG_DIRS, 1, 2


def handle(broker: HandlerContext, header: RequestHeader,
           request: AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse:
    allowed = authz.cluster(broker, header, authz.Op.ALTER)
    moves = broker.replicas.log_dir_moves
    by_topic: dict[str, list] = {}
    for d in request["Dirs"]:
        for t in d["Topics"]:
            results = by_topic.setdefault(t["Name"], [])
            for index in t["Partitions"]:
                code = moves.alter(t["Name"], index, d["Path"]) if allowed \
                    else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                results.append({"PartitionIndex": index, "ErrorCode": code})
    topics: list[AlterReplicaLogDirTopicResult] = [{"TopicName": name, "Partitions": parts}
                                                   for name, parts in by_topic.items()]
    return {"ThrottleTimeMs": 0, "Results": topics}
