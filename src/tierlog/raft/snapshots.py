"""KIP-630 snapshots: the raw store interface, an in-memory store, and the framed
writer/reader the state machine uses.

A snapshot is identified by ``OffsetAndEpoch(end_offset, epoch)``: it holds the state
after every record below ``end_offset`` (exclusive); ``epoch`` is the epoch of the
record at ``end_offset - 1``. Its bytes are v2 record batches: a control batch with a
SnapshotHeader record (type 3) first, data batches, a control batch with a
SnapshotFooter record (type 4) last. With kraft.version 1 (KIP-853) a KRaftVersion
(type 5) and a Voters (type 6) control batch follow the header: the voter set in
effect at the snapshot's end. Batches in a snapshot use offsets from 0 and the
snapshot's epoch.

A raw writer becomes visible to ``list()``/``open()`` only once frozen (atomic
publish). A crash loses every unfrozen writer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Self

from tierlog.raft.codec import (
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    decode_with_types,
    encode_log_batch,
    parse_snapshot_header,
    snapshot_footer_value,
    snapshot_header_value,
)
from tierlog.raft.types import LogBatch, OffsetAndEpoch
from tierlog.raft.voters import (
    KRAFT_VERSION,
    KRAFT_VOTERS,
    VoterSet,
    decode_kraft_version,
    decode_voters,
    encode_kraft_version,
    encode_voters,
)

__all__ = [
    "InvalidSnapshotError",
    "MemorySnapshotStore",
    "RawSnapshotWriter",
    "SnapshotReader",
    "SnapshotStore",
    "SnapshotWriter",
]


class InvalidSnapshotError(Exception):
    """Snapshot bytes that do not decode or are not framed by header and footer."""


class RawSnapshotWriter(ABC):
    @property
    @abstractmethod
    def snapshot_id(self) -> OffsetAndEpoch: ...

    @property
    @abstractmethod
    def size(self) -> int: ...

    @abstractmethod
    def append(self, data: bytes) -> None: ...

    @abstractmethod
    def freeze(self) -> None:
        """Make the snapshot durable and visible atomically."""

    @abstractmethod
    def close(self) -> None:
        """Abandon the snapshot unless frozen."""


class SnapshotStore(ABC):
    """Snapshots of one replicated log, by id."""

    @abstractmethod
    def list(self) -> list[OffsetAndEpoch]:
        """Frozen snapshot ids, ascending by end offset."""

    @abstractmethod
    def create(self, snapshot_id: OffsetAndEpoch) -> RawSnapshotWriter: ...

    @abstractmethod
    def size(self, snapshot_id: OffsetAndEpoch) -> int | None: ...

    @abstractmethod
    def read(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes | None:
        """Bytes ``[position, position + max_bytes)``; None if the snapshot is gone."""

    @abstractmethod
    def delete(self, snapshot_id: OffsetAndEpoch) -> None: ...

    def latest(self) -> OffsetAndEpoch | None:
        ids = self.list()
        return ids[-1] if ids else None

    def earliest(self) -> OffsetAndEpoch | None:
        ids = self.list()
        return ids[0] if ids else None

    def read_all(self, snapshot_id: OffsetAndEpoch) -> bytes | None:
        size = self.size(snapshot_id)
        return None if size is None else self.read(snapshot_id, 0, size)


class _MemoryRawWriter(RawSnapshotWriter):
    def __init__(self, store: MemorySnapshotStore, snapshot_id: OffsetAndEpoch):
        self._store = store
        self._id = snapshot_id
        self._buf = bytearray()
        self._frozen = False

    @property
    def snapshot_id(self) -> OffsetAndEpoch:
        return self._id

    @property
    def size(self) -> int:
        return len(self._buf)

    def append(self, data: bytes) -> None:
        assert not self._frozen
        self._buf += data

    def freeze(self) -> None:
        assert not self._frozen
        self._frozen = True
        self._store._snapshots[self._id] = bytes(self._buf)

    def close(self) -> None:
        self._buf = bytearray()


class MemorySnapshotStore(SnapshotStore):
    """Frozen snapshots survive a crash; unfrozen writers are just dropped."""

    def __init__(self) -> None:
        self._snapshots: dict[OffsetAndEpoch, bytes] = {}

    def list(self) -> list[OffsetAndEpoch]:
        return sorted(self._snapshots)

    def create(self, snapshot_id: OffsetAndEpoch) -> RawSnapshotWriter:
        return _MemoryRawWriter(self, snapshot_id)

    def size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        data = self._snapshots.get(snapshot_id)
        return None if data is None else len(data)

    def read(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes | None:
        data = self._snapshots.get(snapshot_id)
        return None if data is None else data[position:position + max_bytes]

    def delete(self, snapshot_id: OffsetAndEpoch) -> None:
        self._snapshots.pop(snapshot_id, None)


class SnapshotWriter:
    """What ``RaftNode.create_snapshot`` hands to the state machine.

    ``append(records)`` writes one batch of record values; ``freeze()`` adds the footer
    and publishes atomically (then the node may advance its log begin offset);
    ``close()`` abandons an unfrozen snapshot.
    """

    def __init__(self, raw: RawSnapshotWriter, last_contained_ts_ms: int,
                 on_freeze: Callable[[OffsetAndEpoch, int, float], None], max_batch_records: int = 1000,
                 clock: Callable[[], float] | None = None, voters: VoterSet | None = None):
        self._raw = raw
        self._epoch = raw.snapshot_id.epoch
        self._next = 0
        self._ts = last_contained_ts_ms
        self._on_freeze = on_freeze
        self._max = max_batch_records
        self._clock = clock  # seconds, for the latency metric only (injected: no time in the core)
        self._started = clock() if clock else 0.0
        self.frozen = False
        self._control(SNAPSHOT_HEADER, snapshot_header_value(last_contained_ts_ms))
        if voters is not None:  # KIP-853: the voter set in effect at the snapshot's end
            self._control(KRAFT_VERSION, encode_kraft_version(1))
            self._control(KRAFT_VOTERS, encode_voters(voters))

    @property
    def snapshot_id(self) -> OffsetAndEpoch:
        return self._raw.snapshot_id

    @property
    def last_contained_ts_ms(self) -> int:
        return self._ts

    def _write(self, batch: LogBatch, control_type: int = SNAPSHOT_HEADER) -> None:
        self._raw.append(encode_log_batch(batch, control_type))
        self._next = batch.next_offset

    def _control(self, control_type: int, value: bytes) -> None:
        self._write(LogBatch(self._next, self._epoch, self._ts, (value,), True), control_type)

    def append(self, records: list[bytes]) -> None:
        assert not self.frozen, "snapshot already frozen"
        for i in range(0, len(records), self._max):
            chunk = tuple(records[i:i + self._max])
            self._write(LogBatch(self._next, self._epoch, self._ts, chunk))

    def freeze(self) -> None:
        assert not self.frozen
        self._control(SNAPSHOT_FOOTER, snapshot_footer_value())
        self._raw.freeze()
        self.frozen = True
        elapsed_ms = (self._clock() - self._started) * 1000.0 if self._clock else 0.0
        self._on_freeze(self.snapshot_id, self._raw.size, elapsed_ms)

    def close(self) -> None:
        if not self.frozen:
            self._raw.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SnapshotReader:
    """A frozen snapshot for ``handle_load_snapshot``: iterate record values (header and
    footer are checked and hidden)."""

    def __init__(self, snapshot_id: OffsetAndEpoch, data: bytes):
        self.snapshot_id = snapshot_id
        try:
            decoded = decode_with_types(data)
        except Exception as e:  # any decode failure is a corrupt snapshot
            raise InvalidSnapshotError(f"snapshot {snapshot_id}: {e}") from e
        if len(decoded) < 2 or decoded[0][1] != [SNAPSHOT_HEADER] or decoded[-1][1] != [SNAPSHOT_FOOTER]:
            raise InvalidSnapshotError(f"snapshot {snapshot_id} is not framed by header and footer")
        self.last_contained_ts_ms = parse_snapshot_header(decoded[0][0].records[0])
        self._batches = [b for b, _types in decoded[1:-1] if not b.control]
        self.size_bytes = len(data)
        #: KIP-853: the finalized kraft.version and the voter set at the snapshot's end
        self.kraft_version = 0
        self.voters: VoterSet | None = None
        try:
            for b, types in decoded[1:-1]:
                if b.control and types == [KRAFT_VERSION]:
                    self.kraft_version = decode_kraft_version(b.records[0])
                elif b.control and types == [KRAFT_VOTERS]:
                    self.voters = decode_voters(b.records[0])
        except Exception as e:  # a malformed control record is a corrupt snapshot
            raise InvalidSnapshotError(f"snapshot {snapshot_id}: {e}") from e

    def batches(self) -> Iterator[LogBatch]:
        return iter(self._batches)

    def __iter__(self) -> Iterator[bytes]:
        for batch in self._batches:
            yield from batch.records
