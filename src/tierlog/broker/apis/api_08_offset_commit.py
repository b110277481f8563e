"""OffsetCommit (8), v0-9: commit a group's offsets to ``__consumer_offsets``.

Answered once the records are committed (acks=all) or with
COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms.  Members are checked
(UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
REBALANCE_IN_PROGRESS); a group without members takes generation -1 commits
(simple consumers).  v2-4 RetentionTimeMs sets an expire timestamp.  For a
KIP-848 consumer group the generation is the member epoch (v9+; a different
one is STALE_MEMBER_EPOCH, and its members must use v9+: UNSUPPORTED_VERSION).
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.OFFSET_COMMIT, 0, 9


async def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    def error(code):
        return {"Topics": [{"Name": t["Name"], "Partitions": [
            {"PartitionIndex": p["PartitionIndex"], "ErrorCode": code} for p in t["Partitions"]]}
            for t in request["Topics"]]}
    req = {**request, "version": header.api_version}
    resp = await broker.groups.run(request["GroupId"], lambda shard, token, now: shard.commit_offsets(req, token, now),
                                   error)
    return {"ThrottleTimeMs": 0, "Topics": resp["Topics"]}
