"""Long-lived children that end with the process that started them.

`tierlog up` starts its nodes, and the Spark pipeline starts `tierlog up`, in
sessions of their own, so that Ctrl-C reaches only the parent, which then stops
them in order.  The price: a parent killed with SIGKILL would leave them
running.  So the parent starts them with ``child_env()`` and each child calls
``exit_with_parent()`` first thing; Linux then sends the child SIGTERM (a clean
stop) when its parent dies, however it dies.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["PARENT_PID_ENV", "child_env", "exit_with_parent"]

PARENT_PID_ENV = "TIERLOG_PARENT_PID"
_PR_SET_PDEATHSIG = 1          # <linux/prctl.h>


def child_env() -> dict[str, str]:
    """The environment for a child that must not outlive this process."""
    return {**os.environ, PARENT_PID_ENV: str(os.getpid())}


def exit_with_parent() -> None:
    """If started with ``child_env()``: get SIGTERM when that parent dies (Linux only)."""
    expected = os.environ.pop(PARENT_PID_ENV, None)     # not inherited by our own children
    if expected is None or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
        return
    if os.getppid() != int(expected):                    # it died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
