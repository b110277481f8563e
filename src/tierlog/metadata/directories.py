"""Replica -> log directory assignments (KIP-858, Kafka's DirectoryId).

A partition lists, in the order of its replicas, the ``directory.id`` of the
log dir that hosts each replica (PartitionRecord / PartitionChangeRecord
``Directories``).  Besides real dir ids, Kafka reserves the first 100 uuids;
three of them have a meaning:

* ``MIGRATING`` (0): the replica's dir is not known because its broker
  registered no log dirs (pre-JBOD metadata); taken as online.
* ``UNASSIGNED`` (1): a new replica whose broker has several dirs and has not
  said yet which one hosts it (AssignReplicasToDirs); taken as online.
* ``LOST`` (2): the replica's dir is offline and not otherwise known.

A replica is on an online dir (``is_online``) when its dir is ``UNASSIGNED``
or ``MIGRATING``, or its broker registered no dirs, or the dir is among the
dirs its broker registered online (Kafka's DirectoryId.isOnline).  A replica
on an offline dir can neither lead nor be elected.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

__all__ = [
    "LOST",
    "MIGRATING",
    "UNASSIGNED",
    "default_dir",
    "directories_for",
    "is_online",
    "is_reserved",
    "offline_replicas",
    "realign",
    "with_directory",
]

MIGRATING = bytes(16)
UNASSIGNED = bytes(15) + b"\x01"
LOST = bytes(15) + b"\x02"
_RESERVED_BELOW = 100


class HasLogDirs(Protocol):
    @property
    def log_dirs(self) -> tuple[bytes, ...]: ...


BrokerLookup = Callable[[int], HasLogDirs | None]     # broker id -> BrokerInfo (``log_dirs``) or None


def is_reserved(dir_id: bytes) -> bool:
    """One of Kafka's 100 reserved ids (most significant half 0, least below 100)."""
    return dir_id[:8] == bytes(8) and int.from_bytes(dir_id[8:], "big") < _RESERVED_BELOW


def is_online(dir_id: bytes, online_dirs: tuple[bytes, ...]) -> bool:
    if dir_id in (UNASSIGNED, MIGRATING):
        return True
    if dir_id == LOST:
        return False
    return not online_dirs or dir_id in online_dirs


def default_dir(online_dirs: tuple[bytes, ...] | None) -> bytes:
    """Where a new replica on a broker with ``online_dirs`` goes (Kafka's ClusterControlManager.defaultDir):
    its one dir, UNASSIGNED when it has several (the broker will say), MIGRATING when it has none."""
    if online_dirs is None:
        return UNASSIGNED           # not registered: the broker will say once it is
    if not online_dirs:
        return MIGRATING
    return online_dirs[0] if len(online_dirs) == 1 else UNASSIGNED


def directories_for(replicas: Iterable[int], broker: BrokerLookup) -> tuple[bytes, ...]:
    """The default dirs of new ``replicas``."""
    out = []
    for r in replicas:
        b = broker(r)
        out.append(default_dir(None if b is None else b.log_dirs))
    return tuple(out)


def realign(old_replicas: Sequence[int], old_dirs: Sequence[bytes], new_replicas: Iterable[int],
            broker: BrokerLookup) -> tuple[bytes, ...]:
    """Directories for a new replica list: a kept replica keeps its dir, a new one gets its default."""
    known = dict(zip(old_replicas, old_dirs)) if len(old_dirs) == len(old_replicas) else {}
    return tuple(known[r] if r in known else directories_for((r,), broker)[0] for r in new_replicas)


def with_directory(replicas: Sequence[int], dirs: Sequence[bytes], broker_id: int, dir_id: bytes) -> tuple[bytes, ...]:
    """``dirs`` with ``broker_id``'s replica moved to ``dir_id`` (``dirs`` empty: MIGRATING for the others)."""
    base = list(dirs) if len(dirs) == len(replicas) else [MIGRATING] * len(replicas)
    base[list(replicas).index(broker_id)] = dir_id
    return tuple(base)


def offline_replicas(replicas: Sequence[int], dirs: Sequence[bytes], broker: BrokerLookup) -> frozenset[int]:
    """The replicas whose assigned dir is not online on their broker."""
    if len(dirs) != len(replicas):
        return frozenset()
    out = set()
    for r, d in zip(replicas, dirs):
        b = broker(r)
        if b is not None and not is_online(d, b.log_dirs):
            out.add(r)
    return frozenset(out)
