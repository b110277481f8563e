"""The partition leaders of the transaction simulation (txn_sim.py): data partitions and the
group coordinator's ``__consumer_offsets`` partition, each a model of the broker's shell around
the real sans-IO rules.

- ``SimPartition``: one leader's log of real v2 batches (``records.build_batch`` /
  ``build_marker``), the REAL ``storage.ProducerStateManager`` checking and recording every
  append (idempotence, epochs, open transactions, markers), the aborted-transaction entries
  (``storage.txn_index.AbortedTxn``, written as ``Log._index_aborted`` writes them), a high
  watermark that replication moves in whole batches, and the last stable offset as
  ``Partition.last_stable_offset`` computes it.  Reads are ``Partition.read``'s: whole
  batches below the LSO and the aborted transactions overlapping the read
  (``txn_index.collect_aborted``).
- ``DataLeader``: Produce (acks=all) with KIP-890 verification before a producer's first
  transactional write to the partition, as ``broker/txn_verification.py`` does it for a
  transaction.version 2 client (Produce v12: the leader adds the partition to the transaction
  at the coordinator, over the network; its answer is mapped by the shell's own
  ``_produce_error``), and WriteTxnMarkers (acks=all, answered once committed).
- ``GroupLeader``: TxnOffsetCommit through the REAL ``coordinator.GroupShard``: its records are
  one transactional batch of the producer (no sequence) on the offsets partition, applied by
  ``apply_committed`` once committed, and ``complete_txn`` once a marker is committed there, as
  ``broker/group_coordinator.py`` does.
"""
from __future__ import annotations

import bisect
import random
from collections.abc import Callable

from tierlog.broker.txn_verification import _produce_error
from tierlog.group import GroupConfig, GroupShard
from tierlog.protocol.errors import ErrorCode as E
from tierlog.records.builder import build_batch
from tierlog.records.control import ABORT, COMMIT, build_marker
from tierlog.records.header import BatchHeader, parse_header
from tierlog.records.record import Record
from tierlog.records.stamp import set_base_offset
from tierlog.storage.producer_state import ProducerStateError, ProducerStateManager
from tierlog.storage.txn_index import AbortedTxn, collect_aborted

__all__ = ["OFFSETS", "DataLeader", "GroupLeader", "SimPartition"]

OFFSETS = ("__consumer_offsets", 0)
PRODUCE_V12 = 12
ADD_TIMEOUT_MS = 300


class SimPartition:
    def __init__(self, key: tuple[str, int], checker, stats: dict, bugs: frozenset[str] = frozenset()):
        self.key = key
        self.checker = checker                      # told of every append (txn_invariants.Checker)
        self.stats = stats
        self.bugs = bugs                            # deliberate bugs (txn_sim.BUGS), for the tests
        self.batches: list[tuple[BatchHeader, bytes]] = []
        self.bases: list[int] = []
        self.leo = 0
        self.hw = 0
        self.ps = ProducerStateManager()
        self.aborted: list[AbortedTxn] = []
        self.waiting: list[tuple[int, Callable[[], None]]] = []     # (end offset, run once committed)

    @property
    def lso(self) -> int:
        unstable = self.ps.first_unstable_offset(self.hw)
        return self.hw if unstable is None else min(self.hw, unstable)

    def append(self, batch: bytearray, marker: tuple[int, int] | None = None, transaction_version: int = 0):
        """Check and append one batch at the log end: (error, header or Duplicate); ``marker``:
        (control type, coordinator epoch) of a marker written with ``transaction_version``."""
        set_base_offset(batch, 0, self.leo)
        h = parse_header(batch)
        if "marker_version_ignored" in self.bugs:
            transaction_version = 0                 # a leader before KIP-1228
        try:
            dup = self.ps.check([h], transaction_version, marker[1] if marker else -1)
        except ProducerStateError as e:
            if not self._ignores(h, e.error_code):
                self._count_refused(h, e.error_code)
                return e.error_code, None
            dup = None
        if dup is not None:
            return E.NONE, dup
        self.batches.append((h, bytes(batch)))
        self.bases.append(h.base_offset)
        self.leo = h.next_offset
        ended = self.ps.update([h], {h.base_offset: marker} if marker else None)
        for txn in ended:
            if self._indexed(txn):      # Log._index_aborted: the .txnindex entry of a non-empty abort
                other = self.ps.open_txn_first_offset(txn.producer_id)
                lso = txn.last_offset + 1 if other is None else other
                self.aborted.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
        self.checker.on_append(self, h, bytes(batch), marker)
        return E.NONE, h

    def _ignores(self, h: BatchHeader, code: int) -> bool:
        """Whether a deliberate bug appends what the producer state refused."""
        if code != E.INVALID_PRODUCER_EPOCH:
            return False
        offsets = h.base_sequence < 0 and not h.is_control
        return "no_epoch_check" in self.bugs or (offsets and "offsets_epoch_unchecked" in self.bugs)

    def _indexed(self, txn) -> bool:
        if "no_abort_index" in self.bugs:
            return False
        return txn.aborted or "index_commits" in self.bugs

    def _count_refused(self, h: BatchHeader, code: int) -> None:
        if code == E.INVALID_PRODUCER_EPOCH:
            kind = "stale_markers" if h.is_control else "fenced_offset_commits" if h.base_sequence < 0 \
                else "fenced_writes"
            self.stats[kind] += 1

    def when_committed(self, end: int, fn: Callable[[], None]) -> None:
        if end <= self.hw:
            fn()
        else:
            self.waiting.append((end, fn))

    def replicate(self, rng: random.Random) -> None:
        """The ISR caught up to some batch boundary (acks=all waiters whose batches it passed run)."""
        if self.hw < self.leo:
            i = bisect.bisect_right(self.bases, self.hw)        # the batches from the one at the high watermark
            self.hw = rng.choice((self.bases[i:i + 4] + [self.leo])[:4])
        due = [fn for end, fn in self.waiting if end <= self.hw]
        self.waiting = [(end, fn) for end, fn in self.waiting if end > self.hw]
        for fn in due:
            fn()

    def read(self, fetch_offset: int, max_batches: int):
        """A read_committed Fetch: (whole batches from ``fetch_offset`` below the LSO, the aborted
        transactions overlapping [fetch_offset, LSO))."""
        upper = self.lso
        i = max(0, bisect.bisect_right(self.bases, fetch_offset) - 1)
        out = [(h, b) for h, b in self.batches[i:i + max_batches] if h.next_offset <= upper
               and h.last_offset >= fetch_offset]
        aborted = collect_aborted(self.aborted, fetch_offset, upper)[0] if out else []
        return out, [{"ProducerId": a.producer_id, "FirstOffset": a.first_offset} for a in aborted]


def data_batch(pid: int, epoch: int, seq: int, values: list[str], now: int) -> bytearray:
    records = [Record(i, now, None, v.encode()) for i, v in enumerate(values)]
    return bytearray(build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                 transactional=True))


class _Leader:
    """WriteTxnMarkers at a partition's leader (``broker/txn_marker_writer.py``)."""

    def __init__(self, sim, part: SimPartition):
        self.sim, self.part = sim, part

    def write_marker(self, body: dict, reply: Callable) -> None:
        batch = bytearray(build_marker(body["pid"], body["epoch"], body["commit"], body["coordinator_epoch"],
                                       self.sim.net.now))
        error, h = self.part.append(batch, (COMMIT if body["commit"] else ABORT, body["coordinator_epoch"]),
                                    body["transaction_version"])
        if error:
            return reply({"error": error})
        self.part.when_committed(h.next_offset, lambda: self.marker_committed(body, reply))

    def marker_committed(self, body: dict, reply: Callable) -> None:
        reply({"error": E.NONE})


class DataLeader(_Leader):
    def produce(self, body: dict, reply: Callable) -> None:
        """Produce v12 of one transactional batch (acks=all)."""
        if self.part.ps.open_txn_epoch(body["pid"]) == body["epoch"] or "no_verification" in self.part.bugs:
            return self._append(body, reply)

        def verified(answer) -> None:
            code = E.NOT_COORDINATOR if answer is None else answer["error"]
            if code:
                return reply({"error": _produce_error(code, PRODUCE_V12)})
            self._append(body, reply)
        coordinator = self.sim.coordinator
        self.sim.net.request(coordinator.add_partitions_from_leader,
                             {"tid": body["tid"], "pid": body["pid"], "epoch": body["epoch"],
                              "partitions": frozenset({self.part.key})}, verified, ADD_TIMEOUT_MS)

    def _append(self, body: dict, reply: Callable) -> None:
        batch = data_batch(body["pid"], body["epoch"], body["seq"], body["values"], self.sim.net.now)
        error, h = self.part.append(batch)
        if error:
            return reply({"error": error})
        self.part.when_committed(h.last_offset + 1, lambda: reply({"error": E.NONE}))


class GroupLeader(_Leader):
    """The group coordinator of the group's ``__consumer_offsets`` partition."""

    def __init__(self, sim, part: SimPartition):
        super().__init__(sim, part)
        self.shard = GroupShard(OFFSETS[1], GroupConfig(), random.Random(sim.rng.getrandbits(32)))

    def txn_offset_commit(self, body: dict, reply: Callable) -> None:
        req = {"TransactionalId": body["tid"], "GroupId": body["group"], "ProducerId": body["pid"],
               "ProducerEpoch": body["epoch"], "MemberId": "", "GenerationId": -1, "GroupInstanceId": None,
               "Topics": [{"Name": body["topic"], "Partitions": [
                   {"PartitionIndex": p, "CommittedOffset": o, "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}
                   for p, o in body["offsets"].items()]}]}
        out = self.shard.txn_commit_offsets(req, "token", self.sim.net.now)
        answer = out.answers[0][1]
        if not out.records:
            return reply({"error": _first_error(answer)})
        records = [Record(i, self.sim.net.now, k, v) for i, (k, v) in enumerate(out.records)]
        batch = bytearray(build_batch(records, producer_id=body["pid"], producer_epoch=body["epoch"],
                                      base_sequence=-1, transactional=True))
        error, h = self.part.append(batch)
        if error:
            return reply({"error": error})

        def committed() -> None:
            at_once = "offsets_at_once" in self.part.bugs       # a deliberate bug: a plain commit
            self.shard.apply_committed(out.on_commit, -1 if at_once else body["pid"])
            reply({"error": _first_error(answer)})
        self.part.when_committed(h.next_offset, committed)

    def marker_committed(self, body: dict, reply: Callable) -> None:
        self.shard.complete_txn(body["pid"], body["commit"])
        reply({"error": E.NONE})

    def offsets(self, group: str) -> dict[int, int]:
        topics = self.shard.fetch_offsets(group, None)["Topics"]
        return {p["PartitionIndex"]: p["CommittedOffset"] for t in topics for p in t["Partitions"]
                if p["CommittedOffset"] >= 0}


def _first_error(answer: dict) -> int:
    return next((p["ErrorCode"] for t in answer["Topics"] for p in t["Partitions"] if p["ErrorCode"]), E.NONE)
