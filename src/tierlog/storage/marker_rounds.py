"""Several producers' transaction markers in one leader append (``Log.append_markers``): the
partition leader's side of a WriteTxnMarkers request that carries the markers of several
transactions (the coordinator's group commit, ``broker/txn_marker_sender.py``).

Each marker is validated and checked against the producer state on its own (KIP-98's epoch
fence, KIP-1228's "not newer with transaction.version 2", the coordinator epoch): a refused
marker gets its own error and the others are still written, as Kafka answers WriteTxnMarkers
per producer and partition.  The accepted markers are stamped with consecutive offsets and
written back to back as one run of control batches, one write and one replication wait.

A round holds at most one marker per producer: the producer state is checked before the round
is written, so a second marker of the same producer (a retry arriving with the next
transaction's) waits for the next round, checked against the state the first one left.
Sans-IO: the caller (``Log``) writes each round under its lock.
"""
from __future__ import annotations

from typing import NamedTuple

from tierlog.records.control import read_marker
from tierlog.records.errors import CORRUPT_MESSAGE, InvalidRecordError
from tierlog.records.header import NO_TIMESTAMP, BatchHeader
from tierlog.records.validate import validate
from tierlog.storage.append_checks import stamp, writable
from tierlog.storage.producer_state import ProducerStateError, ProducerStateManager

__all__ = ["MarkerRound", "marker_round"]

MarkerError = InvalidRecordError | ProducerStateError


class MarkerRound(NamedTuple):
    """One write: ``records`` (the accepted markers, stamped, back to back) and their ``headers``;
    ``written`` maps a marker's index to its offset, ``refused`` to its error; ``deferred``: the
    indexes left for the next round (a producer already in this one)."""

    records: bytearray
    headers: list[BatchHeader]
    written: dict[int, int]
    refused: dict[int, MarkerError]
    deferred: list[int]


def marker_round(producers: ProducerStateManager, markers: list[tuple[bytearray, int]], todo: list[int],
                 base_offset: int, leader_epoch: int, max_batch_bytes: int) -> MarkerRound:
    """The next round of ``markers`` (each ``(control batch, transaction version)``) among the
    indexes ``todo``, in order, its first marker at ``base_offset``."""
    out = MarkerRound(bytearray(), [], {}, {}, [])
    in_round: set[int] = set()
    for i in todo:
        records, transaction_version = markers[i]
        try:
            records = writable(records)
            validated = validate(records, max_batch_bytes=max_batch_bytes)
            header = _one_control_batch(validated.headers)
            if header.producer_id in in_round:
                out.deferred.append(i)
                continue
            _control_type, coordinator_epoch = read_marker(records, header)
            producers.check(validated.headers, transaction_version, coordinator_epoch)
        except (InvalidRecordError, ProducerStateError) as e:
            out.refused[i] = e
            continue
        offset = base_offset + len(out.headers)
        out.headers.extend(stamp(records, validated, offset, leader_epoch, NO_TIMESTAMP))
        out.records.extend(records)
        out.written[i] = offset
        in_round.add(header.producer_id)
    return out


def _one_control_batch(headers: list[BatchHeader]) -> BatchHeader:
    if len(headers) != 1 or not headers[0].is_control:
        raise InvalidRecordError(CORRUPT_MESSAGE, "a transaction marker is one control batch")
    return headers[0]

