"""AddOffsetsToTxn (25), v0-4: a transactional producer that will send offsets
(``send_offsets_to_transaction``) adds the group's ``__consumer_offsets`` partition to its
transaction, so that the transaction's markers reach the group coordinator (KIP-98).

Errors are the transaction coordinator's (as AddPartitionsToTxn); an empty group id is
INVALID_GROUP_ID.  PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below v2.  ACLs (Kafka):
WRITE on the transactional id, then READ on the group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.broker.group_coordinator import OFFSETS_TOPIC
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.add_offsets_to_txn import (
        AddOffsetsToTxnRequest,
        AddOffsetsToTxnResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ADD_OFFSETS_TO_TXN, 0, 4
PRODUCER_FENCED_FROM = 2           # older clients do not know PRODUCER_FENCED (Kafka answers 47)


async def handle(broker: HandlerContext, header: RequestHeader, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    group_id = request["GroupId"]
    if not group_id:
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.INVALID_GROUP_ID}
    if not authz.transactional_id(broker, header, authz.Op.WRITE, request["TransactionalId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not authz.group(broker, header, authz.Op.READ, group_id):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    partition = (OFFSETS_TOPIC, broker.groups.partition_for(group_id))
    error = await broker.transactions.add_partitions(request["TransactionalId"], request["ProducerId"],
                                                     request["ProducerEpoch"], frozenset({partition}))
    if error == ErrorCode.PRODUCER_FENCED and header.api_version < PRODUCER_FENCED_FROM:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"ThrottleTimeMs": 0, "ErrorCode": error}
