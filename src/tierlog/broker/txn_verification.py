"""KIP-890 part 1 at the partition leader: before a producer's first transactional batch on a
partition (no open transaction of that producer id there yet), the leader asks the
transactional id's coordinator whether the partition is in the producer's ongoing
transaction (AddPartitionsToTxn v4, VerifyOnly), so that a late batch of a transaction that
already ended cannot open a "hanging" transaction that holds the last stable offset back.

The coordinator is the leader of the id's ``__transaction_state`` partition: this broker's own
transaction coordinator is asked in process, another broker over the inter-broker route, where
the verifications of all producers for one coordinator node go together (Kafka's
``AddPartitionsToTxnManager``): one request in flight per node, the next carrying every
verification queued meanwhile (``net.node_batches``; the same id's verifications of one producer
merge into one transaction of the request).
What the produce answers (Kafka's ``ReplicaManager`` mapping): a partition not in the
transaction INVALID_TXN_STATE up to Produce v10, TRANSACTION_ABORTABLE from v11; a fenced or
unknown producer INVALID_PRODUCER_EPOCH; a coordinator that is moving, loading, busy or
unreachable NOT_ENOUGH_REPLICAS (retriable: the producer tries again).

KIP-890 part 2 (Produce v12, a transaction.version 2 client): the client sends no
AddPartitionsToTxn; the leader adds the partition to the transaction itself at the producer's
first write there (its own coordinator in process, another with AddPartitionsToTxn v5,
VerifyOnly false: Kafka's ``addPartition`` operation).

The Produce handler hands over its typed partitions (``ProducedBatch``: topic, partition, the
records' bytes), not the request.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import NamedTuple, Protocol

from tierlog.net.client import DEFAULT_ROUTE, PeerRoute, PeerUnavailable
from tierlog.net.node_batches import NodeBatches
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records.header import HEADER_SIZE, parse_header

from .transaction_coordinator import TXN_TOPIC

__all__ = ["ProducedBatch", "TxnVerifier"]

log = logging.getLogger(__name__)

VERIFY_VERSION = 4
ADD_VERSION = 5                 # AddPartitionsToTxn of a leader adding a TV2 client's partition
IMPLICIT_ADD_FROM = 12          # Produce v12+: the leader adds the partition (KIP-890 part 2)
ABORTABLE_FROM = 11             # Produce v11+: TRANSACTION_ABORTABLE is answered as such
VERIFY_TIMEOUT_S = 5.0
TXN_VERIFICATIONS_PER_REQUEST_MAX = 100     # produces' verifications in one request to a coordinator; more wait
_FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
                     ErrorCode.INVALID_PRODUCER_ID_MAPPING})


class ProducedBatch(Protocol):
    """One partition's records of a Produce request, as its handler typed them."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def records(self) -> bytearray: ...


class TxnVerifier:
    def __init__(self, node_id: int, image_fn: Callable, replicas, transactions, route: PeerRoute = DEFAULT_ROUTE):
        self.node_id = node_id
        self._image_fn = image_fn
        self._replicas = replicas
        self._transactions = transactions
        self._route = route
        self._peers = route.peers(f"tierlog-txn-verify-{node_id}")
        self._batches: NodeBatches[_Verification, dict[tuple[str, int], int]] = NodeBatches(
            self._send, {}, TXN_VERIFICATIONS_PER_REQUEST_MAX, "txn-verify")

    async def verify(self, transactional_id: str | None, batches: Iterable[ProducedBatch],
                     version: int = VERIFY_VERSION) -> dict[tuple[str, int], int]:
        """The partitions of a Produce (of ``version``) whose transactional batch must be refused,
        with the error; from v12 the partitions are added to the transaction instead."""
        tid = transactional_id
        if not tid:
            return {}
        wanted, producer = self._unverified(batches)
        if not wanted:
            return {}
        errors = await self._ask(tid, *producer, wanted, version >= IMPLICIT_ADD_FROM)
        answered = {p: errors.get(p, ErrorCode.COORDINATOR_NOT_AVAILABLE) for p in wanted}
        return {p: _produce_error(code, version) for p, code in answered.items() if code != ErrorCode.NONE}

    def _unverified(self, batches: Iterable[ProducedBatch]) -> tuple[list[tuple[str, int]], tuple[int, int]]:
        """Partitions led here whose batch is transactional and whose producer has no open
        transaction there yet (its first write), and the (producer id, epoch)."""
        wanted, producer = [], (-1, -1)
        for b in batches:
            records = b.records
            if not records or len(records) < HEADER_SIZE:
                continue
            h = parse_header(records, 0)
            part = self._replicas.get(b.topic, b.partition)
            if not h.is_transactional or h.producer_id < 0 or part is None or not part.is_leader:
                continue
            if part.open_transaction_epoch(h.producer_id) == h.producer_epoch:
                continue
            wanted.append((b.topic, b.partition))
            producer = (h.producer_id, h.producer_epoch)
        return wanted, producer

    async def _ask(self, tid: str, producer_id: int, epoch: int, wanted: list,
                   add: bool) -> dict[tuple[str, int], int]:
        """Each wanted partition's error from the id's coordinator (a partition left out: unanswered)."""
        leader = self._coordinator(tid)
        if leader == self.node_id and add:
            return dict.fromkeys(wanted, await self._transactions.add_partitions(tid, producer_id, epoch,
                                                                                 frozenset(wanted)))
        if leader == self.node_id:
            return self._transactions.verify_partitions(tid, producer_id, epoch, wanted)
        if leader < 0:
            return {}
        return await self._batches.submit(leader, _Verification(tid, producer_id, epoch, add, tuple(wanted)))

    async def _send(self, node: int, items: list[_Verification]) -> list[dict[tuple[str, int], int]]:
        """The items as few AddPartitionsToTxn as a transactional id appearing once per request
        allows (usually one): per item, its partitions' errors."""
        answers: list[dict[tuple[str, int], int]] = [{} for _ in items]
        for by_id in _requests(items):
            errors = await self._request(node, [[items[i] for i in ids] for ids in by_id.values()])
            for ids in by_id.values():
                for i in ids:
                    answers[i] = {p: errors.get((items[i].transactional_id, p), ErrorCode.COORDINATOR_NOT_AVAILABLE)
                                  for p in items[i].partitions}
        return answers

    async def _request(self, node: int, groups: list[list[_Verification]]) -> dict[tuple[str, tuple[str, int]], int]:
        """One AddPartitionsToTxn v4/v5 with a transaction per group (one id, one producer):
        (transactional id, partition) -> error."""
        transactions = [_transaction(group) for group in groups]
        version = ADD_VERSION if any(group[0].add for group in groups) else VERIFY_VERSION
        try:
            broker = self._image_fn().brokers.get(node)
            address = self._route.address(broker) if broker is not None else None
            if address is None:
                raise PeerUnavailable(f"no address for the coordinator node {node}")
            self._peers.set_address(node, *address)
            resp = await self._peers.request(node, ApiKey.ADD_PARTITIONS_TO_TXN, {"Transactions": transactions},
                                             VERIFY_TIMEOUT_S, version)
        except (PeerUnavailable, TimeoutError, OSError) as e:
            log.info("cannot verify %d transactions at node %d: %s", len(transactions), node, e)
            return {}
        if resp["ErrorCode"]:
            return {(t["TransactionalId"], (topic["Name"], index)): resp["ErrorCode"]
                    for t in transactions for topic in t["Topics"] for index in topic["Partitions"]}
        return {(result["TransactionalId"], (t["Name"], r["PartitionIndex"])): r["PartitionErrorCode"]
                for result in resp["ResultsByTransaction"] for t in result["TopicResults"]
                for r in t["ResultsByPartition"]}

    def _coordinator(self, tid: str) -> int:
        topic = self._image_fn().topics.get(TXN_TOPIC)
        index = self._transactions.partition_for(tid)
        if topic is None or index >= len(topic.partitions):
            return -1
        return topic.partitions[index].leader

    def close(self) -> None:
        self._batches.close()
        self._peers.close()


class _Verification(NamedTuple):
    """A Produce's partitions to verify (or, ``add``, to add) in one producer's transaction."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    add: bool
    partitions: tuple[tuple[str, int], ...]


def _requests(items: list[_Verification]) -> list[dict[str, list[int]]]:
    """The items' positions, per request and transactional id: a request names an id once, so
    items of one id and producer (and form) go together, and another producer of the same id,
    a newer epoch say, waits for the next request."""
    out: list[dict[str, list[int]]] = []
    for i, item in enumerate(items):
        for by_id in out:
            same = by_id.get(item.transactional_id)
            if same is None or _producer(items[same[0]]) == _producer(item):
                by_id.setdefault(item.transactional_id, []).append(i)
                break
        else:
            out.append({item.transactional_id: [i]})
    return out


def _producer(item: _Verification) -> tuple[int, int, bool]:
    return item.producer_id, item.producer_epoch, item.add


def _transaction(group: list[_Verification]) -> dict:
    """One AddPartitionsToTxn transaction of a group's partitions, each named once."""
    first, by_topic = group[0], dict[str, list[int]]()
    for item in group:
        for topic, index in item.partitions:
            indexes = by_topic.setdefault(topic, [])
            if index not in indexes:
                indexes.append(index)
    return {"TransactionalId": first.transactional_id, "ProducerId": first.producer_id,
            "ProducerEpoch": first.producer_epoch, "VerifyOnly": not first.add,
            "Topics": [{"Name": n, "Partitions": ids} for n, ids in by_topic.items()]}


def _produce_error(code: int, version: int) -> int:
    if code == ErrorCode.TRANSACTION_ABORTABLE:
        return code if version >= ABORTABLE_FROM else ErrorCode.INVALID_TXN_STATE    # 48 for older clients
    if code in _FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return ErrorCode.NOT_ENOUGH_REPLICAS             # the coordinator moving, loading or busy: retriable
