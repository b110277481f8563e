"""A stopped streaming query ends Spark's Python streaming-source runner without a traceback.

Spark runs a Python stream reader in a process of its own
(``python -m pyspark.sql.streaming.python_streaming_source_runner``) that serves the JVM's calls
until the JVM closes the connection, which is how every query stop ends it: its read of the next
call fails (EOFError), it calls the reader's ``stop()``, reports the error and flushes the socket,
and that flush, to a JVM that has gone, raises BrokenPipeError outside any handler (pyspark 4.2).
Python then prints the chained EOFError / BrokenPipeError traceback on the runner's stderr, which
the JVM copies to the driver's: ``./dev pipeline`` showed it between "stopping" and its summary.

So the reader's ``stop()`` (`quiet_runner_exit`), in that process only, installs an exception hook
that drops an uncaught BrokenPipeError (there is no one left to tell) and prints any other as
before. The process ends right after: nothing else runs under the hook.
"""

from __future__ import annotations

import sys
from types import TracebackType

__all__ = ["STREAMING_SOURCE_RUNNER", "quiet_runner_exit"]

STREAMING_SOURCE_RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"


def quiet_runner_exit() -> None:
    """In Spark's streaming-source runner, end without printing a BrokenPipeError (idempotent)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if getattr(spec, "name", None) != STREAMING_SOURCE_RUNNER or isinstance(sys.excepthook, _DropBrokenPipe):
        return
    sys.excepthook = _DropBrokenPipe(sys.excepthook)


class _DropBrokenPipe:
    def __init__(self, then) -> None:
        self.then = then

    def __call__(self, kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if not issubclass(kind, BrokenPipeError):
            self.then(kind, value, tb)
