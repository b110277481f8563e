"""MetadataLoader: turns the committed metadata log into images.

Used by brokers and controllers alike; the node's CommitApplier
(server/commit_applier.py) calls the three handle_* methods with the items the
Raft core's Outputs carried (``Output.committed``), in log order::

    loader = MetadataLoader(cluster_id=..., image=None)
    loader.subscribe(lambda image, delta: ...)

* ``handle_commit(batch)``: ``batch.records`` (framed record bytes),
  ``batch.last_offset`` (inclusive), ``batch.epoch``, ``batch.append_timestamp``.
  The records are decoded and replayed onto one :class:`MetadataDelta` (its
  ``now_ms`` is the batch's append timestamp, so every node derives broker
  events identically), one new image per batch is built and published to every
  subscriber as ``(image, delta)``. Batches at or below the image's last
  contained offset are skipped (already in a loaded snapshot).
* ``handle_load_snapshot(reader)``: iterates the reader (record bytes, or
  batches with ``.records``), rebuilds the image from scratch, provenance
  ``reader.snapshot_id.offset`` (or ``.end_offset``; exclusive) ``- 1`` and
  ``.epoch``, log time ``reader.last_contained_ts_ms``, and publishes it.
* a control batch (``batch.control``) only advances the image's provenance.
* ``handle_leader_change(leader_and_epoch)``: the image's ``controller_id``
  becomes the quorum leader (``leader_id``, -1 when unknown); published too.

A record that cannot be decoded or replayed is reported in ``errors`` (offset
range, message; the first ``ERRORS_MAX``) and counted in ``error_count``, and
skipped; the rest of the batch still applies.  A subscriber that raises is
logged and counted in ``apply_error_count`` (Kafka's metadata-apply-error-count,
a broker's non-fatal publishing fault); the other subscribers still get the image.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Protocol

from tierlog.protocol.primitives import ProtocolError

from .cluster_records import decode
from .delta import MetadataDelta, MetadataReplayError
from .image import MetadataImage, MetadataProvenance

__all__ = ["MetadataLoader"]

_log = logging.getLogger(__name__)
ERRORS_MAX = 100

#: ``callback(image, delta)``, called with every new image
Subscriber = Callable[[MetadataImage, MetadataDelta], object]


class CommittedRecords(Protocol):
    """A committed batch (the Raft core's ``CommittedBatch``); ``control`` is read when present."""

    @property
    def records(self) -> Iterable[bytes]: ...
    @property
    def last_offset(self) -> int: ...           # inclusive
    @property
    def epoch(self) -> int: ...
    @property
    def append_timestamp(self) -> int: ...


class SnapshotId(Protocol):
    """The Raft core's ``OffsetAndEpoch`` (``offset`` exclusive; an ``end_offset`` wins when present)."""

    @property
    def offset(self) -> int: ...
    @property
    def epoch(self) -> int: ...


class SnapshotSource(Protocol):
    """A frozen snapshot: its id, and its record bytes (or batches of them) in order."""

    @property
    def snapshot_id(self) -> SnapshotId: ...
    def __iter__(self) -> Iterator[bytes | CommittedRecords]: ...


class MetadataLoader:
    def __init__(self, image: MetadataImage | None = None, *, cluster_id: str = "",
                 controller_id: int = -1):
        self.image = image or MetadataImage.empty(cluster_id, controller_id)
        self._subscribers: list[Subscriber] = []
        self.errors: list[tuple[int, str]] = []     # (batch last offset, message), bounded
        self.error_count = 0                          # every skipped record, also past ERRORS_MAX
        self.apply_error_count = 0                    # subscriber failures
        self.leader_epoch = -1

    def subscribe(self, callback: Subscriber) -> None:
        """``callback(image, delta)`` after every new image; gets the current one now."""
        self._subscribers.append(callback)

    def _publish(self, image: MetadataImage, delta: MetadataDelta) -> None:
        self.image = image
        for cb in list(self._subscribers):
            try:
                cb(image, delta)
            except Exception:       # noqa: BLE001 - one failing part must not starve the others
                self.apply_error_count += 1
                _log.exception("applying the metadata image at offset %d failed in %r",
                               image.provenance.last_contained_offset, cb)

    def _error(self, offset: int, msg: str) -> None:
        _log.error("metadata record at batch ending %d skipped: %s", offset, msg)
        self.error_count += 1
        if len(self.errors) < ERRORS_MAX:
            self.errors.append((offset, msg))

    def _replay(self, delta: MetadataDelta, data: bytes | bytearray | memoryview, offset: int) -> None:
        try:
            record = decode(data)
            delta.replay(record)
        except (ProtocolError, MetadataReplayError) as exc:
            self._error(offset, str(exc))
            return
        delta.bytes_replayed += len(data)

    def handle_commit(self, batch: CommittedRecords) -> None:
        if batch.last_offset <= self.image.provenance.last_contained_offset:
            return
        prov = MetadataProvenance(batch.last_offset, batch.epoch, batch.append_timestamp)
        if getattr(batch, "control", False):
            # Raft control records are not metadata: only the position advances
            self.image = replace(self.image, provenance=prov)
            return
        delta = MetadataDelta(self.image, now_ms=batch.append_timestamp)
        for data in batch.records:
            self._replay(delta, data, batch.last_offset)
        self._publish(delta.apply(prov), delta)

    def handle_load_snapshot(self, reader: SnapshotSource) -> None:
        sid = reader.snapshot_id
        end = getattr(sid, "end_offset", None)
        if end is None:
            end = sid.offset                      # raft.types.OffsetAndEpoch
        ts = getattr(reader, "last_contained_ts_ms",
                     getattr(reader, "last_contained_log_timestamp", -1))
        base = MetadataImage.empty(self.image.cluster_id, self.image.controller_id)
        delta = MetadataDelta(base, now_ms=ts)
        for item in reader:
            for data in (item,) if isinstance(item, (bytes, bytearray, memoryview)) else item.records:
                self._replay(delta, data, end - 1)
        prov = MetadataProvenance(end - 1, sid.epoch, ts)
        self._publish(delta.apply(prov), delta)

    def handle_leader_change(self, leader_and_epoch: object) -> None:
        leader = getattr(leader_and_epoch, "leader_id", None)
        if leader is None:
            leader = getattr(leader_and_epoch, "leader", -1)
        self.leader_epoch = getattr(leader_and_epoch, "epoch", self.leader_epoch)
        leader = -1 if leader is None else leader
        if leader == self.image.controller_id:
            return
        delta = MetadataDelta(self.image)
        self._publish(replace(self.image, controller_id=leader, epoch=self.image.epoch + 1), delta)
