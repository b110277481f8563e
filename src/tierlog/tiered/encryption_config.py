"""The ``rsm.config.encryption.*`` settings: whether uploads are encrypted, and the keys.

Keys (values are strings, as in server.properties)::

    rsm.config.encryption.enabled       true | false (default): encrypt new uploads
    rsm.config.encryption.key.id        id of the key new uploads are encrypted under
                                        (required when enabled; a-z 0-9 - _, up to 32)
    rsm.config.encryption.key.file      file holding that key
    rsm.config.encryption.key.env       or: name of an environment variable holding it
    rsm.config.encryption.keys.<id>.file   more keys by id, for reading what older
    rsm.config.encryption.keys.<id>.env    uploads encrypted under them (rotation)
    rsm.config.encryption.chunk.size    plaintext bytes per encrypted chunk
                                        (default 65536, 4096..16777216)

A key is 32 random bytes (AES-256), written as base64 or hex text (``openssl
rand -base64 32``) or as the raw 32 bytes; a key file is read once at start and
may be at most KEY_FILE_MAX_BYTES. Keys given without ``enabled=true`` are used
for reading only (encryption switched off later: the encrypted segments stay
readable). Errors never show key material. Unknown ``rsm.config.encryption.*``
keys are errors.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path

from tierlog.tiered.encryption import (
    CHUNK_SIZE_DEFAULT,
    CHUNK_SIZE_MAX,
    CHUNK_SIZE_MIN,
    KEY_BYTES,
    KeyRing,
    check_key_id,
)

__all__ = ["ENABLED", "KEY_ENV", "KEY_FILE", "KEY_ID", "EncryptionConfigError", "EncryptionSettings",
           "encryption_from_config", "parse_key"]

_P = "rsm.config.encryption."
ENABLED = _P + "enabled"
KEY_ID = _P + "key.id"
KEY_FILE = _P + "key.file"
KEY_ENV = _P + "key.env"
CHUNK_SIZE = _P + "chunk.size"
KEYS = _P + "keys."
_KNOWN = frozenset({ENABLED, KEY_ID, KEY_FILE, KEY_ENV, CHUNK_SIZE})
KEY_FILE_MAX_BYTES = 1024


class EncryptionConfigError(ValueError):
    """A missing, unknown or malformed ``rsm.config.encryption.*`` setting or key."""


@dataclass(frozen=True, slots=True)
class EncryptionSettings:
    keys: KeyRing | None            # None: no key at all (nothing encrypted can be read)
    chunk_size: int = CHUNK_SIZE_DEFAULT

    @property
    def enabled(self) -> bool:
        return self.keys is not None and self.keys.active_id is not None


def encryption_from_config(settings: dict[str, str], env: dict[str, str] | None = None) -> EncryptionSettings:
    """The keys and chunk size the ``rsm.config.encryption.*`` entries of ``settings`` describe."""
    env = dict(os.environ) if env is None else env
    ours = {k: str(v).strip() for k, v in settings.items() if k.startswith(_P)}
    sources = _key_sources(ours)
    enabled = _boolean(ours.get(ENABLED, "false"))
    active = ours.get(KEY_ID)
    if active:
        try:
            check_key_id(active)
        except ValueError as exc:
            raise EncryptionConfigError(f"{KEY_ID}: {exc}") from None
    if enabled and not active:
        raise EncryptionConfigError(f"{ENABLED}=true needs {KEY_ID} (and {KEY_FILE} or {KEY_ENV})")
    if active and (ours.get(KEY_FILE) or ours.get(KEY_ENV)):
        sources.setdefault(active, {}).update(
            {k: v for k, v in (("file", ours.get(KEY_FILE)), ("env", ours.get(KEY_ENV))) if v})
    elif ours.get(KEY_FILE) or ours.get(KEY_ENV):
        raise EncryptionConfigError(f"{KEY_FILE} / {KEY_ENV} need {KEY_ID} (the key's id)")
    if enabled and active not in sources:
        raise EncryptionConfigError(f"no key for {KEY_ID}={active}: set {KEY_FILE} or {KEY_ENV} "
                                    f"(or {KEYS}{active}.file)")
    keys = {key_id: _load(key_id, where, env) for key_id, where in sources.items()}
    try:
        ring = KeyRing(keys, active if enabled else None) if keys else None
    except ValueError as exc:
        raise EncryptionConfigError(str(exc)) from None
    return EncryptionSettings(ring, _chunk_size(ours.get(CHUNK_SIZE)))


def _key_sources(ours: dict[str, str]) -> dict[str, dict[str, str]]:
    """``keys.<id>.file|env`` entries by id; other unknown keys are errors."""
    sources: dict[str, dict[str, str]] = {}
    for key, value in ours.items():
        if key in _KNOWN:
            continue
        key_id, dot, kind = key[len(KEYS):].rpartition(".")
        if not key.startswith(KEYS) or not dot or kind not in ("file", "env"):
            raise EncryptionConfigError(f"unknown remote storage encryption setting {key}")
        try:
            sources.setdefault(check_key_id(key_id), {})[kind] = value
        except ValueError as exc:
            raise EncryptionConfigError(f"{key}: {exc}") from None
    if any(len(where) > 1 for where in sources.values()):
        raise EncryptionConfigError("give each key as a file or an environment variable, not both")
    return sources


def _load(key_id: str, where: dict[str, str], env: dict[str, str]) -> bytes:
    if "file" in where:
        path = Path(where["file"])
        try:
            with open(path, "rb") as src:
                raw = src.read(KEY_FILE_MAX_BYTES + 1)
        except OSError as exc:
            raise EncryptionConfigError(f"cannot read key {key_id!r} from {path}: {exc.strerror}") from None
        if len(raw) > KEY_FILE_MAX_BYTES:
            raise EncryptionConfigError(f"key file {path} of key {key_id!r} is larger than {KEY_FILE_MAX_BYTES} "
                                        "bytes: not a key")
        return _parse(raw, f"key file {path} of key {key_id!r}")
    name = where["env"]
    if name not in env:
        raise EncryptionConfigError(f"environment variable {name} (key {key_id!r}) is not set")
    return _parse(env[name].encode("utf-8", "replace"), f"environment variable {name} (key {key_id!r})")


def parse_key(raw: bytes) -> bytes:
    """32 key bytes from raw bytes, hex or base64 text; ValueError otherwise."""
    if len(raw) == KEY_BYTES:
        return raw
    text = raw.strip()
    try:
        key = bytes.fromhex(text.decode("ascii")) if len(text) == 2 * KEY_BYTES else \
            base64.b64decode(text, validate=True)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise ValueError("not base64 or hex text") from None
    if len(key) != KEY_BYTES:
        raise ValueError(f"{len(key)} bytes, a key has {KEY_BYTES}")
    return key


def _parse(raw: bytes, what: str) -> bytes:
    try:
        return parse_key(raw)
    except ValueError as exc:
        raise EncryptionConfigError(f"{what} is not a {KEY_BYTES}-byte key "
                                    f"({exc}; make one with: openssl rand -base64 32)") from None


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise EncryptionConfigError(f"{ENABLED} must be true or false, got {text!r}")
    return text.lower() == "true"


def _chunk_size(text: str | None) -> int:
    if text is None:
        return CHUNK_SIZE_DEFAULT
    try:
        size = int(text)
    except ValueError:
        raise EncryptionConfigError(f"{CHUNK_SIZE} must be an integer, got {text!r}") from None
    if not CHUNK_SIZE_MIN <= size <= CHUNK_SIZE_MAX:
        raise EncryptionConfigError(f"{CHUNK_SIZE} must be in [{CHUNK_SIZE_MIN}, {CHUNK_SIZE_MAX}], got {size}")
    return size
