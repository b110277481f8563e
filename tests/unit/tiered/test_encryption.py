"""The encrypted object format (tiered.encryption): round trips, ranged decryption, tampering,
wrong and missing keys, rotation; and the rsm.config.encryption.* settings."""

from __future__ import annotations

import base64
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tierlog.tiered.encryption import (
    CHUNK_OVERHEAD,
    CHUNK_SIZE_MIN,
    HEADER_BYTES,
    ChunkLayout,
    DecryptionError,
    EncryptionKeyError,
    KeyRing,
    ObjectContext,
    ObjectDecryptor,
    ObjectHeader,
    custom_metadata,
    decrypt_object,
    encrypt_object,
    encrypted_key_id,
    new_data_key,
)
from tierlog.tiered.encryption_config import (
    EncryptionConfigError,
    encryption_from_config,
)

K1, K2 = os.urandom(32), os.urandom(32)
RING = KeyRing({"k1": K1}, "k1")
CTX = ObjectContext(bytes(range(16)), ".log")
CHUNK = CHUNK_SIZE_MIN


def _plain(size: int) -> bytes:
    return bytes((i * 7 + i // 251) % 256 for i in range(size))


def _encrypt(data: bytes, ring: KeyRing = RING, ctx: ObjectContext = CTX, data_key: bytes | None = None) -> bytes:
    return encrypt_object(ring, data_key or new_data_key(), ctx, data, CHUNK)


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5])
def test_round_trip_and_stored_size(size):
    data = _plain(size)
    stored = _encrypt(data)
    layout = ChunkLayout(CHUNK, size)
    assert len(stored) == layout.stored_size == HEADER_BYTES + size + layout.chunks * CHUNK_OVERHEAD
    assert decrypt_object(RING, CTX, stored) == data


def test_the_stored_form_holds_no_plaintext_and_differs_each_time():
    data = b"secret-record-value-%d " * 2000
    first, second = _encrypt(data), _encrypt(data)
    assert b"secret-record-value" not in first and first != second


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 5 * CHUNK), a=st.integers(0, 5 * CHUNK), b=st.integers(0, 5 * CHUNK))
def test_a_range_decrypts_from_only_the_chunks_that_hold_it(size, a, b):
    start, end = sorted((a % size, b % size + 1))
    if start >= end:
        return
    data = _plain(size)
    stored = _encrypt(data)
    dec = ObjectDecryptor(RING, ObjectHeader.parse(stored[:HEADER_BYTES]), CTX)
    first, s_start, s_end = dec.layout.span(start, end)
    assert first == start // CHUNK
    assert s_end - s_start <= (end - start) + 2 * (CHUNK + CHUNK_OVERHEAD)       # no more than it needs
    assert dec.decrypt(stored[s_start:s_end], first, start, end) == data[start:end]


def test_an_altered_byte_anywhere_in_a_chunk_fails():
    stored = bytearray(_encrypt(_plain(2 * CHUNK)))
    for at in (HEADER_BYTES, HEADER_BYTES + 12, HEADER_BYTES + CHUNK, len(stored) - 1):
        tampered = bytearray(stored)
        tampered[at] ^= 0x01
        with pytest.raises(DecryptionError, match="fails authentication"):
            decrypt_object(RING, CTX, bytes(tampered))


def test_chunks_cannot_be_reordered_or_moved_between_objects():
    data = _plain(2 * CHUNK)
    stored = _encrypt(data)
    size = CHUNK + CHUNK_OVERHEAD
    c0, c1 = stored[HEADER_BYTES:HEADER_BYTES + size], stored[HEADER_BYTES + size:]
    with pytest.raises(DecryptionError):
        decrypt_object(RING, CTX, stored[:HEADER_BYTES] + c1 + c0)
    data_key = new_data_key()
    log = _encrypt(data, data_key=data_key)
    index = _encrypt(data, ctx=ObjectContext(CTX.segment_id, ".index"), data_key=data_key)   # same segment key
    with pytest.raises(DecryptionError):
        decrypt_object(RING, CTX, log[:HEADER_BYTES] + index[HEADER_BYTES:])
    other_segment = ObjectContext(bytes(16), ".log")
    with pytest.raises(EncryptionKeyError):                 # the header is bound to its object too
        decrypt_object(RING, other_segment, log)


def test_a_truncated_object_fails():
    stored = _encrypt(_plain(3 * CHUNK))
    with pytest.raises(DecryptionError):
        decrypt_object(RING, CTX, stored[:-(CHUNK + CHUNK_OVERHEAD)])
    header = ObjectHeader.parse(stored)
    dec = ObjectDecryptor(RING, header, CTX)
    with pytest.raises(DecryptionError, match="cut short"):
        dec.decrypt(stored[HEADER_BYTES:-5], 0, 0, 3 * CHUNK)


def test_a_wrong_key_or_a_missing_key_id_is_a_key_error_never_bytes():
    stored = _encrypt(_plain(100))
    with pytest.raises(EncryptionKeyError, match="does not open"):
        decrypt_object(KeyRing({"k1": K2}), CTX, stored)
    with pytest.raises(EncryptionKeyError, match="no key with id 'k1'"):
        decrypt_object(KeyRing({"k2": K2}), CTX, stored)


def test_an_altered_header_is_refused():
    stored = bytearray(_encrypt(_plain(3 * CHUNK)))
    stored[45] ^= 0x01                                      # the plain size
    with pytest.raises((EncryptionKeyError, DecryptionError)):
        decrypt_object(RING, CTX, bytes(stored))
    with pytest.raises(DecryptionError, match="no header"):
        ObjectHeader.parse(b"\x00" * HEADER_BYTES)


def test_rotation_keeps_old_objects_readable():
    old = _encrypt(b"written under k1", KeyRing({"k1": K1}, "k1"))
    rotated = KeyRing({"k1": K1, "k2": K2}, "k2")
    new = _encrypt(b"written under k2", rotated)
    assert ObjectHeader.parse(old).key_id == "k1" and ObjectHeader.parse(new).key_id == "k2"
    assert decrypt_object(rotated, CTX, old) == b"written under k1"
    assert decrypt_object(rotated, CTX, new) == b"written under k2"
    with pytest.raises(EncryptionKeyError):
        decrypt_object(KeyRing({"k2": K2}), CTX, old)       # k1 dropped too early


def test_custom_metadata_names_the_key():
    assert encrypted_key_id(custom_metadata("k1")) == "k1"
    assert encrypted_key_id(None) is None and encrypted_key_id(b"not json") is None
    assert len(custom_metadata("k" * 32)) <= 128           # remote.log.metadata.custom.metadata.max.bytes


# --- rsm.config.encryption.* ----------------------------------------------------------------------

def _key_file(tmp_path, name: str, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    return str(path)


def test_settings_from_a_file_an_env_var_and_older_keys(tmp_path):
    settings = {"rsm.config.encryption.enabled": "true", "rsm.config.encryption.key.id": "k2",
                "rsm.config.encryption.key.env": "TIERLOG_K2",
                "rsm.config.encryption.keys.k1.file": _key_file(tmp_path, "k1", base64.b64encode(K1) + b"\n"),
                "rsm.config.encryption.keys.k0.file": _key_file(tmp_path, "k0", K1.hex().encode()),
                "rsm.config.encryption.chunk.size": "8192"}
    enc = encryption_from_config(settings, env={"TIERLOG_K2": base64.b64encode(K2).decode()})
    assert enc.enabled and enc.keys.active_id == "k2" and enc.keys.key_ids == ["k0", "k1", "k2"]
    assert enc.keys.key("k2") == K2 and enc.keys.key("k1") == K1 == enc.keys.key("k0")
    assert enc.chunk_size == 8192
    raw = encryption_from_config({"rsm.config.encryption.keys.k1.file": _key_file(tmp_path, "raw", K1)}, env={})
    assert not raw.enabled and raw.keys.key("k1") == K1                 # keys for reading only
    assert encryption_from_config({}, env={}).keys is None


@pytest.mark.parametrize(("settings", "message"), [
    ({"rsm.config.encryption.enabled": "true"}, "needs rsm.config.encryption.key.id"),
    ({"rsm.config.encryption.enabled": "true", "rsm.config.encryption.key.id": "k1"}, "no key for"),
    ({"rsm.config.encryption.enabled": "yes"}, "true or false"),
    ({"rsm.config.encryption.key.file": "/x"}, "need rsm.config.encryption.key.id"),
    ({"rsm.config.encryption.key.id": "K1", "rsm.config.encryption.key.env": "V"}, "a-z 0-9"),
    ({"rsm.config.encryption.key.id": "k1", "rsm.config.encryption.key.env": "NOPE"}, "NOPE .* is not set"),
    ({"rsm.config.encryption.key.id": "k1", "rsm.config.encryption.key.file": "/nonexistent/k1"}, "cannot read"),
    ({"rsm.config.encryption.keyid": "k1"}, "unknown remote storage encryption setting"),
    ({"rsm.config.encryption.keys.k1.path": "/x"}, "unknown remote storage encryption setting"),
    ({"rsm.config.encryption.chunk.size": "100"}, r"chunk.size must be in \[4096"),
])
def test_bad_settings_are_one_line_errors(settings, message):
    with pytest.raises(EncryptionConfigError, match=message):
        encryption_from_config(settings, env={})


def test_a_bad_key_is_refused_without_showing_it(tmp_path):
    text = base64.b64encode(os.urandom(16)).decode()                       # 16 bytes: not a key
    with pytest.raises(EncryptionConfigError) as err:
        encryption_from_config({"rsm.config.encryption.key.id": "k1", "rsm.config.encryption.key.env": "K"},
                               env={"K": text})
    assert text not in str(err.value) and "not a 32-byte key" in str(err.value)
    path = _key_file(tmp_path, "big", b"x" * 5000)
    with pytest.raises(EncryptionConfigError, match="larger than"):
        encryption_from_config({"rsm.config.encryption.keys.k1.file": path}, env={})
