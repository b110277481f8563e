"""EndTxn (26), v0-5: commit or abort the producer's transaction (KIP-98).

Answered once PrepareCommit / PrepareAbort is committed to ``__transaction_state``; the
markers and Complete* follow (``broker.transactions``).  Errors: NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
below v2), CONCURRENT_TRANSACTIONS (the previous end is still being
completed), INVALID_TXN_STATE (ending what is not Ongoing in the other direction),
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (no WRITE on the transactional id).
v5 is transaction.version 2 (KIP-890 part 2, Kafka's ``transactionVersionForEndTxn``): every
end bumps the producer epoch, the markers carry the bumped epoch and the answer gives the
client its ProducerId / ProducerEpoch for the next transaction (a new producer id at epoch 0
when the epoch is exhausted). Clients learn to use it from the finalized ``transaction.version``
2 in ApiVersions (``api_18_api_versions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader
from tierlog.txn import TV_2

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.end_txn import EndTxnRequest, EndTxnResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.END_TXN, 0, 5
PRODUCER_FENCED_FROM = 2           # older clients do not know PRODUCER_FENCED (Kafka answers 47)
TV2_FROM = 5                       # EndTxn v5+: the client runs transaction.version 2
TV1 = 0                            # what the coordinator's records call a client before TV2


async def handle(broker: HandlerContext, header: RequestHeader, request: EndTxnRequest) -> EndTxnResponse:
    if not authz.transactional_id(broker, header, authz.Op.WRITE, request["TransactionalId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "ProducerId": -1, "ProducerEpoch": -1}
    version = TV_2 if header.api_version >= TV2_FROM else TV1
    error, producer_id, epoch = await broker.transactions.end_txn(
        request["TransactionalId"], request["ProducerId"], request["ProducerEpoch"], request["Committed"], version)
    if error == ErrorCode.PRODUCER_FENCED and header.api_version < PRODUCER_FENCED_FROM:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    if error:
        producer_id, epoch = -1, -1
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "ProducerId": producer_id, "ProducerEpoch": epoch}
