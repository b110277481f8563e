"""KIP-890 verifications grouped per coordinator node (Kafka's AddPartitionsToTxnManager): one
AddPartitionsToTxn in flight to a node, the verifications of the Produces that arrive meanwhile
all in the next one; each Produce gets its own partitions' answers; the same id's producer twice
is one transaction of the request, another producer of that id waits for the next request."""
import asyncio
from types import SimpleNamespace

from gated_peers import GatedPeers, GatedRoute

from tierlog.broker.transaction_coordinator import TXN_TOPIC
from tierlog.broker.txn_verification import (
    TXN_VERIFICATIONS_PER_REQUEST_MAX,
    TxnVerifier,
)
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records.builder import build_batch
from tierlog.records.record import Record

COORDINATOR = 2
PRODUCE_V9, PRODUCE_V12 = 9, 12


class Peers(GatedPeers):
    """The coordinator node's AddPartitionsToTxn, answered once the test releases it (``gate``):
    TRANSACTION_ABORTABLE for a partition in ``outside``, NONE for the others."""

    def __init__(self):
        super().__init__(COORDINATOR, ApiKey.ADD_PARTITIONS_TO_TXN, self._answer)
        self.outside: set[tuple[str, str, int]] = set()     # (transactional id, topic, partition)

    @property
    def sent(self) -> list[tuple[int, list[dict]]]:
        return [(version, body["Transactions"]) for version, body in self.requests]

    def _answer(self, body: dict) -> dict:
        return {"ErrorCode": 0, "ResultsByTransaction": [
            {"TransactionalId": t["TransactionalId"], "TopicResults": [
                {"Name": topic["Name"], "ResultsByPartition": [
                    {"PartitionIndex": i,
                     "PartitionErrorCode": ErrorCode.TRANSACTION_ABORTABLE
                     if (t["TransactionalId"], topic["Name"], i) in self.outside else ErrorCode.NONE}
                    for i in topic["Partitions"]]} for topic in t["Topics"]]}
            for t in body["Transactions"]]}


class Replicas:
    """Every partition led here, no producer with an open transaction yet."""

    def get(self, topic, index):
        return SimpleNamespace(is_leader=True, open_transaction_epoch=lambda producer_id: -1)


def verifier() -> tuple[TxnVerifier, Peers]:
    image = SimpleNamespace(topics={TXN_TOPIC: SimpleNamespace(partitions=[SimpleNamespace(leader=COORDINATOR)])},
                            brokers={COORDINATOR: object()})
    transactions = SimpleNamespace(partition_for=lambda tid: 0)
    peers = Peers()
    return TxnVerifier(1, lambda: image, Replicas(), transactions, GatedRoute(peers)), peers


def produce(tid: str, pid: int, epoch: int, partitions: list[int]) -> tuple[str, list[SimpleNamespace]]:
    """A Produce's transactional id and its partitions as the handler types them."""
    batch = bytearray(build_batch([Record(0, 0, None, b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                                  transactional=True))
    return tid, [SimpleNamespace(topic="t", partition=i, records=batch) for i in partitions]


def verify(v: TxnVerifier, produced: tuple[str, list], version: int = PRODUCE_V9) -> asyncio.Task:
    return asyncio.ensure_future(v.verify(*produced, version))


async def settle():
    for _ in range(5):
        await asyncio.sleep(0)


def named(transactions: list[dict]) -> list[tuple[str, int, int, list[int]]]:
    return [(t["TransactionalId"], t["ProducerId"], t["ProducerEpoch"],
             sorted(i for topic in t["Topics"] for i in topic["Partitions"])) for t in transactions]


def test_verifications_queued_while_a_request_is_out_go_in_the_next_one():
    async def run():
        v, peers = verifier()
        first = verify(v, produce("a", 10, 0, [0]))
        await settle()
        later = [verify(v, produce(tid, pid, 0, [1, 2])) for tid, pid in (("b", 11), ("c", 12))]
        await settle()
        assert [named(r) for _, r in peers.sent] == [[("a", 10, 0, [0])]]
        peers.outside.add(("c", "t", 2))        # not in c's transaction: that batch is refused
        peers.gate.set()
        assert await asyncio.gather(first, *later) == [{}, {}, {("t", 2): ErrorCode.INVALID_TXN_STATE}]
        assert [named(r) for _, r in peers.sent] == [[("a", 10, 0, [0])],
                                                         [("b", 11, 0, [1, 2]), ("c", 12, 0, [1, 2])]]
        assert {version for version, _ in peers.sent} == {4}
        assert all(t["VerifyOnly"] for _, r in peers.sent for t in r)
        v.close()
    asyncio.run(run())


def test_one_producer_twice_is_one_transaction_and_a_newer_epoch_waits_for_the_next_request():
    async def run():
        v, peers = verifier()
        first = verify(v, produce("x", 1, 0, [9]))
        await settle()
        same = [verify(v, produce("a", 10, 0, [0, 1])), verify(v, produce("a", 10, 0, [1, 2]))]
        newer = verify(v, produce("a", 10, 1, [3]))
        await settle()
        peers.outside.add(("a", "t", 2))
        peers.gate.set()
        answers = await asyncio.gather(first, *same, newer, return_exceptions=True)
        assert answers == [{}, {}, {("t", 2): ErrorCode.INVALID_TXN_STATE}, {}]
        assert [named(r) for _, r in peers.sent] == [[("x", 1, 0, [9])], [("a", 10, 0, [0, 1, 2])],
                                                         [("a", 10, 1, [3])]]
        v.close()
    asyncio.run(run())


def test_a_tv2_add_and_a_verification_share_a_request_each_in_its_form():
    async def run():
        v, peers = verifier()
        first = verify(v, produce("x", 1, 0, [9]))
        await settle()
        add = verify(v, produce("a", 10, 0, [0]), PRODUCE_V12)
        check = verify(v, produce("b", 11, 0, [0]))
        await settle()
        peers.gate.set()
        assert await asyncio.gather(first, add, check) == [{}, {}, {}]
        version, transactions = peers.sent[1]
        assert version == 5
        assert [(t["TransactionalId"], t["VerifyOnly"]) for t in transactions] == [("a", False), ("b", True)]
        v.close()
    asyncio.run(run())


def test_an_unreachable_coordinator_is_a_retriable_error_for_every_produce_in_the_request():
    async def run():
        v, peers = verifier()
        peers.down = True
        peers.gate.set()
        answers = await asyncio.gather(verify(v, produce("a", 10, 0, [0, 1])), verify(v, produce("b", 11, 0, [0])))
        assert answers == [dict.fromkeys([("t", 0), ("t", 1)], ErrorCode.NOT_ENOUGH_REPLICAS),
                           {("t", 0): ErrorCode.NOT_ENOUGH_REPLICAS}]
        v.close()
    asyncio.run(run())


def test_one_request_carries_at_most_the_named_limit():
    async def run():
        v, peers = verifier()
        first = verify(v, produce("x", 1, 0, [0]))
        await settle()
        rest = [verify(v, produce(f"id{i}", 100 + i, 0, [0])) for i in range(TXN_VERIFICATIONS_PER_REQUEST_MAX + 2)]
        await settle()
        peers.gate.set()
        await asyncio.gather(first, *rest)
        assert [len(r) for _, r in peers.sent] == [1, TXN_VERIFICATIONS_PER_REQUEST_MAX, 2]
        v.close()
    asyncio.run(run())
