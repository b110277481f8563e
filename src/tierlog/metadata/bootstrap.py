"""Bootstrap records: what a new cluster's first active controller writes to the metadata log
before anything else (Kafka's ``bootstrap.checkpoint`` written by ``kafka-storage.sh format``).

Today: the SCRAM credentials of ``tierlog format --add-scram`` (Kafka's KIP-900), so that
brokers and clients using SCRAM can log in to a cluster that has just started, before
anyone could have called AlterUserScramCredentials. The file is
``<metadata dir>/bootstrap.records`` (tierlog's own layout, not Kafka's checkpoint file)::

    "TLBOOT1\\n"  then per record: uint32 length, the framed metadata record (``records.encode``)
    then a uint32 CRC-32C of everything before it

It holds credentials (salt, StoredKey, ServerKey, iterations), never a password. A file
that does not check out is an error naming it (``BootstrapError``), never skipped.
The controller writes the records only when it becomes active on an image that holds
nothing yet (``QuorumController``); format every controller alike, so whichever wins the
first election writes the same records.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path

import crc32c

from tierlog.protocol.primitives import ProtocolError

from .cluster_records import MetadataRecord, decode, encode

__all__ = ["BOOTSTRAP_FILE", "BootstrapError", "decode_bootstrap", "encode_bootstrap", "read_bootstrap",
           "write_bootstrap"]

BOOTSTRAP_FILE = "bootstrap.records"
_MAGIC = b"TLBOOT1\n"
_BOOTSTRAP_MAX_BYTES = 64 * 1024 * 1024


class BootstrapError(ValueError):
    """A bootstrap file that cannot be read; the message names it."""


def encode_bootstrap(records: Iterable[MetadataRecord]) -> bytes:
    out = bytearray(_MAGIC)
    for r in records:
        data = encode(r)
        out += struct.pack(">I", len(data)) + data
    out += struct.pack(">I", crc32c.crc32c(bytes(out)))
    return bytes(out)


def decode_bootstrap(data: bytes, name: str = BOOTSTRAP_FILE) -> list[MetadataRecord]:
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 4:
        raise BootstrapError(f"{name}: not a tierlog bootstrap file")
    body, (crc,) = data[:-4], struct.unpack(">I", data[-4:])
    if crc32c.crc32c(body) != crc:
        raise BootstrapError(f"{name}: checksum mismatch (damaged file)")
    records: list[MetadataRecord] = []
    pos = len(_MAGIC)
    while pos < len(body):
        if pos + 4 > len(body):
            raise BootstrapError(f"{name}: truncated record")
        (size,) = struct.unpack_from(">I", body, pos)
        try:
            records.append(decode(body[pos + 4:pos + 4 + size]))
        except ProtocolError as e:
            raise BootstrapError(f"{name}: {e}") from None
        pos += 4 + size
    return records


def read_bootstrap(metadata_dir: Path) -> list[MetadataRecord]:
    """The bootstrap records in ``metadata_dir`` ([] when there is no file)."""
    path = Path(metadata_dir) / BOOTSTRAP_FILE
    try:
        with open(path, "rb") as f:
            data = f.read(_BOOTSTRAP_MAX_BYTES + 1)
    except FileNotFoundError:
        return []
    except OSError as e:
        raise BootstrapError(f"{path}: {e.strerror or e}") from None
    if len(data) > _BOOTSTRAP_MAX_BYTES:
        raise BootstrapError(f"{path}: larger than {_BOOTSTRAP_MAX_BYTES} bytes")
    return decode_bootstrap(data, str(path))


def write_bootstrap(metadata_dir: Path, records: Iterable[MetadataRecord]) -> Path:
    """Write (replace) the bootstrap file: a temporary file, fsync, rename, private (0600)."""
    metadata_dir = Path(metadata_dir)
    metadata_dir.mkdir(parents=True, exist_ok=True)
    path, tmp = metadata_dir / BOOTSTRAP_FILE, metadata_dir / (BOOTSTRAP_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, encode_bootstrap(records))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path
