"""EndTxn (26), v0-4: commit or abort the producer's transaction (KIP-98).

Answered once PrepareCommit / PrepareAbort is committed to ``__transaction_state``; the
markers and Complete* follow (``broker.transactions``).  Errors: NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
below v2), CONCURRENT_TRANSACTIONS (the previous end is still being
completed), INVALID_TXN_STATE (ending what is not Ongoing in the other direction),
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (no WRITE on the transactional id).  Left out:
v5 (transaction.version 2, KIP-890 part 2's epoch bump on every end).
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader
from tierlog.protocol.typed.end_txn import EndTxnRequest, EndTxnResponse

from . import authz
from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.END_TXN, 0, 4
PRODUCER_FENCED_FROM = 2           # older clients do not know PRODUCER_FENCED (Kafka answers 47)


async def handle(broker: HandlerContext, header: RequestHeader, request: EndTxnRequest) -> EndTxnResponse:
    if not authz.transactional_id(broker, header, authz.Op.WRITE, request["TransactionalId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    error = await broker.transactions.end_txn(request["TransactionalId"], request["ProducerId"],
                                              request["ProducerEpoch"], request["Committed"])
    if error == ErrorCode.PRODUCER_FENCED and header.api_version < PRODUCER_FENCED_FROM:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"ThrottleTimeMs": 0, "ErrorCode": error}
