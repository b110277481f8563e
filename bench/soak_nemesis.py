"""The soak's nemesis: overlapping faults from a seeded schedule, on the calling (main) thread.

``schedule(seed, seconds, ...)`` draws every decision up front: when each fault begins, its
kind, the role of its target (the active controller, a partition's leader, a group or
transaction coordinator, any broker or controller), a number that picks among the nodes
holding that role at the time, and how long it lasts.  Faults overlap (a new one may begin
while up to ``overlap - 1`` others go on; past that it waits for one to end).  The seed
replays the schedule; which node holds a role when the fault begins depends on the run (it
is in the record of each fault).

Kinds: ``kill`` (kill -9, restarted at the end), ``pause`` (SIGSTOP, SIGCONT at the end),
``isolate`` (every packet to and from the node dropped), ``controller-split`` (one controller
cut off from the other two: a minority and a majority), ``one-way`` (a node's packets to one
other node dropped, the other way open), ``s3-outage`` (the object store's link down),
``disk-full`` (a broker's log dir filled to ENOSPC: its single dir fails and it stops, as
Kafka's broker; at the end the filler goes and a stopped broker restarts), ``slow-disk`` (every
log append and fsync of the node delayed) and ``clock-step`` (the node's wall clock stepped
forwards or backwards; back at the end); these two through the node's test-only fault file
(server/test_faults.py, SIGUSR2), and ``lost-object`` (the oldest remote ``.log`` object of the
lossy topic deleted behind the brokers' backs, once it has three remote segments: the checker
wants exactly that loss reported and surfaced, and nothing else lost).

Nodes are started from the main thread: a node gets SIGTERM when the *thread* that started it
ends (tierlog.parent_watch); a helper thread only waits for the ready line.
"""
from __future__ import annotations

import heapq
import json
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field

from cluster import request
from soak_lab import BROKERS, CONTROLLERS, HUB_HOST, MOTO_ID, Net, SoakCluster, SoakNode

from tierlog.protocol.api import ApiKey
from tierlog.tiered import list_partitions, object_store_from_config, segment_key
from tierlog.tiered.layout import LOG_SUFFIX

KINDS = ("kill", "pause", "isolate", "controller-split", "one-way", "s3-outage", "disk-full", "slow-disk",
         "clock-step", "lost-object")
ROLES = {"kill": ("active-controller", "leader", "group-coordinator", "txn-coordinator", "controller", "broker"),
         "pause": ("active-controller", "leader", "group-coordinator", "broker", "controller"),
         "isolate": ("leader", "active-controller", "broker"),
         "controller-split": ("active-controller", "controller"),
         "one-way": ("leader", "active-controller"),
         "s3-outage": ("moto",),
         "disk-full": ("leader", "broker"),
         "slow-disk": ("leader", "broker"),
         "clock-step": ("active-controller", "controller", "leader", "broker"),
         "lost-object": ("moto",)}
SLOW_DISK_MS = (20, 100)        # each append and fsync of the node's storage this much slower
CLOCK_STEP_S = (5, 120)         # the wall clock stepped this far, forwards or backwards


class NotReady(Exception):
    """The fault cannot be made yet (it is tried again a few seconds later)."""


@dataclass(frozen=True)
class Planned:
    at_s: float
    kind: str
    role: str
    pick: float
    duration_s: float

    def __str__(self) -> str:
        return f"{self.at_s:6.1f}s {self.kind} of the {self.role} for {self.duration_s:.1f}s"


@dataclass
class Fault:
    planned: Planned
    node: int | None = None
    start: float = 0.0
    end: float | None = None
    detail: str = ""
    undo: list = field(default_factory=list, repr=False)

    def row(self) -> dict:
        return {"kind": self.planned.kind, "role": self.planned.role, "node": self.node,
                "start_s": round(self.start, 2), "end_s": None if self.end is None else round(self.end, 2),
                "detail": self.detail}


def schedule(seed: int, seconds: float, warmup_s: float, gap_s: tuple[float, float],
             length_s: tuple[float, float]) -> list[Planned]:
    """The faults of a run: each kind once first (in a seeded order), then seeded kinds."""
    rng = random.Random(seed)
    first = rng.sample(KINDS, len(KINDS))
    out, t = [], warmup_s
    while t < seconds:
        kind = first.pop(0) if first else rng.choice(KINDS)
        out.append(Planned(round(t, 2), kind, rng.choice(ROLES[kind]), rng.random(),
                           round(rng.uniform(*length_s), 2)))
        t += rng.uniform(*gap_s)
    return out


class Nemesis:
    def __init__(self, cluster: SoakCluster, net: Net, store: dict, lossy: str, groups: list[str],
                 tids: list[str], t0: float, overlap: int):
        self.cluster, self.net, self.store, self.lossy, self.groups, self.tids = (
            cluster, net, store, lossy, groups, tids)
        self.lost: list[tuple[int, int, str]] = []         # (start, end, object key) of each lost segment
        self.t0, self.overlap = t0, overlap
        self.faults: list[Fault] = []
        self.active: list[Fault] = []
        self.busy: set[int] = set()          # nodes under a fault or starting again
        self.events: list[str] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def note(self, what: str) -> None:
        with self._lock:
            self.events.append(f"{self.now():7.1f} {what}")

    # -- the loop
    def run(self, plan: list[Planned], until_s: float, enough_at_s: float | None = None) -> None:
        """Apply ``plan`` until ``until_s``, or from ``enough_at_s`` on once every kind was applied."""
        queue: list[tuple[float, int, str, object]] = [(p.at_s, i, "begin", p) for i, p in enumerate(plan)]
        heapq.heapify(queue)
        seq = len(plan)
        while queue and queue[0][0] < until_s and not self._enough(enough_at_s):
            if queue[0][0] > self.now():
                time.sleep(min(1.0, queue[0][0] - self.now()))
                self.restart_stopped()
                continue
            at, _, what, item = heapq.heappop(queue)
            if what == "begin":
                assert isinstance(item, Planned)
                if len(self.active) >= self.overlap:        # begins once one of them ends
                    seq += 1
                    heapq.heappush(queue, (self.now() + 1, seq, what, item))
                    continue
                try:
                    fault = self.begin(item)
                except NotReady as e:
                    self.note(f"{item.kind} not yet: {e}")
                    seq += 1
                    heapq.heappush(queue, (self.now() + 5, seq, what, item))
                    continue
                if fault is not None:
                    seq += 1
                    heapq.heappush(queue, (self.now() + item.duration_s, seq, "end", fault))
            else:
                assert isinstance(item, Fault)
                self.end(item)
        self.heal()

    def _enough(self, enough_at_s: float | None) -> bool:
        return enough_at_s is not None and self.now() >= enough_at_s and \
            set(KINDS) <= {f.planned.kind for f in self.faults}

    def restart_stopped(self) -> None:
        """A node that stopped by itself (a broker whose every log dir failed), outside any fault of
        this nemesis, is restarted, as a supervisor would."""
        for n in self.cluster.nodes.values():
            if n.node_id not in self.busy and n.proc is not None and not n.alive():
                self.note(f"node {n.node_id} had stopped (exit {n.proc.returncode}): restarted")
                self.restart(n)

    def heal(self) -> None:
        """End every fault still going on, and restart every node that is down."""
        for f in list(self.active):
            self.end(f)
        for n in self.cluster.nodes.values():
            if not n.alive():
                self.note(f"node {n.node_id} was down: restarted")
                n.start()
        self.wait_starting()

    # -- faults
    def begin(self, p: Planned) -> Fault | None:
        node = self.target(p)
        if node is None and p.role != "moto":
            self.note(f"no free node for {p}")
            return None
        fault = Fault(p, node, self.now())
        try:
            getattr(self, "_" + p.kind.replace("-", "_"))(fault)
        except NotReady:
            raise
        except Exception as e:      # noqa: BLE001 - a fault that could not be applied is recorded, not fatal
            self.note(f"{p.kind} of node {node} failed: {e!r}")
            self.undo(fault)
            return None
        self.note(f"begin {p.kind} node={node} ({p.role}) {fault.detail}")
        self.active.append(fault)
        self.faults.append(fault)
        if node is not None:
            self.busy.add(node)
        return fault

    def end(self, fault: Fault) -> None:
        self.undo(fault)
        fault.end = self.now()
        self.active.remove(fault)
        self.note(f"end {fault.planned.kind} node={fault.node}")
        if fault.node is not None and not self._starting(fault.node):
            self.busy.discard(fault.node)

    def undo(self, fault: Fault) -> None:
        for step in reversed(fault.undo):
            try:
                step()
            except Exception as e:      # noqa: BLE001
                self.note(f"undoing {fault.planned.kind} of node {fault.node}: {e!r}")
        fault.undo.clear()

    def _kill(self, f: Fault) -> None:
        node = self.cluster.nodes[f.node]
        node.kill9()
        f.undo.append(lambda: self.restart(node))

    def _pause(self, f: Fault) -> None:
        node = self.cluster.nodes[f.node]
        os.kill(node.proc.pid, signal.SIGSTOP)
        f.undo.append(lambda: os.kill(node.proc.pid, signal.SIGCONT) if node.alive() else None)

    def _isolate(self, f: Fault) -> None:
        others = [m for m in self.cluster.nodes if m != f.node] + [HUB_HOST, MOTO_ID]
        for o in others:
            self._cut(f, f.node, o)
            if o != HUB_HOST:
                self._cut(f, o, f.node)

    def _controller_split(self, f: Fault) -> None:
        for o in CONTROLLERS:
            if o != f.node:
                self._cut(f, f.node, o)
                self._cut(f, o, f.node)
        f.detail = "from the other controllers"

    def _one_way(self, f: Fault) -> None:
        rng = random.Random(f.planned.pick)
        other = rng.choice([m for m in self.cluster.nodes if m != f.node])
        self._cut(f, f.node, other)
        f.detail = f"-> node {other} dropped"

    def _cut(self, f: Fault, src: int, dst: int) -> None:
        if (src, dst) in self.net.cuts:
            return          # another fault made this cut: that fault mends it
        self.net.cut(src, dst)
        f.undo.append(lambda: self.net.mend(src, dst))

    def _s3_outage(self, f: Fault) -> None:
        self.net.link(MOTO_ID, False)
        f.undo.append(lambda: self.net.link(MOTO_ID, True))

    def _lost_object(self, f: Fault) -> None:
        if any(a.planned.kind == "s3-outage" for a in self.active):
            # the listing would hang in the S3 client's retries (80 s at seed 11), holding every fault back
            raise NotReady("the object store is cut off")
        store = object_store_from_config(self.store)
        listing = list_partitions(store, self.lossy)
        gone = {start for start, _, _ in self.lost}
        segments = [s.metadata for s in (listing[0].segments if listing else ()) if s.metadata.start_offset not in gone]
        if len(segments) < 3:
            raise NotReady(f"{len(segments)} remote segments of {self.lossy}")
        lost = segments[0]
        key = segment_key(lost.segment_id, lost.start_offset, LOG_SUFFIX)
        store.delete(key)
        self.lost.append((lost.start_offset, lost.end_offset, key))
        f.detail = f"{self.lossy} [{lost.start_offset}, {lost.end_offset}] {key}"

    def _disk_full(self, f: Fault) -> None:
        node = self.cluster.nodes[f.node]
        filler = node.data_dir / "soak-filler"
        fd = os.open(filler, os.O_CREAT | os.O_WRONLY, 0o600)
        try:
            st = os.statvfs(node.data_dir)
            os.posix_fallocate(fd, 0, st.f_bavail * st.f_frsize)
        except OSError:
            pass            # ENOSPC on the last pages: full either way
        finally:
            os.close(fd)
        f.detail = "log dir at ENOSPC"

        def free():
            filler.unlink(missing_ok=True)
            if not node.alive():
                f.detail += "; the broker had stopped: restarted"
                self.restart(node)
        f.undo.append(free)

    def _slow_disk(self, f: Fault) -> None:
        delay = int(SLOW_DISK_MS[0] + f.planned.pick * (SLOW_DISK_MS[1] - SLOW_DISK_MS[0]))
        self._test_faults(f, {"disk_delay_ms": delay})
        f.detail = f"{delay} ms per append and fsync"

    def _clock_step(self, f: Fault) -> None:
        rng = random.Random(f.planned.pick)
        step_s = rng.uniform(*CLOCK_STEP_S) * rng.choice((-1, 1))
        self._test_faults(f, {"clock_offset_ms": int(step_s * 1000)})
        f.detail = f"wall clock {step_s:+.0f} s"

    def _test_faults(self, f: Fault, faults: dict) -> None:
        node = self.cluster.nodes[f.node]
        path = node.props["tierlog.test.faults.file"]

        def apply(what: dict) -> None:
            with open(path, "w") as out:
                out.write(json.dumps(what))
            if node.alive():
                os.kill(node.proc.pid, signal.SIGUSR2)
        apply(faults)
        f.undo.append(lambda: apply({}))

    # -- targets
    def target(self, p: Planned) -> int | None:
        if p.role == "moto":
            return None
        candidates = [n for n in self.holders(p.role) if n not in self.busy and self.cluster.nodes[n].alive()]
        if not candidates:
            pool = BROKERS if p.role not in ("controller", "active-controller") else CONTROLLERS
            candidates = [n for n in pool if n not in self.busy and self.cluster.nodes[n].alive()]
        if p.kind == "disk-full":
            candidates = [n for n in candidates if n in BROKERS]
        return candidates[int(p.pick * len(candidates))] if candidates else None

    def holders(self, role: str) -> list[int]:
        try:
            if role == "active-controller":
                return [leader] if (leader := self.quorum_leader()) is not None else []
            if role == "controller":
                return list(CONTROLLERS)
            if role == "broker":
                return list(BROKERS)
            if role == "leader":
                return sorted({p["LeaderId"] for p in self.partitions("soak-data") if p["LeaderId"] > 0})
            key_type, keys = (0, self.groups) if role == "group-coordinator" else (1, self.tids)
            return sorted({c for k in keys if (c := self.coordinator(key_type, k)) is not None})
        except (OSError, ConnectionError, KeyError, IndexError):
            return []

    def live_broker(self) -> SoakNode | None:
        return next((b for b in self.cluster.brokers if b.alive() and b.node_id not in self.busy), None)

    def quorum_leader(self) -> int | None:
        for c in self.cluster.controllers:
            if not c.alive() or c.node_id in self.busy:
                continue
            resp = request(c.host, c.port, ApiKey.DESCRIBE_QUORUM, {"Topics": [
                {"TopicName": "__cluster_metadata", "Partitions": [{"PartitionIndex": 0}]}]}, timeout_s=3)
            part = resp["Topics"][0]["Partitions"][0]
            if part["ErrorCode"] == 0 and part["LeaderId"] >= 0:
                return part["LeaderId"]
        return None

    def partitions(self, topic: str) -> list[dict]:
        b = self.live_broker()
        if b is None:
            return []
        resp = request(b.host, b.port, ApiKey.METADATA, {"Topics": [{"Name": topic, "TopicId": bytes(16)}],
                       "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False},
                       version=12, timeout_s=3)
        return resp["Topics"][0]["Partitions"] if resp["Topics"] and not resp["Topics"][0]["ErrorCode"] else []

    def coordinator(self, key_type: int, key: str) -> int | None:
        b = self.live_broker()
        if b is None:
            return None
        found = request(b.host, b.port, ApiKey.FIND_COORDINATOR, {"KeyType": key_type, "CoordinatorKeys": [key]},
                        version=4, timeout_s=3)["Coordinators"][0]
        return found["NodeId"] if found["ErrorCode"] == 0 else None

    # -- restarts
    def restart(self, node: SoakNode) -> None:
        """Spawn here (the main thread), wait for the ready line on a helper thread."""
        node.spawn()
        self.busy.add(node.node_id)

        def ready():
            try:
                node.wait_ready()
                self.note(f"node {node.node_id} ready again")
            except RuntimeError as e:
                self.note(f"node {node.node_id} did not start: {e}")
            finally:
                self.busy.discard(node.node_id)
        t = threading.Thread(target=ready, daemon=True, name=f"ready-{node.node_id}")
        node.starting = t  # type: ignore[attr-defined]
        t.start()

    def _starting(self, node_id: int) -> bool:
        t = getattr(self.cluster.nodes[node_id], "starting", None)
        return t is not None and t.is_alive()

    def wait_starting(self) -> None:
        for n in self.cluster.nodes.values():
            t = getattr(n, "starting", None)
            if t is not None:
                t.join(120)
