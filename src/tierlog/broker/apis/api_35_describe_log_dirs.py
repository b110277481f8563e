"""DescribeLogDirs (35), v1-4: this broker's log dirs and the partition logs in each.

Answered by the broker itself from its LogManager (Kafka's
ReplicaManager.describeLogDirs): per log dir its path, and per hosted
partition (all of them for a null Topics, else the ones asked for that are
hosted here) PartitionSize (the bytes of its local segments), OffsetLag
(max(high watermark - log end offset, 0), as Kafka: 0 for a leader, whose log
end is never below its high watermark; -1 for a log the replica manager does
not serve yet) and IsFutureKey false; a replica moving to another dir
(AlterReplicaLogDirs) is listed there too with IsFutureKey true, the size of
its future log and OffsetLag = current log end - future log end (Kafka's).  v4 adds each dir's TotalBytes and
UsableBytes (the volume's size and the space free for us; -1 when they cannot
be read).  An offline dir answers KAFKA_STORAGE_ERROR with no topics.  v0
(removed in Kafka 4.0, KIP-896) is not served.
ACLs: DESCRIBE on the cluster, else no dirs (v3+: CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_log_dirs import (
        DescribeLogDirsPartition,
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
        DescribeLogDirsResult,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_LOG_DIRS, 1, 4
INVALID_OFFSET_LAG = -1


def handle(broker: HandlerContext, header: RequestHeader, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not authz.cluster(broker, header, authz.Op.DESCRIBE):     # Kafka: an empty answer, v3+ with the error
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Results": []}
    logs = broker.replicas.logs
    wanted = _wanted(request.get("Topics"))
    by_dir: defaultdict[Path, defaultdict[str, list[DescribeLogDirsPartition]]] = defaultdict(lambda: defaultdict(list))
    for (topic, index), log in sorted(logs.logs().items()):
        if wanted is not None and index not in wanted.get(topic, ()):
            continue
        home = logs.log_dir_of(topic, index)
        if home is not None:
            by_dir[home][topic].append({"PartitionIndex": index, "PartitionSize": log.size_in_bytes,
                                        "OffsetLag": _lag(broker, topic, index, log), "IsFutureKey": False})
    for (topic, index), future in sorted(logs.futures().items()):
        current, home = logs.get(topic, index), logs.future_dir_of(topic, index)
        if current is None or home is None or (wanted is not None and index not in wanted.get(topic, ())):
            continue
        by_dir[home][topic].append({"PartitionIndex": index, "PartitionSize": future.size_in_bytes,
                                    "OffsetLag": max(current.log_end_offset - future.log_end_offset, 0),
                                    "IsFutureKey": True})
    results = [_dir_result(d, d in logs.offline_dirs, by_dir.get(d, {})) for d in logs.log_dirs]
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "Results": results}


def _wanted(topics) -> dict[str, set[int]] | None:
    if topics is None:
        return None
    out: dict[str, set[int]] = defaultdict(set)
    for t in topics:
        out[t["Topic"]].update(t["Partitions"])
    return out


def _lag(broker, topic: str, index: int, log) -> int:
    part = broker.replicas.get(topic, index)
    if part is None:
        return INVALID_OFFSET_LAG
    return max(part.high_watermark - log.log_end_offset, 0)


def _dir_result(path, offline: bool, topics: dict[str, list[DescribeLogDirsPartition]]) -> DescribeLogDirsResult:
    if offline:
        return {"ErrorCode": ErrorCode.KAFKA_STORAGE_ERROR, "LogDir": str(path.absolute()), "Topics": [],
                "TotalBytes": -1, "UsableBytes": -1}
    try:
        usage = shutil.disk_usage(path)
        total, usable = usage.total, usage.free
    except OSError:
        total = usable = -1
    return {"ErrorCode": ErrorCode.NONE, "LogDir": str(path.absolute()), "TotalBytes": total, "UsableBytes": usable,
            "Topics": [{"Name": name, "Partitions": parts} for name, parts in topics.items()]}
