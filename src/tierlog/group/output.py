"""What a call into the group coordinator core asks its shell to do.

``records``: (key, value) bytes to append to the group's ``__consumer_offsets``
partition, in order (value None is a tombstone).  ``answers``: (token, response)
pairs; when ``records`` is not empty they are sent only once the records are
committed (the high watermark passed them), else with ``failure_code`` set as
each response's ErrorCode.  ``on_commit``: offset commits the core applies
(``GroupShard.apply_committed``) after that commit, so an OffsetFetch never sees
an offset that is not replicated.  ``on_failure``: (group id, generation) of
classic assignments the core takes back if the write fails
(``GroupShard.write_failed``: Kafka resets them and rebalances the group).
``txn_producer``: (producer id, epoch) of a TxnOffsetCommit: the records go in one
transactional batch of that producer, and ``on_commit`` waits for its transaction's
marker (KIP-98) instead of applying at once.
Tokens are the shell's (futures); the core only hands them back.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tierlog.protocol.errors import ErrorCode

from .log_records import OffsetKey

__all__ = ["Output", "with_error"]


@dataclass
class Output:
    records: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    answers: list[tuple[object, Mapping[str, Any]]] = field(default_factory=list)
    on_commit: list[tuple[OffsetKey, dict[str, Any] | None]] = field(default_factory=list)   # (key, value or None)
    on_failure: list[tuple[str, int]] = field(default_factory=list)             # (group id, generation)
    txn_producer: tuple[int, int] | None = None                                 # TxnOffsetCommit's producer

    def answer(self, token: object, response: Mapping[str, Any]) -> None:
        if token is not None:
            self.answers.append((token, response))

    def extend(self, other: Output) -> None:
        self.records += other.records
        self.answers += other.answers
        self.on_commit += other.on_commit
        self.on_failure += other.on_failure

    def __bool__(self) -> bool:
        return bool(self.records or self.answers or self.on_commit or self.on_failure)


def with_error(response: Mapping[str, Any], code: int) -> dict[str, Any]:
    """``response`` with every successful ErrorCode in it replaced by ``code`` (a failed write's answer)."""
    out = {k: _with_error(v, code) for k, v in response.items()}
    if out.get("ErrorCode") == ErrorCode.NONE:
        out["ErrorCode"] = code
    return out


def _with_error(value: object, code: int) -> object:
    if isinstance(value, list):
        return [_with_error(v, code) for v in value]
    if isinstance(value, Mapping):
        return with_error(value, code)
    return value
