"""The invariants of the transaction simulation (txn_sim.py), checked after every event.

Ground truth: a transaction is ``(producer id, epoch of its data)`` (with transaction.version 2
every end bumps the epoch, so each transaction writes at an epoch of its own), and its outcome
is the Prepare* record of it that is committed in ``__transaction_state`` (``decided``).  Every
record value names the transaction its producer wrote it in.  A read_committed reader per data
partition fetches as a consumer does (``SimPartition.read``: whole batches below the LSO, the
aborted transactions of the answer, the client's REAL ``AbortedFilter``) up to the LSO after
every event.  The rules, exactly:

1. No aborted read: every record a read_committed reader returns belongs to a transaction
   decided COMMIT (never to one decided ABORT, nor to one undecided yet).
2. Markers carry the decision: the marker that ends a transaction's data on a partition has
   the type its committed Prepare* record decided, and comes after that record.
3. Atomic visibility: once a partition's LSO is past the COMMIT marker of transaction T there,
   every record T appended there is visible to read_committed (never a part of it); at the end
   (after healing and settling) every record a client had acknowledged in a transaction it
   committed is visible on every partition it went to, and no partition has an open
   transaction left (none hangs; the LSO caught up with the high watermark everywhere).
4. Offsets only with the commit: every offset the group shows (OffsetFetch) was committed by a
   transaction decided COMMIT whose COMMIT marker is committed on the offsets partition.
5. No write of a fenced producer is appended: a batch (data or TxnOffsetCommit) of producer id
   p at epoch e is never appended to a partition after that partition holds a marker of p with
   an epoch above e (with transaction.version 2 the marker ending (p, e) has epoch e + 1), and
   it never joins another transaction's open data (a transaction's data on a partition is one
   transaction's only).
6. The LSO of every partition (the offsets partition too) never moves backwards.
7. A client told "committed" (EndTxn answered NONE) has its transaction decided COMMIT; told
   "aborted", decided ABORT.
"""
from __future__ import annotations

from tierlog.records.aborted import AbortedFilter
from tierlog.records.control import COMMIT
from tierlog.records.decoder import decode_records

__all__ = ["Checker", "SimFailure"]


class SimFailure(AssertionError):
    pass


def _txn_of(value: str) -> tuple[int, int]:
    pid, epoch, _n = value.split(".")
    return int(pid), int(epoch)


class _Reader:
    """A read_committed consumer of one partition, from offset 0."""

    def __init__(self):
        self.position = 0
        self.visible: set[str] = set()


class _PartState:
    def __init__(self):
        self.open: dict[int, tuple[int, int]] = {}          # producer id -> the transaction its open data is
        self.data: dict[tuple[int, int], list[str]] = {}    # transaction -> its values here
        self.ended: dict[tuple[int, int], tuple[int, bool]] = {}    # transaction -> (its marker's offset, commit)
        self.to_check: list[tuple[int, tuple[int, int]]] = []       # COMMIT markers the LSO has not passed yet
        self.marker_epoch: dict[int, int] = {}              # producer id -> highest marker epoch here
        self.lso = 0


class Checker:
    def __init__(self, sim):
        self.sim = sim
        self.decisions: dict[tuple[int, int], bool] = {}
        self.offset_owner: dict[int, tuple[int, int]] = {}
        self.client_committed: dict[tuple[int, int], dict] = {}
        self.parts: dict = {}
        self.readers: dict = {}
        self._last_moved: tuple = ()

    def fail(self, msg: str) -> None:
        raise SimFailure(f"SEED={self.sim.seed} t={self.sim.net.now}: {msg}")

    def _state(self, key) -> _PartState:
        return self.parts.setdefault(key, _PartState())

    # -- what happens ----------------------------------------------------------------------------
    def decided(self, note: tuple) -> None:
        pid, epoch, commit = note
        key = (pid, epoch)
        if self.decisions.get(key, commit) != commit:
            self.fail(f"transaction {key} decided both ways")
        self.decisions[key] = commit

    def on_append(self, part, h, batch: bytes, marker) -> None:
        st = self._state(part.key)
        if h.is_control:
            return self._on_marker(part, st, h, marker[0] == COMMIT)
        txn = (h.producer_id, h.producer_epoch)
        if st.marker_epoch.get(h.producer_id, -1) > h.producer_epoch:
            self.fail(f"{part.key}: a write of fenced producer {txn} appended at {h.base_offset} after its "
                      f"marker at epoch {st.marker_epoch[h.producer_id]}")
        joined = st.open.setdefault(h.producer_id, txn)
        if joined != txn:
            self.fail(f"{part.key}: a write of transaction {txn} joined the open transaction {joined} "
                      f"at {h.base_offset}")
        if part.key[0] == "t":
            values = [r.value.decode() for r in decode_records(batch, h)]
            assert all(_txn_of(v) == txn for v in values), (txn, values)
            st.data.setdefault(txn, []).extend(values)

    def _on_marker(self, part, st: _PartState, h, commit: bool) -> None:
        st.marker_epoch[h.producer_id] = max(st.marker_epoch.get(h.producer_id, -1), h.producer_epoch)
        txn = st.open.pop(h.producer_id, None)
        if txn is None:
            return              # a retried marker, or one of a transaction with no data here
        if txn not in self.decisions:
            self.fail(f"{part.key}: a marker at {h.base_offset} ended transaction {txn}, which is undecided")
        if self.decisions[txn] != commit:
            self.fail(f"{part.key}: a {'COMMIT' if commit else 'ABORT'} marker at {h.base_offset} ended "
                      f"transaction {txn}, decided {'COMMIT' if self.decisions[txn] else 'ABORT'}")
        st.ended[txn] = (h.base_offset, commit)
        if commit:
            st.to_check.append((h.base_offset, txn))

    def client_ended(self, name: str, txn: dict, commit: bool) -> None:
        key = txn["key"]
        if self.decisions.get(key) != commit:
            self.fail(f"{name} was told transaction {key} {'committed' if commit else 'aborted'}; "
                      f"decided: {self.decisions.get(key)}")
        if commit:
            self.client_committed[key] = txn["acked"]

    # -- after every event -------------------------------------------------------------------------
    def check(self) -> None:
        """Skipped when no log end offset or high watermark moved since the last one: what it
        looks at (LSOs, reads, the group's offsets) changes only with them."""
        moved = tuple((part.leo, part.hw) for part in self.sim.parts.values())
        if moved == self._last_moved:
            return
        self._last_moved = moved
        for key, part in self.sim.parts.items():
            st = self._state(key)
            lso = part.lso
            if lso < st.lso:
                self.fail(f"{key}: the LSO went back from {st.lso} to {lso}")
            st.lso = lso
            if key[0] == "t":
                self._read(part, st)
        self._check_offsets()

    def _read(self, part, st: _PartState) -> None:
        reader = self.readers.setdefault(part.key, _Reader())
        while reader.position < st.lso:
            batches, aborted = part.read(reader.position, self.sim.rng.randint(1, 4))
            if not batches:
                break
            skip = AbortedFilter(aborted)
            for h, batch in batches:
                reader.position = h.next_offset
                if skip.drops(h, batch) or h.is_control:
                    continue
                for r in decode_records(batch, h):
                    self._visible(part.key, reader, r.value.decode())
        while st.to_check and st.to_check[0][0] < st.lso:
            _offset, txn = st.to_check.pop(0)
            missing = [v for v in st.data.get(txn, ()) if v not in reader.visible]
            if missing:
                self.fail(f"{part.key}: torn transaction {txn}: the LSO ({st.lso}) passed its COMMIT marker "
                          f"but {missing} are not visible")

    def _visible(self, key, reader: _Reader, value: str) -> None:
        txn = _txn_of(value)
        decision = self.decisions.get(txn)
        if decision is not True:
            what = "aborted" if decision is False else "undecided"
            self.fail(f"{key}: read_committed returned {value} of {what} transaction {txn}")
        reader.visible.add(value)

    def _check_offsets(self) -> None:
        offsets_part = self.sim.group.part
        ended = self._state(offsets_part.key).ended
        for p, value in self.sim.group.offsets("g").items():
            txn = self.offset_owner[value]
            marker = ended.get(txn)
            if self.decisions.get(txn) is not True or marker is None or not marker[1] \
                    or marker[0] >= offsets_part.hw:
                self.fail(f"offset {value} of partition {p} applied; its transaction {txn} is decided "
                          f"{self.decisions.get(txn)}, its marker on the offsets partition {marker} "
                          f"(high watermark {offsets_part.hw})")

    # -- after healing ---------------------------------------------------------------------------
    def final(self) -> None:
        for key, part in self.sim.parts.items():
            if part.ps.ongoing():
                self.fail(f"{key}: transactions still open after healing: {part.ps.ongoing()} "
                          f"(LSO {part.lso}, high watermark {part.hw})")
        for txn, acked in self.client_committed.items():
            for key, values in acked.items():
                missing = [v for v in values if v not in self.readers[key].visible]
                if missing:
                    self.fail(f"{key}: committed transaction {txn} lost acknowledged {missing}")
