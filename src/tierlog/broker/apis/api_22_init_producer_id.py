"""InitProducerId (22), v0-5: producer ids and epochs for idempotent and transactional producers.

Without a TransactionalId: a fresh id from the controller's blocks; a producer that
re-initialises with its id and epoch (v3+, KIP-360) keeps its id with the next epoch.
With one: the transaction coordinator of that id answers (``broker.transactions``:
NOT_COORDINATOR off it, "" INVALID_REQUEST, a timeout above transaction.max.timeout.ms
INVALID_TRANSACTION_TIMEOUT, the epoch bump and fencing rules of KIP-98 / KIP-360, an
Ongoing transaction fenced, aborted and answered CONCURRENT_TRANSACTIONS).  Duplicate
and sequence checks live in the log (``storage.producer_state``).  PRODUCER_FENCED is
answered as INVALID_PRODUCER_EPOCH below v4 (Kafka's rule: older clients do not know 90).
ACLs: a TransactionalId needs WRITE on it (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an
idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on any topic (KIP-679), else
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.broker.broker import ProducerIdsUnavailable
from tierlog.broker.controller_channel import ControllerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response

if TYPE_CHECKING:
    from tierlog.protocol.typed.init_producer_id import (
        InitProducerIdRequest,
        InitProducerIdResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.INIT_PRODUCER_ID, 0, 5
PRODUCER_FENCED_FROM = 4


def handle(broker: HandlerContext, header: RequestHeader, request: InitProducerIdRequest) -> Response[InitProducerIdResponse]:
    txn_id = request.get("TransactionalId")
    if txn_id is not None:
        if not authz.transactional_id(broker, header, authz.Op.WRITE, txn_id):
            return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return _init_transactional(broker, header.api_version, request)
    # KIP-679: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    if not (authz.cluster(broker, header, authz.Op.IDEMPOTENT_WRITE)
            or authz.any_topic(broker, header, authz.Op.WRITE)):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return _init(broker, request)


async def _init_transactional(broker, version: int, request: InitProducerIdRequest) -> InitProducerIdResponse:
    error, pid, epoch = await broker.transactions.init_producer_id(
        request["TransactionalId"], request["TransactionTimeoutMs"], request.get("ProducerId", -1),
        request.get("ProducerEpoch", -1))
    if error == ErrorCode.PRODUCER_FENCED and version < PRODUCER_FENCED_FROM:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "ProducerId": pid, "ProducerEpoch": epoch}


async def _init(broker, request: InitProducerIdRequest) -> InitProducerIdResponse:
    try:
        pid, epoch = await broker.producer_ids.init(request.get("ProducerId", -1), request.get("ProducerEpoch", -1))
    except (ControllerUnavailable, ProducerIdsUnavailable):
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)      # retriable: the client tries again
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ProducerId": pid, "ProducerEpoch": epoch}


def _error(code: int) -> InitProducerIdResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ProducerId": -1, "ProducerEpoch": -1}
