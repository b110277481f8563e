"""OffsetFetch (9), v0-9: a group's committed offsets (-1 when none).

v2+ Topics null = every committed offset; v8+ several groups per request, each
answered by its own coordinator partition (a group elsewhere gets
NOT_COORDINATOR).  RequireStable (v7+, KIP-447): a partition whose offset was
committed in a transaction not decided yet answers UNSTABLE_OFFSET_COMMIT.  v0-1
carry coordinator errors per partition.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.OFFSET_FETCH, 0, 9
BATCHED_FROM = 8
TOP_LEVEL_ERROR_FROM = 2


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    if header.api_version >= BATCHED_FROM:
        stable = request.get("RequireStable", False)
        return {"ThrottleTimeMs": 0, "Groups": [_group(broker, g["GroupId"], g["Topics"], stable)
                                                for g in request["Groups"]]}
    topics = request["Topics"] or None
    if topics is None and header.api_version < TOP_LEVEL_ERROR_FROM:
        topics = []
    g = _group(broker, request["GroupId"], topics, request.get("RequireStable", False))
    if g["ErrorCode"] and header.api_version < TOP_LEVEL_ERROR_FROM:
        g["Topics"] = [{"Name": t["Name"], "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": -1, "Metadata": "", "ErrorCode": g["ErrorCode"]}
            for p in t["PartitionIndexes"]]} for t in topics]
    return {"ThrottleTimeMs": 0, "Topics": g["Topics"], "ErrorCode": g["ErrorCode"]}


def _group(broker, group_id: str, topics, require_stable: bool = False) -> dict:
    return broker.groups.read(group_id, lambda shard: shard.fetch_offsets(group_id, topics, require_stable),
                              lambda code: {"GroupId": group_id, "Topics": [], "ErrorCode": code})
