"""TxnOffsetCommit (28), v0-4: a transactional producer commits a group's offsets inside its
transaction (``send_offsets_to_transaction``; KIP-98, KIP-447), at the group's coordinator.

The records are appended as one transactional batch of the producer (acks=all) and answered
once committed; the offsets take effect only when the transaction's COMMIT marker reaches the
group's ``__consumer_offsets`` partition (an ABORT drops them; ``GroupShard.complete_txn``).
Errors as OffsetCommit's (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID,
OFFSET_METADATA_TOO_LARGE, ...), and INVALID_PRODUCER_EPOCH when the partition's producer state
has seen a newer epoch of the producer (its marker or a newer write: the request is a fenced
one's, or a late copy; Kafka's ``checkProducerEpoch``); v3+ (KIP-447) checks a given member id and generation
(UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID).  ACLs (Kafka): WRITE on the
transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED everywhere), READ on the group
(GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED there; the other
partitions are committed).  Left out: the check that the
producer added the group's partition to its transaction (AddOffsetsToTxn) first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.txn_offset_commit import (
        TxnOffsetCommitRequest,
        TxnOffsetCommitResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.TXN_OFFSET_COMMIT, 0, 4


async def handle(broker: HandlerContext, header: RequestHeader, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    if not authz.transactional_id(broker, header, authz.Op.WRITE, request["TransactionalId"]):
        return {"ThrottleTimeMs": 0, "Topics": _answer(request["Topics"], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)}
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        return {"ThrottleTimeMs": 0, "Topics": _answer(request["Topics"], ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    readable = authz.allowed_topics(broker, header, authz.Op.READ, (t["Name"] for t in request["Topics"]))
    allowed = [t for t in request["Topics"] if t["Name"] in readable]
    refused = _answer([t for t in request["Topics"] if t["Name"] not in readable],
                      ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if not allowed:
        return {"ThrottleTimeMs": 0, "Topics": refused}
    resp = await broker.groups.run(
        request["GroupId"], lambda shard, token, now: shard.txn_commit_offsets({**request, "Topics": allowed}, token, now),
        lambda code: {"Topics": _answer(allowed, code)})
    return {"ThrottleTimeMs": 0, "Topics": resp["Topics"] + refused}


def _answer(topics: list, code: int) -> list:
    return [{"Name": t["Name"], "Partitions": [{"PartitionIndex": p["PartitionIndex"], "ErrorCode": code}
                                               for p in t["Partitions"]]} for t in topics]
