"""CommitApplier: the node's consumer of what its Raft replica committed (etcd's apply loop).

The Raft core never calls up: each of its Outputs carries what became committed
(``Output.committed``, raft/committed.py) and RaftDriver puts those items, in order,
on the node's ``committed`` queue. One task here (``run``) takes them one at a time:

- a batch: ``MetadataLoader.handle_commit`` builds the next image and publishes it to
  the loader's subscribers (the snapshot generator, the broker's MetadataView and
  ReplicaManager, which applies a large change in slices: broker/apply_slices.py);
  then the apply metrics, then the controller role (the active controller's committed
  offset, or a standby's new image);
- a snapshot to load: the loader rebuilds the image from it, the snapshot generator
  counts from there (KIP-630: nothing pending before the snapshot's end), a standby
  controller takes the image;
- a leader change: the image's controller id, then the controller role becomes active
  or standby (``ControllerServer.on_leader_change``), failing the requests still
  waiting on the old term.

After each item the applied offset moves (``AppliedOffset``: the controller's
requests wait on it, so a response leaves once its records are committed and applied
on this node); after each turn it goes back to the Raft core (``on_applied``, the
driver's ``applied``), which hands out at most ``raft.commits.UNAPPLIED_BYTES_MAX``
beyond what was applied, so the queue is bounded. The task applies what is queued for up to ``APPLY_TURN_MS`` (at least
one item), then gives the event loop a turn: a long run of commits holds the loop for
about that long, or one batch (at most RaftConfig.max_batch_records records) when a
batch takes longer; small commits do not wait a loop turn each (behind a broker's
apply slices, that turn can be long).

Ordering kept from the core: a snapshot before the batches after it; a leader's own
announcement after every batch before its epoch, so the controller becomes active on
an image that has the whole previous term; every item in log order. The queue holds
at most what the core handed out and this task has not applied yet: about
``COMMITTED_BYTES_PER_OUTPUT`` per Output and ``UNAPPLIED_BYTES_MAX`` in all
(raft/commits.py).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tierlog.clock import monotonic_ms, wall_clock_ms
from tierlog.metadata.apply_metrics import ApplyMetrics
from tierlog.metadata.loader import MetadataLoader
from tierlog.metadata.snapshot_generator import SnapshotGenerator
from tierlog.raft.committed import Committed, CommittedBatch, hand_to
from tierlog.raft.snapshots import SnapshotReader
from tierlog.raft.types import LeaderAndEpoch

from .applied_offset import AppliedOffset
from .controller_server import ControllerServer

__all__ = ["APPLY_TURN_MS", "CommitApplier"]

log = logging.getLogger(__name__)
APPLY_TURN_MS = 20      # the longest run of applies before the event loop gets a turn (apply_slices' too)


class CommitApplier:
    """Applies ``committed`` items in order (``run`` is the node's task); the three
    ``handle_*`` methods apply one item each (``raft.committed.CommittedHandler``)."""

    def __init__(self, committed: asyncio.Queue[Committed], loader: MetadataLoader, generator: SnapshotGenerator,
                 apply_metrics: ApplyMetrics, applied: AppliedOffset, controller: ControllerServer | None,
                 on_applied: Callable[[int], None]):
        self._committed = committed
        self.loader = loader
        self._generator = generator
        self._apply_metrics = apply_metrics
        self._applied = applied
        self._controller = controller       # None: not a controller
        self._on_applied = on_applied       # the applied offset, back to the Raft core after each turn

    async def run(self) -> None:
        """Apply items as they come, for up to APPLY_TURN_MS per turn of the event loop, until cancelled."""
        try:
            while True:
                self.apply(await self._committed.get())
                turn_ends = monotonic_ms() + APPLY_TURN_MS
                while not self._committed.empty() and monotonic_ms() < turn_ends:
                    self.apply(self._committed.get_nowait())
                self._on_applied(self._applied.value)
                await asyncio.sleep(0)
        finally:
            self._applied.fail_waiting(ConnectionError("the node is stopping"))

    def apply(self, item: Committed) -> None:
        try:
            hand_to(self, item)
        except Exception:
            log.exception("applying committed metadata %r failed", _describe(item))

    def handle_commit(self, batch: CommittedBatch) -> None:
        applied_before = self.loader.image.provenance.last_contained_offset
        self.loader.handle_commit(batch)
        if batch.last_offset > applied_before:          # not skipped as already in a snapshot
            self._apply_metrics.batch_applied(batch.last_offset, batch.append_timestamp, wall_clock_ms())
            self._count_errors()
        if self._controller is not None:
            self._controller.on_committed_image(self.loader.image, batch.last_offset)
        self._applied.advance(batch.last_offset + 1)

    def handle_load_snapshot(self, reader: SnapshotReader) -> None:
        self.loader.handle_load_snapshot(reader)
        provenance = self.loader.image.provenance
        self._apply_metrics.snapshot_loaded(provenance.last_contained_offset, provenance.last_contained_log_time_ms)
        self._count_errors()
        self._generator.on_snapshot_loaded(reader.snapshot_id.offset, wall_clock_ms())
        if self._controller is not None:
            self._controller.on_snapshot_loaded(self.loader.image)
        self._applied.advance(reader.snapshot_id.offset)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.loader.handle_leader_change(leader)
        self._count_errors()
        if self._controller is not None:
            self._controller.on_leader_change(leader, self.loader.image)

    def _count_errors(self) -> None:
        self._apply_metrics.set_load_errors(self.loader.error_count)
        self._apply_metrics.set_apply_errors(self.loader.apply_error_count)


def _describe(item: Committed) -> str:
    if isinstance(item, CommittedBatch):
        return f"batch {item.base_offset}-{item.last_offset}"
    if isinstance(item, SnapshotReader):
        return f"snapshot {item.snapshot_id}"
    return f"leader change {item}"
