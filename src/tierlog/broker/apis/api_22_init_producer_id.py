"""InitProducerId (22), v0-5: producer ids and epochs for idempotent producers.

Idempotence only: there is no transaction coordinator yet, so a request with a
TransactionalId answers INVALID_REQUEST and transactional clients fail fast.
A producer that re-initialises with its id and epoch (v3+, KIP-360) keeps its
id with the next epoch.  Duplicate and sequence checks live in the log
(``storage.producer_state``).
"""
from tierlog.broker.broker import ProducerIdsUnavailable
from tierlog.broker.controller_channel import ControllerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext, Response

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.INIT_PRODUCER_ID, 0, 5


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> Response:
    if request.get("TransactionalId") is not None:
        return _error(ErrorCode.INVALID_REQUEST)
    return _init(broker, request)


async def _init(broker, request) -> dict:
    try:
        pid, epoch = await broker.producer_ids.init(request.get("ProducerId", -1), request.get("ProducerEpoch", -1))
    except (ControllerUnavailable, ProducerIdsUnavailable):
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)      # retriable: the client tries again
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ProducerId": pid, "ProducerEpoch": epoch}


def _error(code: int) -> dict:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ProducerId": -1, "ProducerEpoch": -1}
