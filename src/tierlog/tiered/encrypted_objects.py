"""Encrypted objects in an ObjectStore: the IO around ``tiered.encryption``'s format.

``put_file`` / ``put_bytes`` encrypt an object of a segment upload under the
segment's data key (a file goes through a temporary file in ``staging_dir``,
then up with the store's ``put_file``, so S3 still gets a multipart upload) and
return the size and CRC-32C of the stored form, which the upload verifies.
``get_range`` maps a plaintext range to the stored chunks that hold it, GETs
only those and decrypts them; each object's header is read once and its
unwrapped data key kept (at most DECRYPTORS_CACHED objects). ``authenticate``
decrypts a whole object piece by piece (``tierlog remote verify``).

Errors: ``RemoteEncryptionKeyError`` (no key with the id the segment names, or
a key that does not open it) and ``CorruptRemoteDataError`` (a chunk that fails
authentication, a truncated object): never bytes that were not authenticated.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import BinaryIO

from crc32c import crc32c

from tierlog.tiered.batch_check import CorruptRemoteDataError
from tierlog.tiered.encryption import (
    HEADER_BYTES,
    DecryptionError,
    EncryptionKeyError,
    ObjectContext,
    ObjectDecryptor,
    ObjectEncryptor,
    ObjectHeader,
)
from tierlog.tiered.encryption_config import EncryptionSettings
from tierlog.tiered.object_store import ObjectChecksum, ObjectStore, RemoteStorageError

__all__ = ["DECRYPTORS_CACHED", "EncryptedObjects", "RemoteEncryptionKeyError"]

DECRYPTORS_CACHED = 4096
AUTHENTICATE_READ_BYTES = 8 * 1024 * 1024
_NO_KEY_HINT = "set rsm.config.encryption.keys.{id}.file (or .env) to read it"


class RemoteEncryptionKeyError(RemoteStorageError):
    """A remote object is encrypted under a key that is not available, or that does not open it."""


class EncryptedObjects:
    def __init__(self, store: ObjectStore, settings: EncryptionSettings, staging_dir: Path | None = None) -> None:
        self.store = store
        self.settings = settings
        self.staging_dir = staging_dir
        if staging_dir is not None and staging_dir.is_dir():     # left by a process that died mid-upload
            for leftover in staging_dir.glob("upload-*.tmp"):
                leftover.unlink(missing_ok=True)
        self._decryptors: OrderedDict[str, ObjectDecryptor] = OrderedDict()
        self._lock = threading.Lock()

    # --- write --------------------------------------------------------------------------------

    def _encryptor(self, data_key: bytes, context: ObjectContext, size: int) -> ObjectEncryptor:
        assert self.settings.keys is not None and self.settings.enabled
        return ObjectEncryptor(self.settings.keys, data_key, context, size, self.settings.chunk_size)

    def put_bytes(self, key: str, data: bytes, context: ObjectContext, data_key: bytes) -> ObjectChecksum:
        enc = self._encryptor(data_key, context, len(data))
        stored = enc.header() + b"".join(enc.chunks(data))
        self.store.put_bytes(key, stored)
        return ObjectChecksum(len(stored), crc32c(stored))

    def put_file(self, key: str, path: Path, context: ObjectContext, data_key: bytes) -> ObjectChecksum:
        if self.staging_dir is not None:
            self.staging_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="upload-", suffix=".tmp", dir=self.staging_dir)
        try:
            with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
                checksum = self._encrypt_file(src, out, context, data_key)
            self.store.put_file(key, Path(tmp))
            return checksum
        finally:
            Path(tmp).unlink(missing_ok=True)

    def _encrypt_file(self, src: BinaryIO, out: BinaryIO, context: ObjectContext, data_key: bytes) -> ObjectChecksum:
        enc = self._encryptor(data_key, context, os.fstat(src.fileno()).st_size)
        crc = 0
        for index in range(-1, enc.layout.chunks):
            piece: bytes | bytearray
            if index < 0:
                piece = enc.header()
            else:
                plain = src.read(enc.layout.plain_length(index))
                if len(plain) != enc.layout.plain_length(index):
                    raise RemoteStorageError(f"{src.name} changed while it was encrypted for upload")
                piece = enc.chunk(index, plain)
            out.write(piece)
            crc = crc32c(piece, crc)
        return ObjectChecksum(enc.layout.stored_size, crc)

    # --- read ---------------------------------------------------------------------------------

    def get_range(self, key: str, key_id: str, context: ObjectContext, start: int,
                  end: int | None = None) -> bytes | bytearray:
        """Plaintext [start, end) of the object (``end`` None: to its end); fewer at its end (a
        bytearray no one else holds: the caller may keep it)."""
        dec = self._decryptor(key, key_id, context)
        end = dec.layout.plain_size if end is None else min(end, dec.layout.plain_size)
        if start >= end:
            return b""
        first, stored_start, stored_end = dec.layout.span(start, end)
        stored = self.store.get_range(key, stored_start, stored_end)
        try:
            return dec.decrypt(stored, first, start, end)
        except DecryptionError as exc:
            raise CorruptRemoteDataError(f"{key}: {exc}") from None

    def authenticate(self, key: str, key_id: str, context: ObjectContext) -> None:
        """Decrypt the whole object (its every chunk must open); CorruptRemoteDataError if one does not."""
        dec = self._decryptor(key, key_id, context, cache=False)
        size = self.store.checksum(key).size
        if size != dec.layout.stored_size:
            raise CorruptRemoteDataError(f"{key}: {size} bytes stored, its header says {dec.layout.stored_size}")
        for start in range(0, dec.layout.plain_size, AUTHENTICATE_READ_BYTES):
            self.get_range(key, key_id, context, start, start + AUTHENTICATE_READ_BYTES)

    def _decryptor(self, key: str, key_id: str, context: ObjectContext, cache: bool = True) -> ObjectDecryptor:
        with self._lock:
            found = self._decryptors.get(key)
            if found is not None:
                self._decryptors.move_to_end(key)
                return found
        keys = self.settings.keys
        if keys is None or key_id not in keys.key_ids:
            raise RemoteEncryptionKeyError(f"{key} is encrypted under key {key_id!r}, which is not configured; "
                                           + _NO_KEY_HINT.format(id=key_id))
        try:
            header = ObjectHeader.parse(self.store.get_range(key, 0, HEADER_BYTES))
            if header.key_id != key_id:
                raise DecryptionError(f"its header names key {header.key_id!r}, its metadata {key_id!r}")
            dec = ObjectDecryptor(keys, header, context)
        except DecryptionError as exc:
            raise CorruptRemoteDataError(f"{key}: {exc}") from None
        except EncryptionKeyError as exc:
            raise RemoteEncryptionKeyError(f"{key}: {exc}") from None
        if cache:
            with self._lock:
                self._decryptors[key] = dec
                while len(self._decryptors) > DECRYPTORS_CACHED:
                    self._decryptors.popitem(last=False)
        return dec
