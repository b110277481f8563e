"""Transactional producers of the simulation (txn_sim.py): each a transaction.version 2 client
(EndTxn v5 answers the bumped epoch, Produce v12 lets the leader add the partition), one request
in flight at a time, as a Kafka producer behaves from its application's side:

    InitProducerId -> [ Produce ... (AddOffsetsToTxn, TxnOffsetCommit) EndTxn(commit|abort) ]*

Retriable errors and timeouts retry the same request (a Produce keeps its sequence, so a copy
that was appended is answered as a duplicate); a Produce or offset commit that keeps failing
makes the transaction abortable: the client aborts it.  PRODUCER_FENCED, INVALID_PRODUCER_EPOCH
on EndTxn, INVALID_PRODUCER_ID_MAPPING and INVALID_TXN_STATE are fatal: the instance stops and
the application starts a new one with the same transactional id.  A paused instance (a GC pause,
a stalled VM) acts on nothing until it resumes; meanwhile a new instance may have fenced it: the
zombie then keeps sending with its old epoch and must be refused everywhere.

Every record value is ``"<producer id>.<epoch>.<n>"``: the transaction it was written in, read
back by the checker.  What the client learns (a commit or an abort answered NONE, the records
acknowledged in it) goes to the checker (``txn_invariants.Checker.client_ended``).
"""
from __future__ import annotations

from txn_partitions import OFFSETS

from tierlog.protocol.errors import ErrorCode as E

__all__ = ["GROUP", "TOPIC", "Producer"]

TOPIC, GROUP = "t", "g"
TXN_TIMEOUT_MS = 3000
REQUEST_TIMEOUT_MS = 400
RETRY_MS = 50
PRODUCE_RETRIES = 4
_RETRIABLE = {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS,
              E.CONCURRENT_TRANSACTIONS, E.NOT_ENOUGH_REPLICAS, E.REQUEST_TIMED_OUT, E.NOT_LEADER_OR_FOLLOWER}
_FATAL = {E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH, E.INVALID_PRODUCER_ID_MAPPING, E.INVALID_TXN_STATE}


class Producer:
    def __init__(self, sim, tid: str, instance: int):
        self.sim, self.tid, self.instance = sim, tid, instance
        self.name = f"{tid}#{instance}"
        self.pid, self.epoch = -1, -1
        self.alive = True
        self.paused_until = 0
        self.held: list = []                # actions that came while paused
        self.seqs: dict = {}
        self.txn: dict | None = None
        self.counter = 0
        sim.net.at(sim.net.now, self._init)

    # -- plumbing -------------------------------------------------------------------------------
    def _call(self, handler, body: dict, then) -> None:
        self.sim.net.request(handler, body, lambda answer: self._act(then, answer), REQUEST_TIMEOUT_MS)

    def _act(self, fn, *args) -> None:
        if not self.alive:
            return
        if self.sim.net.now < self.paused_until:
            self.held.append((fn, args))
            return
        fn(*args)

    def _later(self, fn, *args) -> None:
        self.sim.net.at(self.sim.net.now + RETRY_MS, self._act, fn, *args)

    def pause(self, ms: int) -> None:
        self.paused_until = self.sim.net.now + ms
        self.sim.net.at(self.paused_until, self._resume)

    def _resume(self) -> None:
        held, self.held = self.held, []
        for fn, args in held:
            self._act(fn, *args)

    def die(self) -> None:
        self.alive = False

    # -- InitProducerId -------------------------------------------------------------------------
    def _init(self) -> None:
        body = {"tid": self.tid, "timeout": TXN_TIMEOUT_MS, "pid": -1, "epoch": -1}
        self._call(self.sim.coordinator.init_producer_id, body, self._on_init)

    def _on_init(self, answer) -> None:
        if answer is None or answer["error"] in _RETRIABLE:
            return self._later(self._init)
        assert answer["error"] == E.NONE, f"{self.name}: InitProducerId answered {answer}"
        self.pid, self.epoch, self.seqs = answer["pid"], answer["epoch"], {}
        self._begin()

    # -- a transaction ---------------------------------------------------------------------------
    def _begin(self) -> None:
        if not self.sim.producing():
            return
        rng = self.sim.rng
        parts = rng.sample(range(self.sim.num_partitions), rng.randint(1, min(3, self.sim.num_partitions)))
        ops = [("produce", p) for p in parts for _ in range(rng.randint(1, 2))]
        rng.shuffle(ops)
        if rng.random() < 0.4:
            ops.append(("offsets", None))
        self.txn = {"key": (self.pid, self.epoch), "ops": ops, "acked": {}, "offsets": {}, "failed": False}
        self._next()

    def _next(self) -> None:
        txn = self.txn
        if txn["failed"] or not txn["ops"]:
            commit = not txn["failed"] and self.sim.rng.random() < 0.75
            return self._end(commit)
        kind, p = txn["ops"].pop(0)
        if kind == "produce":
            return self._produce(p)
        self._add_offsets()

    def _produce(self, p: int) -> None:
        key = (TOPIC, p)
        seq = self.seqs.get(key, 0)
        n = self.sim.rng.randint(1, 3)
        values = [f"{self.pid}.{self.epoch}.{self.counter + i}" for i in range(n)]
        self.counter += n
        self.seqs[key] = seq + n
        body = {"tid": self.tid, "pid": self.pid, "epoch": self.epoch, "seq": seq, "values": values}
        self._send_produce(key, body, PRODUCE_RETRIES)

    def _send_produce(self, key, body: dict, retries: int) -> None:
        def answered(answer) -> None:
            code = E.REQUEST_TIMED_OUT if answer is None else answer["error"]
            if code == E.NONE:
                self.txn["acked"].setdefault(key, []).extend(body["values"])
                return self._next()
            if code in _RETRIABLE and retries > 0:
                return self._later(self._send_produce, key, body, retries - 1)
            self.sim.stats["abortable"] += 1
            self.txn["failed"] = True       # abortable: the transaction can only abort
            self._next()
        self._call(self.sim.leaders[key].produce, body, answered)

    def _add_offsets(self, retries: int = PRODUCE_RETRIES) -> None:
        body = {"tid": self.tid, "pid": self.pid, "epoch": self.epoch, "partitions": frozenset({OFFSETS})}

        def answered(answer) -> None:
            code = E.REQUEST_TIMED_OUT if answer is None else answer["error"]
            if code == E.NONE:
                return self._commit_offsets(PRODUCE_RETRIES)
            if code in _FATAL:
                return self._fatal(code)
            if retries > 0:
                return self._later(self._add_offsets, retries - 1)
            self.txn["failed"] = True
            self._next()
        self._call(self.sim.coordinator.add_partitions, body, answered)

    def _commit_offsets(self, retries: int, value: int | None = None) -> None:
        if value is None:
            value = self.sim.new_offset_value(self.txn["key"])
        p = self.sim.rng.randrange(self.sim.num_partitions)
        body = {"tid": self.tid, "pid": self.pid, "epoch": self.epoch, "group": GROUP, "topic": TOPIC,
                "offsets": {p: value}}

        def answered(answer) -> None:
            code = E.REQUEST_TIMED_OUT if answer is None else answer["error"]
            if code == E.NONE:
                self.txn["offsets"][p] = value
                return self._next()
            if code in _RETRIABLE and retries > 0:
                return self._later(self._commit_offsets, retries - 1, value)
            self.txn["failed"] = True
            self._next()
        self._call(self.sim.group.txn_offset_commit, body, answered)

    def _end(self, commit: bool) -> None:
        body = {"tid": self.tid, "pid": self.pid, "epoch": self.epoch, "commit": commit}

        def answered(answer) -> None:
            code = E.REQUEST_TIMED_OUT if answer is None else answer["error"]
            if code == E.NONE:
                self.sim.checker.client_ended(self.name, self.txn, commit)
                self.txn = None
                if (answer["pid"], answer["epoch"]) != (self.pid, self.epoch):
                    self.pid, self.epoch, self.seqs = answer["pid"], answer["epoch"], {}
                self.sim.stats["commits" if commit else "aborts"] += 1
                return self._begin()
            if code in _FATAL:
                return self._fatal(code)
            self._later(self._end, commit)
        self._call(self.sim.coordinator.end_txn, body, answered)

    def _fatal(self, code: int) -> None:
        self.sim.stats["fenced"] += 1
        self.alive = False
        self.sim.replace(self)
