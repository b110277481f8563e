"""Remote storage of log segments (Kafka's RemoteStorageManager) over an ObjectStore.

``copy_log_segment`` uploads the segment's ``.log`` unchanged and its indexes
(the ``.txnindex`` too when the segment has one), producer snapshot and
leader-epoch checkpoint as separate objects, verifies
each one (the size and CRC-32C the store holds must equal the local file's),
and only then writes the ``.manifest`` (see :mod:`tierlog.tiered.manifest`).
Before anything is written, every batch of the local ``.log`` is checked
(sizes, CRC-32C): a segment whose data went bad on the local disk since it was
appended raises ``CorruptLocalSegmentError`` and is never uploaded (remote
storage would keep the damage after local retention deleted the good replicas).
A failed copy deletes whatever it wrote and raises ``RemoteStorageError``.

With ``rsm.config.encryption.enabled`` (``EncryptionSettings``), each upload gets
a fresh data key and every object is stored encrypted (``tiered.encryption``'s
chunked format, through ``EncryptedObjects``); the size and CRC-32C verified and
recorded are the stored (encrypted) form's, and the key id goes into the
manifest and the metadata's CustomMetadata, from which reads know to decrypt
(ranges of the ``.log`` fetch only the chunks that hold them).
``delete_log_segment`` removes the manifest first, so a half-deleted segment
reads as unfinished, never as whole. Every call is idempotent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from crc32c import crc32c

from tierlog.storage.batch_scan import ScanStop, scan_valid_batches
from tierlog.tiered.encrypted_objects import EncryptedObjects
from tierlog.tiered.encryption import (
    ObjectContext,
    custom_metadata,
    encrypted_key_id,
    new_data_key,
)
from tierlog.tiered.encryption_config import EncryptionSettings
from tierlog.tiered.layout import LOG_SUFFIX, MANIFEST_SUFFIX, IndexType, segment_key
from tierlog.tiered.manifest import SegmentManifest
from tierlog.tiered.object_store import (
    ObjectChecksum,
    ObjectStore,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
)

__all__ = ["CorruptLocalSegmentError", "LogSegmentData", "RemoteSegmentStore", "UploadVerificationError",
           "check_local_segment", "file_checksum"]

_READ_CHUNK_BYTES = 1024 * 1024
_ALL_SUFFIXES = (LOG_SUFFIX, *(t.value for t in IndexType), MANIFEST_SUFFIX)


class UploadVerificationError(RemoteStorageError):
    """What the store holds after an upload differs from what was sent."""


class CorruptLocalSegmentError(RemoteStorageError):
    """The local segment to upload has a batch that fails its checks: it is not uploaded."""


def check_local_segment(path: Path) -> None:
    """Check every batch of a local ``.log`` (sizes, CRC-32C); CorruptLocalSegmentError at the first bad one."""
    stop = ScanStop()
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        for _ in scan_valid_batches(fd, size, stop):
            pass
    finally:
        os.close(fd)
    if stop.error is not None:
        raise CorruptLocalSegmentError(f"{path}: bad batch at position {stop.position} ({stop.error}); "
                                       "not uploading it")


@dataclass(frozen=True, slots=True)
class LogSegmentData:
    """Kafka's ``LogSegmentData``: the local files of one rolled segment."""

    log_segment: Path
    offset_index: Path
    time_index: Path
    producer_snapshot: Path | None      # producer state at the next segment's base offset
    leader_epoch_checkpoint: bytes      # the epoch history up to the next segment's base offset
    transaction_index: Path | None = None   # the segment's .txnindex (None: no aborted transaction ends in it)


def file_checksum(path: Path) -> ObjectChecksum:
    """Size and CRC-32C of a local file, read in 1 MiB chunks."""
    crc, size = 0, 0
    with open(path, "rb") as src:
        while chunk := src.read(_READ_CHUNK_BYTES):
            crc = crc32c(chunk, crc)
            size += len(chunk)
    return ObjectChecksum(size, crc)


class RemoteSegmentStore:
    """Copy, read and delete segments in one object store."""

    def __init__(self, store: ObjectStore, encryption: EncryptionSettings | None = None,
                 staging_dir: Path | None = None) -> None:
        self.store = store
        self.encryption = encryption or EncryptionSettings(None)
        self._encrypted = EncryptedObjects(store, self.encryption, staging_dir)

    def _key(self, metadata: RemoteLogSegmentMetadata, suffix: str) -> str:
        return segment_key(metadata.segment_id, metadata.start_offset, suffix)

    # --- copy -------------------------------------------------------------------------------

    def copy_log_segment(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> SegmentManifest:
        """Upload, verify, then write the manifest; on failure clean up and raise."""
        try:
            check_local_segment(data.log_segment)
            if self.encryption.enabled:
                keys = self.encryption.keys
                assert keys is not None and keys.active_id is not None, "encryption on means an active key"
                metadata = replace(metadata, custom_metadata=custom_metadata(keys.active_id))
            objects = self._upload_all(metadata, data)
            manifest = SegmentManifest(
                metadata.with_state(RemoteLogSegmentState.COPY_SEGMENT_FINISHED), objects)
            self.store.put_bytes(self._key(metadata, MANIFEST_SUFFIX), manifest.to_json())
        except (RemoteStorageError, OSError) as exc:
            self._delete_quietly(metadata)
            if isinstance(exc, RemoteStorageError):
                raise
            raise RemoteStorageError(f"cannot copy segment {metadata.start_offset}: {exc}") from exc
        return manifest

    def _upload_all(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> dict[str, ObjectChecksum]:
        files = {LOG_SUFFIX: data.log_segment, IndexType.OFFSET.value: data.offset_index,
                 IndexType.TIMESTAMP.value: data.time_index}
        if data.producer_snapshot is not None:
            files[IndexType.PRODUCER_SNAPSHOT.value] = data.producer_snapshot
        if data.transaction_index is not None:
            files[IndexType.TRANSACTION.value] = data.transaction_index
        data_key = new_data_key() if self.encryption.enabled else None
        objects = {}
        for suffix, path in files.items():
            key = self._key(metadata, suffix)
            if data_key is None:
                expected = file_checksum(path)
                self.store.put_file(key, path)
            else:
                expected = self._encrypted.put_file(key, path, _context(metadata, suffix), data_key)
            objects[suffix] = self._verified(metadata, suffix, expected)
        epochs = bytes(data.leader_epoch_checkpoint)
        suffix = IndexType.LEADER_EPOCH.value
        if data_key is None:
            self.store.put_bytes(self._key(metadata, suffix), epochs)
            expected = ObjectChecksum(len(epochs), crc32c(epochs))
        else:
            expected = self._encrypted.put_bytes(self._key(metadata, suffix), epochs, _context(metadata, suffix),
                                                 data_key)
        objects[suffix] = self._verified(metadata, suffix, expected)
        return objects

    def _verified(self, metadata: RemoteLogSegmentMetadata, suffix: str, expected: ObjectChecksum) -> ObjectChecksum:
        stored = self.store.checksum(self._key(metadata, suffix))
        if stored != expected:
            raise UploadVerificationError(
                f"{self._key(metadata, suffix)}: stored {stored.size} bytes crc32c {stored.crc32c:#010x}, "
                f"sent {expected.size} bytes crc32c {expected.crc32c:#010x}")
        return stored

    # --- read -------------------------------------------------------------------------------

    def fetch_log_segment(self, metadata: RemoteLogSegmentMetadata, start_position: int,
                          end_position: int | None = None) -> bytes | bytearray:
        """Bytes [start_position, end_position) of the segment's ``.log`` (None: to its end), decrypted
        when the segment is encrypted."""
        return self._get(metadata, LOG_SUFFIX, start_position, end_position)

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> bytes:
        """The whole index object of ``index_type`` (decrypted when the segment is encrypted)."""
        return bytes(self._get(metadata, index_type.value, 0, None))

    def fetch_transaction_index(self, metadata: RemoteLogSegmentMetadata) -> bytes:
        """The segment's ``.txnindex``; empty when it was uploaded without one (Kafka's
        RemoteIndexCache takes a missing transaction index as an empty one)."""
        try:
            return self.fetch_index(metadata, IndexType.TRANSACTION)
        except RemoteResourceNotFoundError:
            return b""

    def _get(self, metadata: RemoteLogSegmentMetadata, suffix: str, start: int,
             end: int | None) -> bytes | bytearray:
        key_id = encrypted_key_id(metadata.custom_metadata)
        if key_id is None:
            return self.store.get_range(self._key(metadata, suffix), start, end)
        return self._encrypted.get_range(self._key(metadata, suffix), key_id, _context(metadata, suffix), start, end)

    def authenticate(self, metadata: RemoteLogSegmentMetadata, suffix: str) -> None:
        """Decrypt every chunk of an encrypted segment's object (``tierlog remote verify``): raises
        CorruptRemoteDataError or RemoteEncryptionKeyError; nothing to do for a plain segment."""
        key_id = encrypted_key_id(metadata.custom_metadata)
        if key_id is not None:
            self._encrypted.authenticate(self._key(metadata, suffix), key_id, _context(metadata, suffix))

    # --- delete -----------------------------------------------------------------------------

    def delete_log_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Delete every object of the segment, manifest first; missing objects are fine."""
        for suffix in (MANIFEST_SUFFIX, *_ALL_SUFFIXES[:-1]):
            self.store.delete(self._key(metadata, suffix))

    def _delete_quietly(self, metadata: RemoteLogSegmentMetadata) -> None:
        try:
            self.delete_log_segment(metadata)
        except RemoteStorageError:     # the copy failed already; the next attempt cleans up again
            pass


def _context(metadata: RemoteLogSegmentMetadata, suffix: str) -> ObjectContext:
    return ObjectContext(metadata.segment_id.id, suffix)
