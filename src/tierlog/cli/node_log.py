"""A node's log file, rotated by size as Kafka's log4j RollingFileAppender rotates server.log.

``tierlog node --log-file node.log`` writes its log records to ``node.log``; when
a record would take the file past ``--log-file-max-bytes`` it becomes
``node.log.1`` (``.1`` becomes ``.2`` and so on, the oldest beyond
``--log-file-backups`` is deleted) and a new ``node.log`` starts. At most
(backups + 1) x max bytes are kept.

The process's stderr (file descriptor 2) is pointed at the current file too, and
again after each rotation, so what does not go through logging (a warning, a
traceback, the final ``tierlog: error:`` line) lands in the same file and never
in a renamed one that keeps growing.
"""

from __future__ import annotations

import logging
import os
import sys
from logging.handlers import RotatingFileHandler

__all__ = ["LOG_FORMAT", "NODE_LOG_BACKUPS", "NODE_LOG_MAX_BYTES", "log_to_file", "log_to_stderr"]

NODE_LOG_MAX_BYTES = 100 * 1024 * 1024     # 100 MiB a file
NODE_LOG_BACKUPS = 10                       # node.log.1 .. node.log.10
LOG_FORMAT = "%(asctime)s %(levelname)s [%(name)s] %(message)s"
_STDERR_FD = 2


class _StderrFollowingHandler(RotatingFileHandler):
    """A RotatingFileHandler that points fd 2 at each file it opens."""

    def _open(self):
        stream = super()._open()
        sys.stderr.flush()
        os.dup2(stream.fileno(), _STDERR_FD)
        return stream


def log_to_file(path: str, level: str, max_bytes: int = NODE_LOG_MAX_BYTES,
                backups: int = NODE_LOG_BACKUPS) -> None:
    """Every log record (and stderr) into ``path``, rotated at ``max_bytes``."""
    assert max_bytes > 0 and backups >= 0, (max_bytes, backups)
    handler = _StderrFollowingHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])


def log_to_stderr(level: str) -> None:
    logging.basicConfig(level=level, stream=sys.stderr, format=LOG_FORMAT)
