"""InitProducerId (22), v0-5: producer ids and epochs for idempotent producers.

Idempotence only: there is no transaction coordinator yet, so a request with a
TransactionalId answers INVALID_REQUEST and transactional clients fail fast.
A producer that re-initialises with its id and epoch (v3+, KIP-360) keeps its
id with the next epoch.  Duplicate and sequence checks live in the log
(``storage.producer_state``).
ACLs (KIP-679): IDEMPOTENT_WRITE on the cluster or WRITE on any topic, else
CLUSTER_AUTHORIZATION_FAILED.
"""
from tierlog.broker.broker import ProducerIdsUnavailable
from tierlog.broker.controller_channel import ControllerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.INIT_PRODUCER_ID, 0, 5


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> Response:
    if request.get("TransactionalId") is not None:
        return _error(ErrorCode.INVALID_REQUEST)
    # KIP-679: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    if not (authz.cluster(broker, header, authz.Op.IDEMPOTENT_WRITE)
            or authz.any_topic(broker, header, authz.Op.WRITE)):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return _init(broker, request)


async def _init(broker, request) -> dict:
    try:
        pid, epoch = await broker.producer_ids.init(request.get("ProducerId", -1), request.get("ProducerEpoch", -1))
    except (ControllerUnavailable, ProducerIdsUnavailable):
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)      # retriable: the client tries again
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ProducerId": pid, "ProducerEpoch": epoch}


def _error(code: int) -> dict:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ProducerId": -1, "ProducerEpoch": -1}
