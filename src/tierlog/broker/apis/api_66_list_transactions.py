"""ListTransactions (66), v0-1 (KIP-664, KIP-994): the transactions this broker coordinates,
filtered by state names (unknown names come back in UnknownStateFilters), producer ids and (v1)
how long they have run (DurationFilter ms, -1: any).  COORDINATOR_LOAD_IN_PROGRESS while a
``__transaction_state`` partition it leads is still loading.  Only ids the principal may DESCRIBE
are listed (Kafka).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader
from tierlog.txn import TransactionState

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.list_transactions import (
        ListTransactionsRequest,
        ListTransactionsResponse,
        ListTransactionsTransactionState,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LIST_TRANSACTIONS, 0, 1


def handle(broker: HandlerContext, header: RequestHeader, request: ListTransactionsRequest) -> ListTransactionsResponse:
    names = request["StateFilters"]
    unknown = [n for n in names if TransactionState.from_kafka_name(n) is None]
    states = {TransactionState.from_kafka_name(n) for n in names} - {None}
    pids = set(request["ProducerIdFilters"])
    duration = request.get("DurationFilter", -1)
    txns, loading = broker.transactions.transactions()
    now = broker.clock_ms()
    listed: list[ListTransactionsTransactionState] = [{"TransactionalId": m.transactional_id, "ProducerId": m.producer_id,
               "TransactionState": m.state.kafka_name} for m in txns
              if (not names or m.state in states) and (not pids or m.producer_id in pids)
              and (duration < 0 or (m.start_timestamp_ms >= 0 and now - m.start_timestamp_ms > duration))
              and authz.transactional_id(broker, header, authz.Op.DESCRIBE, m.transactional_id)]
    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "UnknownStateFilters": unknown,
            "TransactionStates": sorted(listed, key=lambda t: t["TransactionalId"])}
