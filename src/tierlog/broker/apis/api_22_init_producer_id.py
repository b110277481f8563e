"""InitProducerId (22), v0-5: producer ids and epochs for idempotent and transactional producers.

Without a TransactionalId: a fresh id from the controller's blocks; a producer that
re-initialises with its id and epoch (v3+, KIP-360) keeps its id with the next epoch.
With one: the transaction coordinator of that id answers (``broker.transactions``:
NOT_COORDINATOR off it, "" INVALID_REQUEST, a timeout above transaction.max.timeout.ms
INVALID_TRANSACTION_TIMEOUT, the epoch bump and fencing rules of KIP-98 / KIP-360, an
Ongoing transaction fenced, aborted and answered CONCURRENT_TRANSACTIONS).  Duplicate
and sequence checks live in the log (``storage.producer_state``).  PRODUCER_FENCED is
answered as INVALID_PRODUCER_EPOCH below v4 (Kafka's rule: older clients do not know 90).
"""
from tierlog.broker.broker import ProducerIdsUnavailable
from tierlog.broker.controller_channel import ControllerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext, Response

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.INIT_PRODUCER_ID, 0, 5
PRODUCER_FENCED_FROM = 4


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> Response:
    if request.get("TransactionalId") is not None:
        return _init_transactional(broker, header.api_version, request)
    return _init(broker, request)


async def _init_transactional(broker, version: int, request: dict) -> dict:
    error, pid, epoch = await broker.transactions.init_producer_id(
        request["TransactionalId"], request["TransactionTimeoutMs"], request.get("ProducerId", -1),
        request.get("ProducerEpoch", -1))
    if error == ErrorCode.PRODUCER_FENCED and version < PRODUCER_FENCED_FROM:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "ProducerId": pid, "ProducerEpoch": epoch}


async def _init(broker, request) -> dict:
    try:
        pid, epoch = await broker.producer_ids.init(request.get("ProducerId", -1), request.get("ProducerEpoch", -1))
    except (ControllerUnavailable, ProducerIdsUnavailable):
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)      # retriable: the client tries again
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ProducerId": pid, "ProducerEpoch": epoch}


def _error(code: int) -> dict:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ProducerId": -1, "ProducerEpoch": -1}
