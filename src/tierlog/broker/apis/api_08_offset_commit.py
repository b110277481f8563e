"""OffsetCommit (8), v0-9: commit a group's offsets to ``__consumer_offsets``.

Answered once the records are committed (acks=all) or with
COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms.  Members are checked
(UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
REBALANCE_IN_PROGRESS); a group without members takes generation -1 commits
(simple consumers).  v2-4 RetentionTimeMs sets an expire timestamp.  For a
KIP-848 consumer group the generation is the member epoch (v9+; a different
one is STALE_MEMBER_EPOCH, and its members must use v9+: UNSUPPORTED_VERSION).
ACLs: READ on the group (else GROUP_AUTHORIZATION_FAILED for every partition) and READ on
each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions, the others are committed).
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.OFFSET_COMMIT, 0, 9


async def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        return {"ThrottleTimeMs": 0, "Topics": _errors(request["Topics"], ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    readable = authz.allowed_topics(broker, header, authz.Op.READ, (t["Name"] for t in request["Topics"]))
    allowed = [t for t in request["Topics"] if t["Name"] in readable]
    refused = _errors([t for t in request["Topics"] if t["Name"] not in readable], ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if not allowed and refused:
        return {"ThrottleTimeMs": 0, "Topics": refused}
    req = {**request, "Topics": allowed, "version": header.api_version}
    resp = await broker.groups.run(request["GroupId"], lambda shard, token, now: shard.commit_offsets(req, token, now),
                                   lambda code: {"Topics": _errors(allowed, code)})
    return {"ThrottleTimeMs": 0, "Topics": resp["Topics"] + refused}


def _errors(topics: list[dict], code: int) -> list[dict]:
    return [{"Name": t["Name"], "Partitions": [{"PartitionIndex": p["PartitionIndex"], "ErrorCode": code}
                                               for p in t["Partitions"]]} for t in topics]
