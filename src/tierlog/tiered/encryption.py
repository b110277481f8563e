"""Remote objects encrypted at rest: key wrapping and chunk framing (sans-IO).

Every object of an encrypted segment upload (``.log``, ``.index``,
``.timeindex``, ``.snapshot``, ``.leader_epoch_checkpoint``) is one fixed-size
header followed by the plaintext cut into chunks of ``chunk_size`` bytes (the
last one shorter), each encrypted on its own with AES-256-GCM::

    header (HEADER_BYTES = 128, big-endian)
      0   magic           4   b"\\xfftle" (never the start of a plain object: base offsets
                                          and index entries are not negative)
      4   format          1   1
      5   key id length   1
      6   key id         32   the key-encryption key's id, ASCII, zero padded
      38  chunk size      4   plaintext bytes per chunk
      42  plain size      8   plaintext bytes of the object
      50  wrap nonce     12
      62  wrapped key    48   the segment's data key (32 bytes) + GCM tag, under the KEK
      110 reserved       18   zero
    chunk i, for i in [0, ceil(plain size / chunk size)):
      nonce 12 (random) | ciphertext (chunk size bytes, less for the last) | tag 16

**Keys.** Each upload gets a fresh 256-bit *data key*, shared by the objects of
that segment and nowhere else. It is stored in each object's header wrapped
(AES-256-GCM) by a *key-encryption key* (KEK) named by its id; the wrap's
associated data is the header's first 50 bytes plus the object's context, so the
key id, chunk size and plain size cannot be altered and a header cannot be moved
to another object. Rotation: new uploads use the active KEK; older segments name
theirs, which stays in the ``KeyRing`` for reading.

**Chunks.** A chunk's associated data is the object's context (segment id,
object suffix) and the chunk's index: chunks cannot be reordered, nor moved to
another object or segment. Chunk i starts at ``HEADER_BYTES + i * (chunk size +
CHUNK_OVERHEAD)``, so a plaintext range maps to a stored range by arithmetic
(``ChunkLayout.span``): a ranged read fetches and decrypts only the chunks it
needs. A truncated object is found because the authenticated plain size says
how long each chunk must be.

Errors: ``EncryptionKeyError`` when the KEK named is not in the ring or does not
unwrap the data key (wrong key, or an altered header); ``DecryptionError`` when
a chunk fails authentication or is cut short (altered or corrupt data). Never
are unauthenticated bytes returned.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "CHUNK_OVERHEAD",
    "CHUNK_SIZE_DEFAULT",
    "CHUNK_SIZE_MAX",
    "CHUNK_SIZE_MIN",
    "HEADER_BYTES",
    "KEY_BYTES",
    "KEY_ID_MAX_BYTES",
    "ChunkLayout",
    "DecryptionError",
    "EncryptionKeyError",
    "KeyRing",
    "ObjectContext",
    "ObjectDecryptor",
    "ObjectEncryptor",
    "ObjectHeader",
    "check_key_id",
    "custom_metadata",
    "decrypt_object",
    "encrypt_object",
    "encrypted_key_id",
    "new_data_key",
]

MAGIC = b"\xfftle"
FORMAT = 1
KEY_BYTES = 32                      # AES-256
NONCE_BYTES = 12
TAG_BYTES = 16
CHUNK_OVERHEAD = NONCE_BYTES + TAG_BYTES
KEY_ID_MAX_BYTES = 32
HEADER_BYTES = 128
CHUNK_SIZE_DEFAULT = 64 * 1024
CHUNK_SIZE_MIN = 4 * 1024
CHUNK_SIZE_MAX = 16 * 1024 * 1024
_FIXED = struct.Struct(f">4sBB{KEY_ID_MAX_BYTES}sIQ")        # magic .. plain size: the wrap's AAD
_RESERVED = HEADER_BYTES - _FIXED.size - NONCE_BYTES - KEY_BYTES - TAG_BYTES
_KEY_ID = re.compile(rf"^[a-z0-9_-]{{1,{KEY_ID_MAX_BYTES}}}$")
_CHUNK_INDEX = struct.Struct(">Q")

RandomBytes = Callable[[int], bytes]


class EncryptionKeyError(Exception):
    """The key-encryption key an object names is not available, or does not open it."""


class DecryptionError(Exception):
    """An object's header or chunk fails its checks: altered, truncated or corrupt."""


def check_key_id(key_id: str) -> str:
    """``key_id`` if it is a valid id (lowercase letters, digits, ``-``, ``_``; 1..32), else ValueError."""
    if not _KEY_ID.match(key_id):
        raise ValueError(f"key id {key_id!r} must be 1 to {KEY_ID_MAX_BYTES} of a-z 0-9 - _")
    return key_id


class KeyRing:
    """Key-encryption keys by id; ``active_id`` wraps new data keys (None: reads only)."""

    def __init__(self, keys: dict[str, bytes], active_id: str | None = None) -> None:
        for key_id, key in keys.items():
            check_key_id(key_id)
            if len(key) != KEY_BYTES:
                raise ValueError(f"key {key_id!r} has {len(key)} bytes, not {KEY_BYTES}")
        if active_id is not None and active_id not in keys:
            raise ValueError(f"no key material for the active key id {active_id!r}")
        self._keys = dict(keys)
        self.active_id = active_id

    @property
    def key_ids(self) -> list[str]:
        return sorted(self._keys)

    def key(self, key_id: str) -> bytes:
        try:
            return self._keys[key_id]
        except KeyError:
            have = ", ".join(self.key_ids) or "none"
            raise EncryptionKeyError(f"no key with id {key_id!r} (keys available: {have})") from None


@dataclass(frozen=True, slots=True)
class ObjectContext:
    """What an object's header and chunks are bound to: its segment upload and its suffix."""

    segment_id: bytes               # the upload's 16-byte uuid
    suffix: str                     # ".log", ".index", ...

    def aad(self) -> bytes:
        return self.segment_id + self.suffix.encode("ascii")


def new_data_key(random_bytes: RandomBytes = os.urandom) -> bytes:
    return random_bytes(KEY_BYTES)


@dataclass(frozen=True, slots=True)
class ChunkLayout:
    """Where each chunk of an object lies: plaintext positions to stored positions."""

    chunk_size: int
    plain_size: int

    @property
    def chunks(self) -> int:
        return -(-self.plain_size // self.chunk_size)

    @property
    def stored_size(self) -> int:
        return HEADER_BYTES + self.plain_size + self.chunks * CHUNK_OVERHEAD

    def stored_start(self, index: int) -> int:
        return HEADER_BYTES + index * (self.chunk_size + CHUNK_OVERHEAD)

    def plain_length(self, index: int) -> int:
        return min(self.chunk_size, self.plain_size - index * self.chunk_size)

    def span(self, start: int, end: int) -> tuple[int, int, int]:
        """(first chunk, stored start, stored end) of the chunks holding plaintext [start, end),
        ``0 <= start < end <= plain_size``."""
        assert 0 <= start < end <= self.plain_size, (start, end, self.plain_size)
        first, last = start // self.chunk_size, (end - 1) // self.chunk_size
        return first, self.stored_start(first), self.stored_start(last) + self.plain_length(last) + CHUNK_OVERHEAD


@dataclass(frozen=True, slots=True)
class ObjectHeader:
    key_id: str
    layout: ChunkLayout
    wrap_nonce: bytes
    wrapped_key: bytes              # data key + tag

    def _fixed(self) -> bytes:
        key_id = self.key_id.encode("ascii")
        return _FIXED.pack(MAGIC, FORMAT, len(key_id), key_id, self.layout.chunk_size, self.layout.plain_size)

    def encode(self) -> bytes:
        return self._fixed() + self.wrap_nonce + self.wrapped_key + bytes(_RESERVED)

    @classmethod
    def parse(cls, data: bytes) -> ObjectHeader:
        if len(data) < HEADER_BYTES:
            raise DecryptionError(f"encrypted object shorter ({len(data)} bytes) than its header")
        magic, fmt, id_len, key_id, chunk_size, plain_size = _FIXED.unpack_from(data, 0)
        if magic != MAGIC:
            raise DecryptionError("not an encrypted object (no header)")
        if fmt != FORMAT:
            raise DecryptionError(f"unknown encrypted object format {fmt}")
        if not (CHUNK_SIZE_MIN <= chunk_size <= CHUNK_SIZE_MAX and 0 < id_len <= KEY_ID_MAX_BYTES):
            raise DecryptionError(f"bad encrypted object header (chunk size {chunk_size}, key id length {id_len})")
        at = _FIXED.size
        return cls(key_id[:id_len].decode("ascii", "replace"), ChunkLayout(chunk_size, plain_size),
                   bytes(data[at:at + NONCE_BYTES]), bytes(data[at + NONCE_BYTES:at + NONCE_BYTES + KEY_BYTES + TAG_BYTES]))


class ObjectEncryptor:
    """Encrypts one object of a segment upload: ``header()`` then ``chunk(i, plaintext)`` in order."""

    def __init__(self, keys: KeyRing, data_key: bytes, context: ObjectContext, plain_size: int,
                 chunk_size: int = CHUNK_SIZE_DEFAULT, random_bytes: RandomBytes = os.urandom) -> None:
        assert keys.active_id is not None, "encrypting needs an active key id"
        assert CHUNK_SIZE_MIN <= chunk_size <= CHUNK_SIZE_MAX and len(data_key) == KEY_BYTES
        self.layout = ChunkLayout(chunk_size, plain_size)
        self._context = context
        self._aead = AESGCM(data_key)
        self._random = random_bytes
        header = ObjectHeader(keys.active_id, self.layout, random_bytes(NONCE_BYTES), b"")
        self._header = ObjectHeader(header.key_id, self.layout, header.wrap_nonce, AESGCM(
            keys.key(keys.active_id)).encrypt(header.wrap_nonce, data_key, header._fixed() + context.aad()))

    def header(self) -> bytes:
        return self._header.encode()

    def chunk(self, index: int, plain: bytes | memoryview) -> bytearray:
        assert len(plain) == self.layout.plain_length(index), (index, len(plain))
        sealed = bytearray(len(plain) + CHUNK_OVERHEAD)
        sealed[:NONCE_BYTES] = nonce = self._random(NONCE_BYTES)
        self._aead.encrypt_into(nonce, plain, self._context.aad() + _CHUNK_INDEX.pack(index),
                                memoryview(sealed)[NONCE_BYTES:])
        return sealed

    def chunks(self, data: bytes | memoryview) -> Iterator[bytearray]:
        """Every chunk of ``data``, the whole plaintext of the object."""
        view = memoryview(data)
        for index in range(self.layout.chunks):
            start = index * self.layout.chunk_size
            yield self.chunk(index, view[start:start + self.layout.chunk_size])


class ObjectDecryptor:
    """Decrypts ranges of one object, given its header (the data key unwrapped once)."""

    def __init__(self, keys: KeyRing, header: ObjectHeader, context: ObjectContext) -> None:
        kek = keys.key(header.key_id)
        try:
            data_key = AESGCM(kek).decrypt(header.wrap_nonce, header.wrapped_key, header._fixed() + context.aad())
        except InvalidTag:
            raise EncryptionKeyError(f"key {header.key_id!r} does not open the object's data key "
                                     "(a wrong key for that id, or an altered header)") from None
        self.header = header
        self.layout = header.layout
        self._context = context
        self._aead = AESGCM(data_key)

    def decrypt(self, stored: bytes | memoryview, first: int, start: int, end: int) -> bytearray:
        """Plaintext [start, end) from ``stored``, the stored bytes of chunks ``first``.. (``span``).
        Whole chunks are decrypted straight into the answer (one buffer, no copy after: allocating
        and faulting in megabytes is what costs most here)."""
        out = bytearray(end - start)
        view, pos, index, filled = memoryview(stored), 0, first, 0
        while index * self.layout.chunk_size < end:
            length = self.layout.plain_length(index)
            if len(view) - pos < length + CHUNK_OVERHEAD:
                raise DecryptionError(f"encrypted chunk {index} cut short ({len(view) - pos} of "
                                      f"{length + CHUNK_OVERHEAD} bytes)")
            base = index * self.layout.chunk_size
            lo, hi = max(0, start - base), min(length, end - base)
            sealed = view[pos:pos + length + CHUNK_OVERHEAD]
            if lo == 0 and hi == length:
                self._open(index, sealed, memoryview(out)[filled:filled + length])
            else:
                plain = self._open(index, sealed)
                assert plain is not None            # without ``into`` the plaintext is returned
                out[filled:filled + hi - lo] = memoryview(plain)[lo:hi]
            pos, index, filled = pos + length + CHUNK_OVERHEAD, index + 1, filled + hi - lo
        return out

    def _open(self, index: int, sealed: memoryview, into: memoryview | None = None) -> bytes | None:
        """One chunk's plaintext (``into`` a buffer of its size, when given); the buffer's contents
        are not to be used when this raises."""
        aad = self._context.aad() + _CHUNK_INDEX.pack(index)
        try:
            if into is None:
                return self._aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad)
            self._aead.decrypt_into(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad, into)
            return None
        except InvalidTag:
            raise DecryptionError(f"encrypted chunk {index} fails authentication (altered or corrupt)") from None


def encrypt_object(keys: KeyRing, data_key: bytes, context: ObjectContext, data: bytes,
                   chunk_size: int = CHUNK_SIZE_DEFAULT, random_bytes: RandomBytes = os.urandom) -> bytes:
    """The whole stored form of a small object."""
    enc = ObjectEncryptor(keys, data_key, context, len(data), chunk_size, random_bytes)
    return enc.header() + b"".join(enc.chunks(data))


def decrypt_object(keys: KeyRing, context: ObjectContext, stored: bytes) -> bytes | bytearray:
    """The whole plaintext of a stored object; its size must be exactly what its header says."""
    header = ObjectHeader.parse(stored)
    if len(stored) != header.layout.stored_size:
        raise DecryptionError(f"encrypted object of {len(stored)} bytes, its header says "
                              f"{header.layout.stored_size}")
    dec = ObjectDecryptor(keys, header, context)
    if header.layout.plain_size == 0:
        return b""
    return dec.decrypt(memoryview(stored)[HEADER_BYTES:], 0, 0, header.layout.plain_size)


# --- what the segment's metadata says (RemoteLogSegmentMetadata.custom_metadata) -------------------

def custom_metadata(key_id: str) -> bytes:
    """Kafka's CustomMetadata of an encrypted upload: the segment's objects are encrypted under ``key_id``."""
    return json.dumps({"encryption": {"key_id": key_id}}, separators=(",", ":")).encode()


def encrypted_key_id(custom: bytes | None) -> str | None:
    """The key id an upload's custom metadata names (None: its objects are plain)."""
    if not custom:
        return None
    try:
        key_id = json.loads(custom)["encryption"]["key_id"]
    except (ValueError, KeyError, TypeError):
        return None
    return key_id if isinstance(key_id, str) else None
