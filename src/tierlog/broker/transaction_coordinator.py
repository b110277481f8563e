"""The transaction coordinator's asyncio shell: the transactional ids of each
``__transaction_state`` partition this broker leads, driven by the sans-IO rules of
``tierlog.txn`` (KIP-98, KIP-360; Kafka's ``TransactionCoordinator`` and
``TransactionStateManager``).

- Hosting, loading, the lease, writes and chores are the coordinator runtime's
  (``coordinator_runtime``, as for the group coordinator): becoming leader of a partition loads
  its transactional ids from its log (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS, other
  partitions NOT_COORDINATOR) and then resumes every transaction it finds in PrepareCommit /
  PrepareAbort (its markers are sent again, then Complete* written).  The partition's leader
  epoch it was loaded at is the coordinator epoch the markers carry.
- Requests: the rules decide an error or a ``TxnTransit``; a transit's record goes in the
  runtime's batch of the round (the transitions of several transactional ids of a partition in
  one acks=all append) and is applied once committed (``complete_transition``), else reverted
  (``revert_pending``) and the error answered.
  While a transit is pending the rules answer CONCURRENT_TRANSACTIONS.
- EndTxn is answered once Prepare* is committed; the markers (``TxnMarkerSender``) then go to
  every partition of the transaction and, once all are written, Complete* is appended (retried
  while this broker leads the partition; a new leader resumes from Prepare*).
- AddPartitionsToTxn / AddOffsetsToTxn that find the id's previous transaction still completing
  are held; only past the hold is CONCURRENT_TRANSACTIONS answered.  Kafka's brokers retry that
  case on the server side (KIP-890 part 2) so the client need not back off (librdkafka's retry of a
  TV1 client costs it a round trip and its backoff each time).  Held while the markers are written
  (Prepare*), for at most ``MARKERS_HOLD_MAX_MS`` (capped by request.timeout.ms), they are decided
  on the metadata as Complete* will leave it and their Ongoing record is appended in the same
  batch as Complete* (``_write_complete``): a TV1 producer's next transaction starts with one
  replicated write instead of two in a row.  Held while another transit is written, for at most
  ``add.partitions.to.txn.retry.backoff.max.ms``, they are decided again once it ends.
- Fencing: InitProducerId on an Ongoing transaction fences its producer (epoch + 1,
  PrepareEpochFence, never written on its own) and aborts it with that epoch, answering
  CONCURRENT_TRANSACTIONS (the client retries and gets the next epoch); the old producer's
  requests then get PRODUCER_FENCED and its batches INVALID_PRODUCER_EPOCH at the leaders.
- Timeouts: every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` an Ongoing
  transaction older than its timeout is fenced and aborted the same way.  Every
  ``transaction.remove.expired.transaction.cleanup.interval.ms`` a transactional id whose last
  transaction ended (Empty, Complete*) more than ``transactional.id.expiration.ms`` ago expires:
  its tombstone is written (Dead) and it is forgotten.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from tierlog.group import coordinator_partition
from tierlog.protocol.errors import ErrorCode
from tierlog.txn import (
    NO_PRODUCER_ID,
    TV_2,
    TransactionMetadata,
    TransactionState,
    TxnTransit,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    log_value,
    metadata_from_log,
)
from tierlog.txn import requests as rules

from .coordinator_runtime import CoordinatorRuntime, Hosted
from .partition import Partition

__all__ = ["TXN_TOPIC", "TransactionCoordinator"]

log = logging.getLogger(__name__)

TXN_TOPIC = "__transaction_state"
COMPLETE_RETRY_BACKOFF_S = 0.1
# How long an add waits for the previous transaction's markers and Complete* write. The markers of
# a loaded cluster take longer than add.partitions.to.txn.retry.backoff.max.ms (100 ms), and an add
# answered CONCURRENT_TRANSACTIONS before they end only comes back after the client's backoff (at 32
# producers and load 25: 3.8 AddPartitionsToTxn a transaction with a 100 ms hold, 2.0 with this one);
# 5 s stays well inside the clients' request timeouts (librdkafka 60 s, Java 30 s).
MARKERS_HOLD_MAX_MS = 5000
VALUE_VERSION = 0               # transaction.version 0/1 clients: TransactionLogValue v0
TV2_VALUE_VERSION = 1           # a TV2 client's transaction keeps its ClientTransactionVersion (tagged, v1)
CLIENT_TRANSACTION_VERSION = 0
S = TransactionState


class ProducerIdsUnavailable(Exception):
    """No producer id could be had from the controller."""


@dataclass(frozen=True)
class _Held:
    """An add waiting to be decided with its id's Complete* write; ``answer`` gets its error, or
    None: decide it again."""

    add: rules.HeldAdd
    answer: asyncio.Future[int | None]


Txns = dict[str, TransactionMetadata]
_Part = Hosted[Txns]


class _TxnLoader:
    def __init__(self, index: int):
        self.index = index
        self.txns: Txns = {}

    def replay(self, header, records) -> None:
        if not header.is_control:
            _replay(self.txns, self.index, records)

    def finish(self, now_ms: int) -> Txns:
        return self.txns


class TransactionCoordinator:
    def __init__(self, config, replicas, next_producer_id: Callable, markers, clock_ms: Callable[[], int],
                 image_leader: Callable[[str, int], int] = lambda topic, index: -1,
                 markers_hold_max_ms: int = MARKERS_HOLD_MAX_MS):
        self.node_id = config.node_id
        self.num_partitions = config["transaction.state.log.num.partitions"]
        self.replication_factor = config["transaction.state.log.replication.factor"]
        self.min_isr = config["transaction.state.log.min.isr"]
        self.segment_bytes = config["transaction.state.log.segment.bytes"]
        self.max_timeout_ms = config["transaction.max.timeout.ms"]
        self._abort_interval_s = config["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000
        self._expire_interval_ms = config["transaction.remove.expired.transaction.cleanup.interval.ms"]
        self._expiration_ms = config["transactional.id.expiration.ms"]
        self._next_expiry_ms = clock_ms() + self._expire_interval_ms
        self._write_timeout_ms = config["request.timeout.ms"]
        self._add_wait_max_s = min(config["add.partitions.to.txn.retry.backoff.max.ms"], self._write_timeout_ms) / 1000
        self._markers_hold_max_s = min(markers_hold_max_ms, self._write_timeout_ms) / 1000
        self._settled: dict[str, asyncio.Event] = {}     # transactional id -> its next transition's end
        self._held: dict[str, list[_Held]] = {}          # transactional id -> adds waiting for its Complete*
        self._next_producer_id = next_producer_id        # async () -> int
        self._markers = markers                          # TxnMarkerSender
        self._clock_ms = clock_ms
        self.runtime: CoordinatorRuntime[Txns] = CoordinatorRuntime(
            TXN_TOPIC, self, replicas, clock_ms, node_id=self.node_id, write_timeout_ms=self._write_timeout_ms,
            image_leader=image_leader)
        self.should_create_topic = self.runtime.should_create_topic
        self._chores_started = False

    # -- leadership (ReplicaManager's listener) and the runtime's hooks -----------------------------
    def on_leader(self, part: Partition) -> None:
        self.runtime.on_leader(part)
        if part.topic == TXN_TOPIC and not self._chores_started:
            self._chores_started = True
            self.runtime.every(self._abort_interval_s, self._timeouts, "txn-coordinator-timeouts")

    def on_follower(self, part: Partition) -> None:
        self.runtime.on_follower(part)

    def on_stopped(self, part: Partition, topic_deleted: bool) -> None:
        self.runtime.on_stopped(part, topic_deleted)

    def new_local(self) -> None:
        return None

    def loader(self, hosted: _Part) -> _TxnLoader:
        return _TxnLoader(hosted.part.index)

    def loaded(self, hosted: _Part) -> None:
        assert hosted.state is not None, "called once loaded"
        log.info("%s-%d: loaded %d transactional ids", TXN_TOPIC, hosted.part.index, len(hosted.state))
        for meta in hosted.state.values():
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._spawn_complete(hosted, meta)

    def unloaded(self, hosted: _Part) -> None:
        pass            # writes in flight end NOT_COORDINATOR; their callers revert

    @staticmethod
    def written(hosted: _Part, waiters: list[asyncio.Future], error: ErrorCode, end_offset: int | None,
                producer: tuple[int, int] | None) -> None:
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(error)

    # -- finding a transactional id -----------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        """Kafka's ``partitionFor``: abs(Java hashCode) % transaction.state.log.num.partitions."""
        return coordinator_partition(transactional_id, self.num_partitions)

    async def _fresh_producer_id(self, transactional_id: str
                                 ) -> tuple[int, _Part | None, TransactionMetadata | None, int]:
        """A new producer id, then the transaction looked up again (the wait may have moved its
        partition): (error, hosted, its metadata or None, the id)."""
        try:
            fresh = await self._next_producer_id()
        except ProducerIdsUnavailable:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, None, -1
        hosted, error = self.locate(transactional_id)
        if error:
            return error, None, None, -1
        assert hosted is not None and hosted.state is not None, "locate answers NONE for a loaded partition only"
        return ErrorCode.NONE, hosted, hosted.state.get(transactional_id), fresh

    def locate(self, transactional_id: str) -> tuple[_Part | None, int]:
        return self.runtime.locate(self.partition_for(transactional_id))

    def transactions(self) -> tuple[list[TransactionMetadata], bool]:
        """The transactional ids loaded here, and whether a partition is still loading."""
        states, loading = self.runtime.states()
        return [m for txns in states for m in txns.values()], loading

    def describe(self, transactional_id: str) -> tuple[TransactionMetadata | None, int]:
        hosted, error = self.locate(transactional_id)
        if error:
            return None, error
        assert hosted is not None and hosted.state is not None, "locate answers NONE for a loaded partition only"
        return hosted.state.get(transactional_id), ErrorCode.NONE

    # -- requests ------------------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int) -> tuple[int, int, int]:
        """InitProducerId with a transactional id: (error, producer id, epoch)."""
        _trace(transactional_id, "InitProducerId received")
        error = rules.check_init_producer_id(transactional_id, timeout_ms, self.max_timeout_ms)
        if error:
            return error, -1, -1
        hosted, error = self.locate(transactional_id)
        if error:
            return error, -1, -1
        assert hosted is not None and hosted.state is not None, "locate answers NONE for a loaded partition only"
        meta = hosted.state.get(transactional_id)
        fresh = -1
        if meta is None or meta.epoch_exhausted:        # a producer id may be needed: get one first
            error, hosted, meta, fresh = await self._fresh_producer_id(transactional_id)
            if error:
                return error, -1, -1
        assert hosted is not None and hosted.state is not None, "locate answers NONE for a loaded partition only"
        now = self._clock_ms()
        if meta is None:
            meta = hosted.state[transactional_id] = rules.new_transaction_metadata(transactional_id, fresh,
                                                                                   timeout_ms, now)
        expected = rules.ProducerIdAndEpoch(producer_id, producer_epoch) if producer_id >= 0 else None
        decision = rules.init_producer_id(meta, timeout_ms, expected, lambda: _given(fresh), now)
        if decision.error or decision.transit is None:
            return decision.error, -1, -1
        if decision.transit.state is S.PREPARE_EPOCH_FENCE:
            self.runtime.spawn(self._abort_fenced(hosted, meta, decision.transit), name=f"txn-fence-{transactional_id}")
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        error = await self._write(hosted, meta, decision.transit)
        if error:
            return error, -1, -1
        return ErrorCode.NONE, meta.producer_id, meta.producer_epoch

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: frozenset[tuple[str, int]]) -> int:
        """AddPartitionsToTxn (client versions) and AddOffsetsToTxn: one error for all."""
        _trace(transactional_id, "AddPartitionsToTxn received")
        start = asyncio.get_running_loop().time()
        deadline = start + self._add_wait_max_s
        while True:
            hosted, error = self.locate(transactional_id)
            if error:
                return error
            assert hosted is not None and hosted.state is not None, "locate answers NONE for a loaded partition only"
            meta = hosted.state.get(transactional_id)
            decision = rules.add_partitions(meta, producer_id, producer_epoch, partitions, self._clock_ms())
            if decision.error != ErrorCode.CONCURRENT_TRANSACTIONS:
                break
            if _markers_pending(meta):
                _trace(transactional_id, "AddPartitionsToTxn held for the Complete* write")
                hold_until = max(deadline, start + self._markers_hold_max_s)
                joined = await self._join_complete(transactional_id, rules.HeldAdd(producer_id, producer_epoch,
                                                                                   partitions), hold_until)
                if joined is not None:
                    return joined
                if asyncio.get_running_loop().time() < hold_until:
                    continue
                break
            _trace(transactional_id, "AddPartitionsToTxn held: the previous transaction is completing")
            if not await self._settle(transactional_id, deadline):
                break
        if decision.error or decision.transit is None:
            return decision.error
        assert meta is not None, "a transition is decided for a known transaction only"
        return await self._write(hosted, meta, decision.transit)

    async def _settle(self, transactional_id: str, deadline: float) -> bool:
        """Wait for the id's next transition to end; False when none ended before the deadline."""
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return False
        settled = self._settled.setdefault(transactional_id, asyncio.Event())
        try:
            await asyncio.wait_for(settled.wait(), remaining)
        except TimeoutError:
            return False
        return True

    async def _join_complete(self, transactional_id: str, add: rules.HeldAdd, deadline: float) -> int | None:
        """Wait to be decided with the id's Complete* write (``_write_complete``): the add's error, or
        None when it was not (the deadline passed, the write failed or the completion stopped)."""
        loop = asyncio.get_running_loop()
        remaining = deadline - loop.time()
        if remaining <= 0:
            return None
        held = _Held(add, loop.create_future())
        waiting = self._held.setdefault(transactional_id, [])
        waiting.append(held)
        try:
            return await asyncio.wait_for(asyncio.shield(held.answer), remaining)
        except TimeoutError:
            return None
        finally:
            if held in waiting:
                waiting.remove(held)
            if not waiting and self._held.get(transactional_id) is waiting:
                del self._held[transactional_id]

    def _release_held(self, transactional_id: str) -> None:
        """The completion stopped without deciding the adds it held: they decide again."""
        for held in self._held.pop(transactional_id, []):
            if not held.answer.done():
                held.answer.set_result(None)

    def _transition_ended(self, transactional_id: str) -> None:
        settled = self._settled.pop(transactional_id, None)
        if settled is not None:
            settled.set()

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """KIP-890 part 1's verify-only AddPartitionsToTxn: each partition's error."""
        hosted, error = self.locate(transactional_id)
        if error:
            return dict.fromkeys(partitions, error)
        assert hosted is not None and hosted.state is not None, "locate answers NONE for a loaded partition only"
        return rules.verify_partitions(hosted.state.get(transactional_id), producer_id, producer_epoch, partitions)

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                      client_transaction_version: int = CLIENT_TRANSACTION_VERSION) -> tuple[int, int, int]:
        """EndTxn: (error, producer id, epoch) once PrepareCommit / PrepareAbort is committed; the
        markers follow. With ``client_transaction_version`` 2 (EndTxn v5, KIP-890 part 2) the epoch
        is bumped by every end and the answer carries the new one (the next producer id at epoch 0
        when the epoch is exhausted); the markers are written with it."""
        _trace(transactional_id, "EndTxn received")
        hosted, error = self.locate(transactional_id)
        if error:
            return error, -1, -1
        assert hosted is not None and hosted.state is not None, "locate answers NONE for a loaded partition only"
        meta = hosted.state.get(transactional_id)
        fresh = -1
        if client_transaction_version >= TV_2 and meta is not None and meta.epoch_exhausted:
            error, hosted, meta, fresh = await self._fresh_producer_id(transactional_id)
            if error:
                return error, -1, -1
        assert hosted is not None and hosted.state is not None, "locate answers NONE for a loaded partition only"
        decision = rules.end_txn(meta, producer_id, producer_epoch, commit, True, client_transaction_version,
                                 lambda: _given(fresh), self._clock_ms())
        if decision.error or decision.transit is None:
            return decision.error, decision.producer_id, decision.producer_epoch
        assert meta is not None, "a transition is decided for a known transaction only"
        error = await self._write(hosted, meta, decision.transit)
        if error:
            return error, -1, -1
        self._spawn_complete(hosted, meta)
        if meta.next_producer_id != NO_PRODUCER_ID:
            return ErrorCode.NONE, meta.next_producer_id, 0
        return ErrorCode.NONE, meta.producer_id, meta.producer_epoch

    # -- writing and completing ------------------------------------------------------------------
    async def _write(self, hosted: _Part, meta: TransactionMetadata, transit: TxnTransit,
                     then: TxnTransit | None = None) -> int:
        """Append the transit's record (acks=all), and ``then``'s behind it in the same batch
        (prepared on ``meta.projected(transit)``), and apply them once committed."""
        transits = [t for t in (transit, then) if t is not None]
        records: list[tuple[bytes, bytes | None]] = [_record(meta.transactional_id, t) for t in transits]
        _trace(meta.transactional_id, "append %s", "+".join(t.state.name for t in transits))
        error = await self.runtime.write_and_wait(hosted, records)
        if error or not self.runtime.leading(hosted):
            meta.revert_pending()
            self._transition_ended(meta.transactional_id)
            return error or ErrorCode.NOT_COORDINATOR
        meta.complete_transition(transit)
        if then is not None:
            meta.complete_chained(then)
        _trace(meta.transactional_id, "committed %s", "+".join(t.state.name for t in transits))
        self._transition_ended(meta.transactional_id)
        return ErrorCode.NONE

    async def _abort_fenced(self, hosted: _Part, meta: TransactionMetadata, fence: TxnTransit) -> None:
        """The coordinator's abort of a fenced or timed-out transaction (Kafka's endTransaction with
        isFromClient false): it takes the fence's epoch and writes PrepareAbort."""
        decision = rules.end_txn(meta, meta.producer_id, fence.producer_epoch, False, False,
                                 CLIENT_TRANSACTION_VERSION, lambda: _given(-1), self._clock_ms())
        if decision.transit is None:
            if meta.pending_state is S.PREPARE_EPOCH_FENCE:
                meta.revert_pending()
                self._transition_ended(meta.transactional_id)
            log.info("%s: cannot abort the fenced transaction: error %d", meta.transactional_id, decision.error)
            return
        if await self._write(hosted, meta, decision.transit):
            meta.has_failed_epoch_fence = True          # the next fence keeps this epoch
            return
        log.info("%s: aborting the transaction of producer %d, fenced at epoch %d", meta.transactional_id,
                 meta.producer_id, meta.producer_epoch)
        self._spawn_complete(hosted, meta)

    def _spawn_complete(self, hosted: _Part, meta: TransactionMetadata) -> None:
        self.runtime.spawn(self._complete(hosted, meta), name=f"txn-markers-{meta.transactional_id}")

    async def _complete(self, hosted: _Part, meta: TransactionMetadata) -> None:
        """Write the markers of a Prepare* transaction, then its Complete* record."""
        try:
            await self._markers_then_complete(hosted, meta)
        finally:
            self._release_held(meta.transactional_id)

    async def _markers_then_complete(self, hosted: _Part, meta: TransactionMetadata) -> None:
        commit = meta.state is S.PREPARE_COMMIT
        _trace(meta.transactional_id, "markers to %d partitions", len(meta.partitions))
        written = await self._markers.write(meta.producer_id, meta.producer_epoch, commit, hosted.epoch,
                                            frozenset(meta.partitions), lambda: self.runtime.leading(hosted),
                                            meta.client_transaction_version)
        _trace(meta.transactional_id, "markers written" if written else "markers abandoned")
        while written and self.runtime.leading(hosted):
            if meta.pending_transition_in_progress:
                await asyncio.sleep(COMPLETE_RETRY_BACKOFF_S)
                continue
            if not await self._write_complete(hosted, meta):
                return
            await asyncio.sleep(COMPLETE_RETRY_BACKOFF_S)

    async def _write_complete(self, hosted: _Part, meta: TransactionMetadata) -> int:
        """Complete*, and in the same batch the Ongoing of the adds held while the markers were
        written (a TV1 producer's next transaction): one replicated write where Kafka has two."""
        now = self._clock_ms()
        complete = meta.prepare_complete(now)
        held = list(self._held.pop(meta.transactional_id, []))
        errors, ongoing = rules.add_partitions_after(meta.projected(complete), [h.add for h in held], now)
        error = await self._write(hosted, meta, complete, ongoing)
        for h, code in zip(held, errors, strict=True):
            if not h.answer.done():
                h.answer.set_result(None if error else code)
        return error

    # -- time ------------------------------------------------------------------------------------
    def _timeouts(self, now: int) -> None:
        self.abort_timed_out(now)
        if now >= self._next_expiry_ms:
            self._next_expiry_ms = now + self._expire_interval_ms
            self.expire_transactional_ids(now)

    def abort_timed_out(self, now_ms: int) -> None:
        """Fence and abort every Ongoing transaction older than its timeout (Kafka's
        ``abortTimedOutTransactions``)."""
        for hosted in self.runtime.led():
            assert hosted.state is not None, "led() gives loaded partitions"
            for meta in list(hosted.state.values()):
                if meta.state is S.ONGOING and not meta.pending_transition_in_progress \
                        and meta.start_timestamp_ms + meta.timeout_ms < now_ms:
                    fence = meta.prepare_fence_producer_epoch()
                    self.runtime.spawn(self._abort_fenced(hosted, meta, fence),
                                      name=f"txn-timeout-{meta.transactional_id}")

    def expire_transactional_ids(self, now_ms: int) -> None:
        """Kafka's ``removeExpiredTransactionalIds``: ended ids idle past transactional.id.expiration.ms."""
        for hosted in self.runtime.led():
            assert hosted.state is not None, "led() gives loaded partitions"
            for meta in list(hosted.state.values()):
                if meta.state.expiration_allowed and not meta.pending_transition_in_progress \
                        and meta.last_update_timestamp_ms + self._expiration_ms <= now_ms:
                    self.runtime.spawn(self._expire(hosted, meta), name=f"txn-expire-{meta.transactional_id}")

    async def _expire(self, hosted: _Part, meta: TransactionMetadata) -> None:
        meta.prepare_dead()
        error = await self.runtime.write_and_wait(hosted, [(encode_key(meta.transactional_id), None)])
        meta.revert_pending()
        if not error and self.runtime.leading(hosted) and hosted.state is not None \
                and hosted.state.get(meta.transactional_id) is meta:
            meta.state = S.DEAD
            del hosted.state[meta.transactional_id]
            log.info("%s: transactional id expired", meta.transactional_id)
        self._transition_ended(meta.transactional_id)

    async def close(self) -> None:
        await self.runtime.close()
        self._markers.close()


def _trace(transactional_id: str, what: str, *args: object) -> None:
    """One step of a transaction at the coordinator, for a timeline (``bench/txn_timeline.py``)."""
    log.debug("txn %s: " + what, transactional_id, *args)


def _markers_pending(meta: TransactionMetadata | None) -> bool:
    """The id's transaction is in Prepare* with no write in flight: its markers are being written
    and Complete* comes next."""
    return meta is not None and meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT) \
        and not meta.pending_transition_in_progress


def _record(transactional_id: str, transit: TxnTransit) -> tuple[bytes, bytes]:
    version = TV2_VALUE_VERSION if transit.client_transaction_version >= TV_2 else VALUE_VERSION
    return encode_key(transactional_id), encode_value(log_value(transit), version)


def _given(producer_id: int) -> int:
    assert producer_id >= 0, "a new producer id was needed but none was fetched"
    return producer_id


def _replay(txns: dict[str, TransactionMetadata], index: int, records) -> None:
    for r in records:
        if r.key is None:
            continue
        try:
            tid = decode_key(r.key)
            if tid is None:
                continue
            value = decode_value(r.value)
        except Exception as e:     # noqa: BLE001 - a bad record is skipped, not fatal to the load
            log.warning("%s-%d: skipping unreadable record at offset %d: %s", TXN_TOPIC, index, r.offset, e)
            continue
        if value is None:
            txns.pop(tid, None)
        else:
            txns[tid] = metadata_from_log(tid, value)
