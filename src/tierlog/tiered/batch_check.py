"""Check record batches read back from remote storage before they are served.

``check_batches(buf)`` walks the whole batches at the front of ``buf`` (a range
read from a remote ``.log``), checks each one's header and CRC-32C with
``records.validate_batch``, and returns where the whole batches end: a ranged
read may stop inside the last batch, which is left out (not an error), but a
range that does not even hold its first batch whole, or any batch whose CRC
does not match, raises :class:`CorruptRemoteDataError`.
"""

from __future__ import annotations

from typing import NamedTuple

from tierlog.records import (
    LOG_OVERHEAD,
    BatchHeader,
    InvalidRecordError,
    validate_batch,
)
from tierlog.records.header import LENGTH_OFFSET
from tierlog.tiered.object_store import RemoteStorageError

__all__ = ["CheckedBatches", "CorruptRemoteDataError", "check_batches"]

_LENGTH_BYTES = 4


class CorruptRemoteDataError(RemoteStorageError):
    """Remote data that fails its batch checks (CRC, header)."""


class CheckedBatches(NamedTuple):
    end: int                        # exclusive end of the whole, checked batches in the buffer
    headers: list[BatchHeader]


def check_batches(buf: bytes | bytearray | memoryview, *, first_must_be_whole: bool = True) -> CheckedBatches:
    """Check every whole batch at the front of ``buf``; see the module docstring."""
    headers: list[BatchHeader] = []
    pos, size = 0, len(buf)
    with memoryview(buf) as view:
        while pos + LOG_OVERHEAD <= size:
            length = int.from_bytes(view[pos + LENGTH_OFFSET:pos + LENGTH_OFFSET + _LENGTH_BYTES],
                                    "big", signed=True)
            if length > 0 and pos + LOG_OVERHEAD + length > size:
                break                       # a partial batch at the end of the range
            try:
                header = validate_batch(view, pos)
            except InvalidRecordError as exc:
                raise CorruptRemoteDataError(f"remote batch at position {pos}: {exc}") from None
            headers.append(header)
            pos += header.size
    if first_must_be_whole and size > 0 and not headers:
        raise CorruptRemoteDataError(f"no whole batch in {size} bytes read from remote storage")
    return CheckedBatches(pos, headers)
