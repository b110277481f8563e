"""The transaction coordinator's shell with its log and marker sender faked: what it writes to
``__transaction_state`` for InitProducerId / AddPartitionsToTxn / EndTxn, the markers it sends,
the fence of an Ongoing transaction, the abort of one past its timeout and the expiry of an idle
transactional id."""
import asyncio
from types import SimpleNamespace

from tierlog.broker.coordinator_runtime import Hosted
from tierlog.broker.partition import AppendOutcome
from tierlog.broker.transaction_coordinator import TXN_TOPIC, TransactionCoordinator
from tierlog.protocol.errors import ErrorCode
from tierlog.records import decode_batches
from tierlog.txn import (
    TV_2,
    TransactionState,
    decode_key,
    decode_value,
)

S = TransactionState
CONFIG = {"transaction.state.log.num.partitions": 1, "transaction.state.log.replication.factor": 1,
          "transaction.state.log.min.isr": 1, "transaction.state.log.segment.bytes": 1 << 20,
          "transaction.max.timeout.ms": 60000, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 3600000,
          "transaction.remove.expired.transaction.cleanup.interval.ms": 3600000,
          "transactional.id.expiration.ms": 10000, "request.timeout.ms": 1000,
          "add.partitions.to.txn.retry.backoff.max.ms": 50}


class Config(dict):
    node_id = 1


class Part:
    topic, index, leader_epoch = TXN_TOPIC, 0, 7
    config = SimpleNamespace(max_message_bytes=1 << 20)

    def leads(self, epoch):
        return epoch == self.leader_epoch


class Replicas:
    """Appends land at once (acks=all answered with no wait); the records are kept, and the states
    of each batch.  ``refuse`` appends are refused first (NOT_ENOUGH_REPLICAS)."""

    def __init__(self):
        self.written = []
        self.batches = []
        self.refuse = 0

    def append_records(self, part, records, origin, acks, timeout_ms):
        if self.refuse:
            self.refuse -= 1
            return AppendOutcome(ErrorCode.NOT_ENOUGH_REPLICAS), None
        for _h, recs in decode_batches(bytes(records)):
            values = [(decode_key(r.key), decode_value(r.value)) for r in recs]
            self.written += values
            self.batches.append([v.state if v is not None else None for _k, v in values])
        return AppendOutcome(ErrorCode.NONE, end_offset=len(self.written), appended=True), None


class Markers:
    def __init__(self):
        self.gate = None            # an asyncio.Event: markers are written once it is set
        self.sent = []
        self.versions = []          # each marker's TransactionVersion (WriteTxnMarkers v2, KIP-1228)

    async def write(self, pid, epoch, commit, coordinator_epoch, partitions, still_valid, transaction_version=0):
        self.sent.append((pid, epoch, commit, coordinator_epoch, sorted(partitions)))
        self.versions.append(transaction_version)
        if self.gate is not None:
            await self.gate.wait()
        return True

    def close(self):
        pass


async def _pid():
    return 1000


def coordinator(now, markers_hold_max_ms=50, **settings):
    replicas, markers = Replicas(), Markers()
    c = TransactionCoordinator(Config({**CONFIG, **settings}), replicas, _pid, markers, lambda: now[0],
                               markers_hold_max_ms=markers_hold_max_ms)
    part = Part()
    c.runtime._hosted[0] = Hosted(part, part.leader_epoch, None, {})      # loaded, with no transactional id
    return c, replicas, markers


async def settle():
    for _ in range(20):
        await asyncio.sleep(0)


async def add_behind_the_markers(c, markers):
    """A committed transaction whose markers wait for ``markers.gate``, and the next transaction's
    AddPartitionsToTxn, held meanwhile."""
    markers.gate = asyncio.Event()
    await c.init_producer_id("tx", 5000, -1, -1)
    await c.add_partitions("tx", 1000, 0, frozenset({("t", 0)}))
    await c.end_txn("tx", 1000, 0, True)
    held = asyncio.ensure_future(c.add_partitions("tx", 1000, 0, frozenset({("t", 1)})))
    await settle()
    assert not held.done() and c.describe("tx")[0].state is S.PREPARE_COMMIT
    return held


def test_commit_writes_prepare_then_markers_then_complete():
    async def run():
        now = [1000]
        c, replicas, markers = coordinator(now)
        assert await c.init_producer_id("tx", 5000, -1, -1) == (ErrorCode.NONE, 1000, 0)
        assert await c.add_partitions("tx", 1000, 0, frozenset({("t", 0), ("t", 1)})) == ErrorCode.NONE
        assert await c.add_partitions("tx", 1000, 1, frozenset({("t", 2)})) == ErrorCode.PRODUCER_FENCED
        assert await c.end_txn("tx", 1000, 0, True) == (ErrorCode.NONE, 1000, 0)
        await settle()
        assert markers.sent == [(1000, 0, True, 7, [("t", 0), ("t", 1)])] and markers.versions == [0]
        assert [v.state for _k, v in replicas.written] == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
        assert c.describe("tx")[0].state is S.COMPLETE_COMMIT
        await c.close()
    asyncio.run(run())


def test_tv2_ends_bump_the_epoch_answer_it_and_write_the_markers_with_it():
    """KIP-890 part 2 (EndTxn v5): every end bumps the epoch, a retry of an end answers the same."""
    async def run():
        now = [1000]
        c, replicas, markers = coordinator(now)
        await c.init_producer_id("tx", 5000, -1, -1)
        await c.add_partitions("tx", 1000, 0, frozenset({("t", 0)}))
        assert await c.end_txn("tx", 1000, 0, True, TV_2) == (ErrorCode.NONE, 1000, 1)
        await settle()
        assert markers.sent == [(1000, 1, True, 7, [("t", 0)])]
        assert await c.end_txn("tx", 1000, 0, True, TV_2) == (ErrorCode.NONE, 1000, 1)     # a retry
        assert await c.add_partitions("tx", 1000, 1, frozenset({("t", 1)})) == ErrorCode.NONE
        assert await c.end_txn("tx", 1000, 1, False, TV_2) == (ErrorCode.NONE, 1000, 2)
        await settle()
        assert markers.sent[1] == (1000, 2, False, 7, [("t", 1)])
        assert markers.versions == [TV_2, TV_2]       # the leaders check these bumped epochs strictly
        prepared = [v for _k, v in replicas.written if v.state is S.PREPARE_COMMIT]
        assert prepared[0].producer_epoch == 1 and prepared[0].client_transaction_version == TV_2
        await c.close()
    asyncio.run(run())


def test_a_new_producer_fences_and_aborts_the_ongoing_transaction():
    async def run():
        now = [1000]
        c, _replicas, markers = coordinator(now)
        await c.init_producer_id("tx", 5000, -1, -1)
        await c.add_partitions("tx", 1000, 0, frozenset({("t", 0)}))
        assert (await c.init_producer_id("tx", 5000, -1, -1))[0] == ErrorCode.CONCURRENT_TRANSACTIONS
        await settle()
        assert markers.sent == [(1000, 1, False, 7, [("t", 0)])]       # aborted at the fenced epoch
        assert await c.init_producer_id("tx", 5000, -1, -1) == (ErrorCode.NONE, 1000, 2)
        assert await c.end_txn("tx", 1000, 0, True) == (ErrorCode.PRODUCER_FENCED, -1, -1)
        await c.close()
    asyncio.run(run())


def test_timed_out_transactions_are_aborted_and_idle_ids_expire():
    async def run():
        now = [1000]
        c, replicas, markers = coordinator(now)
        await c.init_producer_id("tx", 5000, -1, -1)
        await c.add_partitions("tx", 1000, 0, frozenset({("t", 0)}))
        c.abort_timed_out(5000)              # not yet past its 5 s timeout
        await settle()
        assert markers.sent == []
        now[0] = 6001
        c.abort_timed_out(6001)
        await settle()
        assert markers.sent == [(1000, 1, False, 7, [("t", 0)])]
        assert c.describe("tx")[0].state is S.COMPLETE_ABORT
        c.expire_transactional_ids(6001 + 9999)
        await settle()
        assert c.describe("tx")[0] is not None
        c.expire_transactional_ids(6001 + 10000)
        await settle()
        assert c.describe("tx") == (None, ErrorCode.NONE) and replicas.written[-1] == ("tx", None)
        await c.close()
    asyncio.run(run())


def test_add_partitions_waits_for_the_previous_transaction_to_complete():
    """KIP-890 part 2's server-side retry: the next transaction's AddPartitionsToTxn, sent while the
    previous one's markers are written, is held and then served instead of CONCURRENT_TRANSACTIONS;
    once the markers' hold (MARKERS_HOLD_MAX_MS) passes without completion it is answered."""
    async def run():
        c, replicas, markers = coordinator([1000])
        held = await add_behind_the_markers(c, markers)
        markers.gate.set()
        assert await held == ErrorCode.NONE
        assert replicas.batches[-1] == [S.COMPLETE_COMMIT, S.ONGOING]       # one write: Complete*, then Ongoing
        assert c.describe("tx")[0].partitions == {("t", 1)}
        markers.gate = asyncio.Event()          # never set: the markers of this one stay unwritten
        await c.end_txn("tx", 1000, 0, True)
        assert await c.add_partitions("tx", 1000, 0, frozenset({("t", 2)})) == ErrorCode.CONCURRENT_TRANSACTIONS
        await c.close()
    asyncio.run(run())


def test_a_refused_complete_write_leaves_the_held_add_to_the_next_one():
    """The Complete* write that carries a held add's Ongoing is refused: neither is applied, the add
    waits on and is decided with the Complete* write that follows."""
    async def run():
        c, replicas, markers = coordinator([1000], markers_hold_max_ms=1000)
        held = await add_behind_the_markers(c, markers)
        replicas.refuse = 1
        markers.gate.set()
        assert await held == ErrorCode.NONE
        assert replicas.refuse == 0             # refused once, then written again with the add in it
        assert replicas.batches[-1] == [S.COMPLETE_COMMIT, S.ONGOING] and c.describe("tx")[0].partitions == {("t", 1)}
        await c.close()
    asyncio.run(run())
