"""KIP-890 part 1 at the partition leader: before a producer's first transactional batch on a
partition (no open transaction of that producer id there yet), the leader asks the
transactional id's coordinator whether the partition is in the producer's ongoing
transaction (AddPartitionsToTxn v4, VerifyOnly), so that a late batch of a transaction that
already ended cannot open a "hanging" transaction that holds the last stable offset back.

The coordinator is the leader of the id's ``__transaction_state`` partition: this broker's own
transaction coordinator is asked in process, another broker over the inter-broker route.
What the produce answers (Kafka's ``ReplicaManager`` mapping): a partition not in the
transaction INVALID_TXN_STATE up to Produce v10, TRANSACTION_ABORTABLE from v11; a fenced or
unknown producer INVALID_PRODUCER_EPOCH; a coordinator that is moving, loading, busy or
unreachable NOT_ENOUGH_REPLICAS (retriable: the producer tries again).

KIP-890 part 2 (Produce v12, a transaction.version 2 client): the client sends no
AddPartitionsToTxn; the leader adds the partition to the transaction itself at the producer's
first write there (its own coordinator in process, another with AddPartitionsToTxn v5,
VerifyOnly false: Kafka's ``addPartition`` operation).
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from tierlog.net.client import DEFAULT_ROUTE, PeerRoute, PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records.header import HEADER_SIZE, parse_header

from .transaction_coordinator import TXN_TOPIC

__all__ = ["TxnVerifier"]

log = logging.getLogger(__name__)

VERIFY_VERSION = 4
ADD_VERSION = 5                 # AddPartitionsToTxn of a leader adding a TV2 client's partition
IMPLICIT_ADD_FROM = 12          # Produce v12+: the leader adds the partition (KIP-890 part 2)
ABORTABLE_FROM = 11             # Produce v11+: TRANSACTION_ABORTABLE is answered as such
VERIFY_TIMEOUT_S = 5.0
_FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
                     ErrorCode.INVALID_PRODUCER_ID_MAPPING})


class TxnVerifier:
    def __init__(self, node_id: int, image_fn: Callable, replicas, transactions, route: PeerRoute = DEFAULT_ROUTE):
        self.node_id = node_id
        self._image_fn = image_fn
        self._replicas = replicas
        self._transactions = transactions
        self._route = route
        self._peers = route.peers(f"tierlog-txn-verify-{node_id}")

    async def verify(self, request: dict, version: int = VERIFY_VERSION) -> dict[tuple[str, int], int]:
        """The partitions of a Produce (of ``version``) whose transactional batch must be refused,
        with the error; from v12 the partitions are added to the transaction instead."""
        tid = request.get("TransactionalId")
        if not tid:
            return {}
        wanted, producer = self._unverified(request)
        if not wanted:
            return {}
        errors = await self._ask(tid, *producer, wanted, version >= IMPLICIT_ADD_FROM)
        return {p: _produce_error(errors.get(p, ErrorCode.NONE), version) for p in wanted
                if errors.get(p, ErrorCode.NONE) != ErrorCode.NONE}

    def _unverified(self, request: dict) -> tuple[list[tuple[str, int]], tuple[int, int]]:
        """Partitions led here whose batch is transactional and whose producer has no open
        transaction there yet (its first write), and the (producer id, epoch)."""
        wanted, producer = [], (-1, -1)
        for t in request["TopicData"]:
            for p in t["PartitionData"]:
                records = p["Records"]
                if not records or len(records) < HEADER_SIZE:
                    continue
                h = parse_header(records, 0)
                part = self._replicas.get(t["Name"], p["Index"])
                if not h.is_transactional or h.producer_id < 0 or part is None or part.leader_state is None:
                    continue
                if part.open_transaction_epoch(h.producer_id) == h.producer_epoch:
                    continue
                wanted.append((t["Name"], p["Index"]))
                producer = (h.producer_id, h.producer_epoch)
        return wanted, producer

    async def _ask(self, tid: str, producer_id: int, epoch: int, wanted: list,
                   add: bool) -> dict[tuple[str, int], int]:
        leader = self._coordinator(tid)
        if leader == self.node_id and add:
            return dict.fromkeys(wanted, await self._transactions.add_partitions(tid, producer_id, epoch,
                                                                                 frozenset(wanted)))
        if leader == self.node_id:
            return self._transactions.verify_partitions(tid, producer_id, epoch, wanted)
        by_topic: dict[str, list[int]] = {}
        for topic, index in wanted:
            by_topic.setdefault(topic, []).append(index)
        body = {"Transactions": [{"TransactionalId": tid, "ProducerId": producer_id, "ProducerEpoch": epoch,
                                  "VerifyOnly": not add, "Topics": [{"Name": n, "Partitions": ids}
                                                                 for n, ids in by_topic.items()]}]}
        try:
            broker = self._image_fn().brokers.get(leader) if leader >= 0 else None
            address = self._route.address(broker) if broker is not None else None
            if address is None:
                raise PeerUnavailable(f"no coordinator for {tid}")
            self._peers.set_address(leader, *address)
            resp = await self._peers.request(leader, ApiKey.ADD_PARTITIONS_TO_TXN, body, VERIFY_TIMEOUT_S,
                                             ADD_VERSION if add else VERIFY_VERSION)
        except (PeerUnavailable, TimeoutError, OSError) as e:
            log.info("cannot verify the transaction of %s: %s", tid, e)
            return dict.fromkeys(wanted, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if resp["ErrorCode"]:
            return dict.fromkeys(wanted, resp["ErrorCode"])
        return {(t["Name"], r["PartitionIndex"]): r["PartitionErrorCode"]
                for result in resp["ResultsByTransaction"] for t in result["TopicResults"]
                for r in t["ResultsByPartition"]}

    def _coordinator(self, tid: str) -> int:
        topic = self._image_fn().topics.get(TXN_TOPIC)
        index = self._transactions.partition_for(tid)
        if topic is None or index >= len(topic.partitions):
            return -1
        return topic.partitions[index].leader

    def close(self) -> None:
        self._peers.close()


def _produce_error(code: int, version: int) -> int:
    if code == ErrorCode.TRANSACTION_ABORTABLE:
        return code if version >= ABORTABLE_FROM else ErrorCode.INVALID_TXN_STATE    # 48 for older clients
    if code in _FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return ErrorCode.NOT_ENOUGH_REPLICAS             # the coordinator moving, loading or busy: retriable
