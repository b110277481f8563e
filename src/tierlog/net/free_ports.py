"""A run of loopback ports that were free a moment ago, below the kernel's ephemeral ports.

``tierlog up --listen HOST:0`` takes its ports from here. ``bind(0)`` would give a port from the
ephemeral range, and that port stays free only until some outgoing connection takes it as its
local port. Between choosing the port and a node binding it, the node would then fail with
"Address already in use". Below the ephemeral range, only another listener can take it.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Iterable
from pathlib import Path

__all__ = ["free_port_block"]

LOCAL_PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")     # Linux: "FIRST\tLAST"
DEFAULT_EPHEMERAL_START = 32768       # Linux's default first ephemeral port
LOWEST_PORT = 20000                   # above the fixed ports services use (9092, 9192, 9293...)
ATTEMPTS = 1000


def free_port_block(host: str, offsets: Iterable[int]) -> int:
    """A base port such that ``base + o`` could be bound on ``host`` for every offset, all below the
    ephemeral range; OSError if none is found in ``ATTEMPTS`` random tries."""
    wanted = sorted(set(offsets))
    ephemeral = ephemeral_start()
    top = ephemeral - wanted[-1]
    if top <= LOWEST_PORT:
        raise OSError(f"no room for ports {wanted[0]}..{wanted[-1]} above a base between {LOWEST_PORT} and "
                      f"the ephemeral ports ({ephemeral}..)")
    rng = random.Random()
    for _ in range(ATTEMPTS):
        base = rng.randrange(LOWEST_PORT, top)
        if all(_bindable(host, base + o) for o in wanted):
            return base
    raise OSError(f"no free run of ports on {host} between {LOWEST_PORT} and {ephemeral}")


def ephemeral_start() -> int:
    """The first port the kernel hands out for outgoing connections."""
    try:
        return int(LOCAL_PORT_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_START


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True
