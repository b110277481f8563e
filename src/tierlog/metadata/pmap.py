"""PMap: an immutable mapping whose updates share structure with the original.

The metadata image holds up to ~1M partitions in ~100k topics; a change to one
topic must not copy the whole topic table. A PMap keeps its entries in
``2**k`` buckets (plain dicts, never mutated once published) chosen by a stable
hash of the key. ``evolve(changes)`` copies only the buckets the changes touch
plus the bucket tuple, so an update costs O(bucket size + bucket count), about
O(sqrt(n)), instead of O(n). Buckets grow with the map (rehash when the mean
bucket exceeds ``_MAX_LOAD``), keeping both terms small.

The hash is stable across processes (crc32 of str keys, the value of int keys,
crc32 of bytes keys), so iteration order depends only on the contents and the
order of insertion, never on PYTHONHASHSEED.
"""
from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from enum import Enum
from typing import Any, Final, Generic, TypeVar, overload
from zlib import crc32

__all__ = ["REMOVE", "PMap", "Removal"]

_MAX_LOAD = 64          # rehash once the mean bucket holds more than this
_TARGET_LOAD = 16       # mean bucket size right after a rehash


class Removal(Enum):
    """The one "delete this key" marker (an enum so that ``v is REMOVE`` narrows a type)."""
    REMOVE = 0

    def __repr__(self) -> str:
        return "REMOVE"


#: a value in ``evolve(changes)`` meaning "delete this key"
REMOVE: Final = Removal.REMOVE

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


def _h(key: object) -> int:
    if type(key) is int:
        return key
    if type(key) is str:
        return crc32(key.encode())
    if isinstance(key, (bytes, bytearray)):
        return crc32(key)
    return crc32(repr(key).encode())


def _nbuckets(n: int) -> int:
    nb = 1
    while nb * _TARGET_LOAD < n:
        nb *= 2
    return nb


class PMap(Mapping[K, V], Generic[K, V]):
    __slots__ = ("_buckets", "_len", "_mask")
    _buckets: tuple[dict[K, V], ...]
    _len: int
    _mask: int

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] | None = None) -> None:
        data = dict(items.items() if isinstance(items, Mapping) else (items or ()))
        self._build(data)

    def _build(self, data: dict[K, V]) -> None:
        nb = _nbuckets(len(data))
        buckets: list[dict[K, V]] = [{} for _ in range(nb)]
        mask = nb - 1
        for k, v in data.items():
            buckets[_h(k) & mask][k] = v
        self._buckets = tuple(buckets)
        self._mask = mask
        self._len = len(data)

    # -- Mapping -----------------------------------------------------------------
    def __getitem__(self, key: K) -> V:
        return self._buckets[_h(key) & self._mask][key]

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, default: V, /) -> V: ...
    @overload
    def get(self, key: K, default: T, /) -> V | T: ...

    def get(self, key: K, default: object = None, /) -> object:
        return self._buckets[_h(key) & self._mask].get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._buckets[_h(key) & self._mask]

    def __iter__(self) -> Iterator[K]:
        for b in self._buckets:
            yield from b

    def __len__(self) -> int:
        return self._len

    def values(self) -> ValuesView[V]:
        return _Values(self)

    def items(self) -> ItemsView[K, V]:
        return _Items(self)

    def __repr__(self) -> str:
        return f"PMap({dict(self.items())!r})"

    def __reduce__(self) -> tuple[type[PMap[K, V]], tuple[dict[K, V]]]:
        return (PMap, (dict(self.items()),))

    # -- updates -----------------------------------------------------------------
    def set(self, key: K, value: V) -> PMap[K, V]:
        return self.evolve({key: value})

    def remove(self, key: K) -> PMap[K, V]:
        return self.evolve({key: REMOVE}) if key in self else self

    def evolve(self, changes: Mapping[K, V | Removal] | Iterable[tuple[K, V | Removal]]) -> PMap[K, V]:
        """A new PMap with ``changes`` (key -> value or REMOVE) applied.

        Only the touched buckets are copied; the others are shared."""
        if not changes:
            return self
        mask = self._mask
        buckets = list(self._buckets)
        copied: set[int] = set()
        n = self._len
        items = changes.items() if isinstance(changes, Mapping) else changes
        for k, v in items:
            i = _h(k) & mask
            b = buckets[i]
            if i not in copied:
                b = buckets[i] = dict(b)
                copied.add(i)
            if v is REMOVE:
                if k in b:
                    del b[k]
                    n -= 1
            else:
                if k not in b:
                    n += 1
                b[k] = v
        new: PMap[K, V] = PMap.__new__(PMap)
        if n > (mask + 1) * _MAX_LOAD:
            data: dict[K, V] = {}
            for b in buckets:
                data.update(b)
            new._build(data)
            return new
        new._buckets, new._mask, new._len = tuple(buckets), mask, n
        return new

    def shares_bucket_with(self, other: PMap[K, V], key: K) -> bool:
        """True if ``key``'s bucket is the same object in both maps (tests)."""
        return (self._mask == other._mask
                and self._buckets[_h(key) & self._mask] is other._buckets[_h(key) & other._mask])


class _Values(ValuesView[V]):
    __slots__ = ()
    _mapping: PMap[Any, V]          # MappingView's slot, declared for the checker

    def __iter__(self) -> Iterator[V]:
        for b in self._mapping._buckets:
            yield from b.values()


class _Items(ItemsView[K, V]):
    __slots__ = ()
    _mapping: PMap[K, V]            # MappingView's slot, declared for the checker

    def __iter__(self) -> Iterator[tuple[K, V]]:
        for b in self._mapping._buckets:
            yield from b.items()
