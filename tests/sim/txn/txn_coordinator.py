"""The transaction coordinator of the simulation (txn_sim.py): a model of the shell
``broker/transaction_coordinator.py`` around the REAL sans-IO rules
(``txn.requests``, ``TransactionMetadata``) and the REAL
``__transaction_state`` record codec.

``TxnStateLog`` is the one ``__transaction_state`` partition every transactional id of the
simulation hashes to: records ``(key, value, note)`` and a high watermark that replication
moves one record or more at a time.  ``note`` is the simulation's own label of a Prepare*
record: ``(producer id, epoch of the transaction's data, commit?)``, the transaction it
decides; a Prepare* record below the high watermark is the decision the checker holds every
reader to.

A ``Coordinator`` is one leader incarnation of that partition (its leader epoch is the
coordinator epoch its markers carry).  It loads the log (COORDINATOR_LOAD_IN_PROGRESS
meanwhile), resumes every transaction it finds in Prepare*, and then serves requests as the
shell does: an error or a transit; a transit's record is appended and applied
(``complete_transition``) once committed, then answered.  EndTxn is answered once Prepare* is
committed; the markers then go to every partition of the transaction over the faulty network
(WriteTxnMarkers, retried every ``MARKER_RETRY_MS``; INVALID_PRODUCER_EPOCH and
TRANSACTION_COORDINATOR_FENCED count as written), then Complete* is appended.  InitProducerId on
an Ongoing transaction and the timeout check fence and abort it.  A failover (``stop``) ends the
incarnation: its writes in flight answer NOT_COORDINATOR and it sends nothing more, but what it
already sent is still in the network.
"""
from __future__ import annotations

from collections.abc import Callable

from tierlog.protocol.errors import ErrorCode as E
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

__all__ = ["Coordinator", "TxnStateLog"]

S = TransactionState
MAX_TIMEOUT_MS = 900_000        # transaction.max.timeout.ms
ABORT_CHECK_MS = 1000           # transaction.abort.timed.out.transaction.cleanup.interval.ms (simulated)
MARKER_TIMEOUT_MS = 300
MARKER_RETRY_MS = 100
BAD_MARKER_P = 0.05             # the "bad_marker" bug's rate
_MARKER_DONE = {E.NONE, E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED}


class TxnStateLog:
    def __init__(self, on_decided: Callable):
        self.entries: list[tuple[bytes, bytes, tuple | None]] = []
        self.hw = 0
        self.waiting: list[tuple[int, Callable[[], None]]] = []
        self._on_decided = on_decided           # note -> None, once a Prepare* record is committed

    def append(self, key: bytes, value: bytes, note: tuple | None, on_commit: Callable[[], None]) -> None:
        self.entries.append((key, value, note))
        self.waiting.append((len(self.entries), on_commit))

    def commit_to(self, end: int) -> None:
        for _key, _value, note in self.entries[self.hw:end]:
            if note is not None:
                self._on_decided(note)
        self.hw = max(self.hw, end)
        due = [fn for e, fn in self.waiting if e <= self.hw]
        self.waiting = [(e, fn) for e, fn in self.waiting if e > self.hw]
        for fn in due:
            fn()

    def fail_over(self, kept: int) -> None:
        """A new leader holds the committed prefix and ``kept - hw`` more records; the rest is lost."""
        self.waiting = []
        del self.entries[kept:]
        self.commit_to(kept)


class Coordinator:
    def __init__(self, sim, log: TxnStateLog, epoch: int, load_ms: int):
        self.sim, self.log, self.epoch = sim, log, epoch
        self.alive = True
        self.txns: dict[str, TransactionMetadata] | None = None     # None while loading
        self.pending: dict[int, Callable[[int], None]] = {}        # writes in flight, in order: their completions
        self._writes = 0
        sim.net.at(sim.net.now + load_ms, self._load)
        sim.net.at(sim.net.now + ABORT_CHECK_MS, self._tick)

    # -- leadership ------------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.alive:
            return
        txns: dict[str, TransactionMetadata] = {}
        for key, value, _note in self.log.entries:
            tid, v = decode_key(key), decode_value(value)
            if v is None:
                txns.pop(tid, None)
            else:
                txns[tid] = metadata_from_log(tid, v)
        self.txns = txns
        for meta in txns.values():
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._send_markers(meta)

    def stop(self) -> None:
        self.alive = False
        for fail in list(self.pending.values()):
            fail(E.NOT_COORDINATOR)

    def _locate(self, tid: str) -> int:
        if not self.alive:
            return E.NOT_COORDINATOR
        return E.COORDINATOR_LOAD_IN_PROGRESS if self.txns is None else E.NONE

    # -- requests (each ``handler(body, reply)``) ---------------------------------------------
    def init_producer_id(self, body: dict, reply: Callable) -> None:
        tid = body["tid"]
        error = rules.check_init_producer_id(tid, body["timeout"], MAX_TIMEOUT_MS) or self._locate(tid)
        if error:
            return reply({"error": error})
        now = self.sim.net.now
        meta = self.txns.get(tid)
        fresh = self.sim.next_producer_id() if meta is None or meta.epoch_exhausted else -1
        if meta is None:
            meta = self.txns[tid] = rules.new_transaction_metadata(tid, fresh, body["timeout"], now)
        expected = rules.ProducerIdAndEpoch(body["pid"], body["epoch"]) if body["pid"] >= 0 else None
        ongoing = meta.producer_epoch if meta.state is S.ONGOING else None
        decision = rules.init_producer_id(meta, body["timeout"], expected, lambda: fresh, now)
        if decision.error or decision.transit is None:
            return reply({"error": decision.error})
        if decision.transit.state is S.PREPARE_EPOCH_FENCE:
            self._abort_fenced(meta, decision.transit, ongoing)
            return reply({"error": E.CONCURRENT_TRANSACTIONS})
        self._write(meta, decision.transit, None, lambda error: reply(
            {"error": error, "pid": meta.producer_id, "epoch": meta.producer_epoch}))

    def add_partitions(self, body: dict, reply: Callable) -> None:
        """AddPartitionsToTxn (client form) and AddOffsetsToTxn."""
        error = self._locate(body["tid"])
        if error:
            return reply({"error": error})
        meta = self.txns.get(body["tid"])
        decision = rules.add_partitions(meta, body["pid"], body["epoch"], body["partitions"], self.sim.net.now)
        if decision.error or decision.transit is None:
            return reply({"error": decision.error})
        self._write(meta, decision.transit, None, lambda error: reply({"error": error}))

    add_partitions_from_leader = add_partitions     # AddPartitionsToTxn v5 of a leader (Produce v12, TV2)

    def end_txn(self, body: dict, reply: Callable) -> None:
        error = self._locate(body["tid"])
        if error:
            return reply({"error": error})
        meta = self.txns.get(body["tid"])
        ongoing = meta.producer_epoch if meta is not None and meta.state is S.ONGOING else None
        fresh = self.sim.next_producer_id() if meta is not None and meta.epoch_exhausted else -1
        decision = rules.end_txn(meta, body["pid"], body["epoch"], body["commit"], True, TV_2, lambda: fresh,
                                 self.sim.net.now)
        if decision.error or decision.transit is None:
            return reply({"error": decision.error, "pid": decision.producer_id, "epoch": decision.producer_epoch})

        def written(error: int) -> None:
            if error:
                return None if early else reply({"error": error})
            self._send_markers(meta)
            if not early:
                reply(_end_answer(meta))
        early = "early_end_answer" in self.sim.bugs          # a deliberate bug: answered before the write
        self._write(meta, decision.transit, (meta.producer_id, ongoing, body["commit"]), written)
        if early:
            reply({"error": E.NONE, "pid": decision.transit.producer_id, "epoch": decision.transit.producer_epoch})

    # -- writing and completing --------------------------------------------------------------------
    def _write(self, meta: TransactionMetadata, transit: TxnTransit, note: tuple | None,
               then: Callable[[int], None]) -> None:
        version = 1 if transit.client_transaction_version >= TV_2 else 0
        self._writes += 1
        write = self._writes

        def finish(error: int) -> None:
            if self.pending.pop(write, None) is None:
                return          # answered already (committed, or failed over)
            if error or not self.alive:
                meta.revert_pending()
                return then(error or E.NOT_COORDINATOR)
            meta.complete_transition(transit)
            then(E.NONE)
        self.pending[write] = finish
        self.log.append(encode_key(meta.transactional_id), encode_value(log_value(transit), version), note,
                        lambda: finish(E.NONE) if self.alive else None)

    def _abort_fenced(self, meta: TransactionMetadata, fence: TxnTransit, ongoing: int) -> None:
        decision = rules.end_txn(meta, meta.producer_id, fence.producer_epoch, False, False, 0, lambda: -1,
                                 self.sim.net.now)
        if decision.transit is None:
            if meta.pending_state is S.PREPARE_EPOCH_FENCE:
                meta.revert_pending()
            return

        def written(error: int) -> None:
            if error:
                meta.has_failed_epoch_fence = True
            else:
                self._send_markers(meta)
        self._write(meta, decision.transit, (meta.producer_id, ongoing, False), written)

    def _send_markers(self, meta: TransactionMetadata) -> None:
        body = {"pid": meta.producer_id, "epoch": meta.producer_epoch, "commit": meta.state is S.PREPARE_COMMIT,
                "coordinator_epoch": self.epoch, "transaction_version": meta.client_transaction_version}
        left = set(meta.partitions)
        if not left:
            return self._complete(meta)
        for key in sorted(left):
            self._send_marker(meta, key, body, left)

    def _send_marker(self, meta: TransactionMetadata, key, body: dict, left: set) -> None:
        def answered(answer) -> None:
            if not self.alive:
                return
            if answer is not None and answer["error"] in _MARKER_DONE:
                left.discard(key)
                if not left:
                    self._complete(meta)
                return
            self.sim.net.at(self.sim.net.now + MARKER_RETRY_MS, self._send_marker, meta, key, body, left)
        self.sim.stats["markers_sent"] += 1
        if "bad_marker" in self.sim.bugs and self.sim.rng.random() < BAD_MARKER_P:    # the opposite marker
            self.sim.stats["bad_markers"] += 1
            body = {**body, "commit": not body["commit"]}
        self.sim.net.request(self.sim.leaders[key].write_marker, body, answered, MARKER_TIMEOUT_MS)

    def _complete(self, meta: TransactionMetadata) -> None:
        if not self.alive:
            return
        if meta.pending_transition_in_progress:
            return self.sim.net.at(self.sim.net.now + MARKER_RETRY_MS, self._complete, meta)
        self._write(meta, meta.prepare_complete(self.sim.net.now), None, lambda error: None)

    # -- time ----------------------------------------------------------------------------------
    def _tick(self) -> None:
        """Kafka's ``abortTimedOutTransactions``: fence and abort Ongoing transactions past their timeout."""
        if not self.alive:
            return
        self.sim.net.at(self.sim.net.now + ABORT_CHECK_MS, self._tick)
        for meta in list((self.txns or {}).values()):
            if meta.state is S.ONGOING and not meta.pending_transition_in_progress \
                    and meta.start_timestamp_ms + meta.timeout_ms < self.sim.net.now:
                ongoing = meta.producer_epoch
                self.sim.stats["timeouts"] += 1
                self._abort_fenced(meta, meta.prepare_fence_producer_epoch(), ongoing)


def _end_answer(meta: TransactionMetadata) -> dict:
    """EndTxn v5's answer: the epoch this end bumped to, or the next producer id at epoch 0."""
    if meta.next_producer_id != NO_PRODUCER_ID:
        return {"error": E.NONE, "pid": meta.next_producer_id, "epoch": 0}
    return {"error": E.NONE, "pid": meta.producer_id, "epoch": meta.producer_epoch}
