"""TxnOffsetCommit (28), v0-4: a transactional producer commits a group's offsets inside its
transaction (``send_offsets_to_transaction``; KIP-98, KIP-447), at the group's coordinator.

The records are appended as one transactional batch of the producer (acks=all) and answered
once committed; the offsets take effect only when the transaction's COMMIT marker reaches the
group's ``__consumer_offsets`` partition (an ABORT drops them; ``GroupShard.complete_txn``).
Errors as OffsetCommit's (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID,
OFFSET_METADATA_TOO_LARGE, ...); v3+ (KIP-447) checks a given member id and generation
(UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID).  Left out: the check that the
producer added the group's partition to its transaction (AddOffsetsToTxn) first.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.TXN_OFFSET_COMMIT, 0, 4


async def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    def error(code):
        return {"Topics": [{"Name": t["Name"], "Partitions": [
            {"PartitionIndex": p["PartitionIndex"], "ErrorCode": code} for p in t["Partitions"]]}
            for t in request["Topics"]]}
    resp = await broker.groups.run(request["GroupId"],
                                   lambda shard, token, now: shard.txn_commit_offsets(request, token, now), error)
    return {"ThrottleTimeMs": 0, "Topics": resp["Topics"]}
