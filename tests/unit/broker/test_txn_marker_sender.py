"""The marker sender's group commit (Kafka's TransactionMarkerChannelManager drains its queue per
broker): one WriteTxnMarkers in flight per leader, the markers of the transactions that ended
meanwhile all in the next one; each transaction's ``write`` returns once its own partitions are
written, retries its own failures, and a transaction no longer valid is left out."""
import asyncio
from types import SimpleNamespace

from gated_peers import GatedPeers, GatedRoute

from tierlog.broker.txn_marker_sender import (
    TXN_MARKERS_PER_REQUEST_MAX,
    TxnMarkerSender,
)
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

LEADER = 2


class Peers(GatedPeers):
    """Node 2's WriteTxnMarkers, answered once the test releases each request (``gate``)."""

    def __init__(self):
        super().__init__(LEADER, ApiKey.WRITE_TXN_MARKERS, self._answer)
        self.errors: dict[int, int] = {}      # producer id -> the error of its next answer

    @property
    def sent(self) -> list[list[dict]]:
        assert {version for version, _ in self.requests} <= {2}
        return [body["Markers"] for _, body in self.requests]

    def _answer(self, body: dict) -> dict:
        return {"Markers": [{"ProducerId": m["ProducerId"], "Topics": [
            {"Name": t["Name"], "Partitions": [{"PartitionIndex": i, "ErrorCode": self.errors.pop(m["ProducerId"], 0)}
                                               for i in t["PartitionIndexes"]]} for t in m["Topics"]]}
            for m in body["Markers"]]}


def sender(partitions: int = 2) -> tuple[TxnMarkerSender, Peers]:
    image = SimpleNamespace(topics={"t": SimpleNamespace(partitions=[SimpleNamespace(leader=LEADER)] * partitions)},
                            brokers={LEADER: object()})
    peers = Peers()
    return TxnMarkerSender(1, lambda: image, None, None, None, lambda: 0, 1000, GatedRoute(peers)), peers


def write(s: TxnMarkerSender, pid: int, still_valid=lambda: True) -> asyncio.Task:
    return asyncio.ensure_future(s.write(pid, 0, True, 0, frozenset({("t", 0), ("t", 1)}), still_valid, 2))


async def settle():
    for _ in range(5):
        await asyncio.sleep(0)


def test_markers_queued_while_a_request_is_out_go_in_the_next_one():
    async def run():
        s, peers = sender()
        first = write(s, 10)
        await settle()
        later = [write(s, pid) for pid in (11, 12, 13)]     # end while the first request is out
        await settle()
        assert [[m["ProducerId"] for m in r] for r in peers.sent] == [[10]]
        peers.gate.set()
        assert await asyncio.gather(first, *later) == [True] * 4
        assert [[m["ProducerId"] for m in r] for r in peers.sent] == [[10], [11, 12, 13]]
        m = peers.sent[1][0]
        assert {k: v for k, v in m.items() if k != "Topics"} == {
            "ProducerId": 11, "ProducerEpoch": 0, "TransactionResult": True, "CoordinatorEpoch": 0,
            "TransactionVersion": 2}
        assert [(t["Name"], sorted(t["PartitionIndexes"])) for t in m["Topics"]] == [("t", [0, 1])]
        s.close()
    asyncio.run(run())


def test_a_failed_marker_is_retried_for_its_transaction_only():
    async def run():
        s, peers = sender()
        peers.gate.set()
        peers.errors[21] = ErrorCode.NOT_ENOUGH_REPLICAS
        done = await asyncio.gather(write(s, 20), write(s, 21))
        assert done == [True, True]
        sent = [sorted(m["ProducerId"] for m in r) for r in peers.sent]
        assert sent == [[20, 21], [21]]                 # the retry after the backoff: producer 21 alone
        s.close()
    asyncio.run(run())


def test_a_transaction_no_longer_coordinated_here_is_left_out_of_the_queue():
    async def run():
        s, peers = sender()
        first = write(s, 30)
        await settle()
        valid = [True]
        gone = write(s, 31, lambda: valid[0])
        kept = write(s, 32)
        await settle()
        valid[0] = False                                # coordinator moved while 31 waited in the queue
        peers.gate.set()
        assert await asyncio.gather(first, gone, kept) == [True, False, True]
        assert [[m["ProducerId"] for m in r] for r in peers.sent] == [[30], [32]]
        s.close()
    asyncio.run(run())


def test_one_request_carries_at_most_the_named_limit():
    async def run():
        s, peers = sender()
        first = write(s, 0)
        await settle()
        rest = [write(s, pid) for pid in range(1, TXN_MARKERS_PER_REQUEST_MAX + 3)]
        await settle()
        peers.gate.set()
        assert all(await asyncio.gather(first, *rest))
        assert [len(r) for r in peers.sent] == [1, TXN_MARKERS_PER_REQUEST_MAX, 2]
        s.close()
    asyncio.run(run())
