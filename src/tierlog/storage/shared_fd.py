"""A segment's open descriptor, shared by the segment and every ``FileRegion`` handed out of it.

A Fetch answer's regions are read (``os.sendfile``/``os.pread``) after the handler returned, while
the log may meanwhile close the segment: its dir went offline, retention or a truncation deleted it,
the cleaner or a future log swapped it out, the replica was removed, the node shut down.  Closing
the number at once would let the next ``open`` reuse it, and an outstanding region would then send
another file's bytes under this partition (seen as EBADF in the nemesis soak).  So the descriptor
is reference-counted through the objects that hold it: the segment lets go on close, each region
holds it while it lives, and the number is closed when the last holder is gone (the file's bytes
stay readable meanwhile, even once unlinked), as Kafka keeps a FileRecords' channel open for the
reads still in flight.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["SharedFd"]


class SharedFd:
    """An open descriptor closed when the last object holding this one drops it."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __del__(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __repr__(self) -> str:
        return f"SharedFd({self.fd})"
