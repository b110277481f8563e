"""What `tierlog groups reset-offsets` would commit: pure planning, no I/O.

Rules (Kafka's ConsumerGroupCommand):

* ``--to-earliest``: each partition's log start offset; ``--to-latest``: its
  log end offset.
* ``--to-offset N`` and ``--shift-by N`` (from the group's committed offset)
  are clamped to ``[log start, log end]``. A partition without a committed
  offset cannot be shifted: that is an error, not a guess.
* ``--to-datetime T``: the first offset whose timestamp is at or after T
  (ListOffsets by timestamp); the log end offset when no record is that late.
  T is ISO-8601 as Kafka's tool writes it, ``YYYY-MM-DDTHH:mm:SS.sss`` with an
  optional ``Z`` / ``+hh:mm`` / ``-hh:mm``; without one it is local time, as
  the JVM's default zone is for Kafka.

Topic selections (``--topic``) are ``T`` (every partition) or ``T:P,P,...``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import datetime

__all__ = ["PartitionOffsets", "Reset", "Strategy", "TopicSelection", "parse_datetime_ms", "parse_topic",
           "plan"]

TO_EARLIEST, TO_LATEST, TO_OFFSET, TO_DATETIME, SHIFT_BY = (
    "to-earliest", "to-latest", "to-offset", "to-datetime", "shift-by")
NO_RECORD_AT_OR_AFTER = -1   # ListOffsets by timestamp: no record that late


@dataclass(frozen=True)
class TopicSelection:
    """``--topic T`` (partitions None: all of them) or ``--topic T:0,2``."""

    topic: str
    partitions: tuple[int, ...] | None


@dataclass(frozen=True)
class Strategy:
    """One of the five reset targets; ``value`` is N, a shift, or a timestamp in ms."""

    kind: str
    value: int = 0


@dataclass(frozen=True)
class PartitionOffsets:
    """What is known of one partition before planning."""

    topic: str
    partition: int
    committed: int | None       # the group's committed offset, None when it has none
    log_start: int
    log_end: int
    for_timestamp: int | None = None   # ListOffsets answer for --to-datetime (-1: none that late)


@dataclass(frozen=True)
class Reset:
    topic: str
    partition: int
    current_offset: int | None
    new_offset: int
    log_start_offset: int
    log_end_offset: int

    def as_json(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "current_offset": self.current_offset,
                "new_offset": self.new_offset, "log_start_offset": self.log_start_offset,
                "log_end_offset": self.log_end_offset}


def parse_topic(text: str) -> TopicSelection:
    """``T`` or ``T:P,P`` (argparse type: a bad one is a usage error)."""
    topic, sep, rest = text.partition(":")
    if not topic.strip():
        raise argparse.ArgumentTypeError(f"expected TOPIC or TOPIC:PARTITION,..., got {text!r}")
    if not sep:
        return TopicSelection(topic.strip(), None)
    try:
        partitions = tuple(int(p) for p in rest.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad partition list in {text!r}: expected integers") from None
    if any(p < 0 for p in partitions):
        raise argparse.ArgumentTypeError(f"bad partition list in {text!r}: partitions are >= 0")
    return TopicSelection(topic.strip(), tuple(dict.fromkeys(partitions)))


def parse_datetime_ms(text: str) -> int:
    """Milliseconds since the epoch of an ISO-8601 time; naive means local time."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad date-time {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss, optionally with Z or +hh:mm"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()    # the local zone, as Kafka's tool uses the JVM's
    return int(moment.timestamp() * 1000)


def _clamp(offset: int, p: PartitionOffsets) -> int:
    return max(p.log_start, min(offset, p.log_end))


def _target(strategy: Strategy, p: PartitionOffsets) -> int:
    if strategy.kind == TO_EARLIEST:
        return p.log_start
    if strategy.kind == TO_LATEST:
        return p.log_end
    if strategy.kind == TO_OFFSET:
        return _clamp(strategy.value, p)
    if strategy.kind == SHIFT_BY:
        if p.committed is None:
            raise ValueError(f"cannot shift the offset of {p.topic}:{p.partition}: "
                             "the group has no committed offset there")
        return _clamp(p.committed + strategy.value, p)
    if strategy.kind == TO_DATETIME:
        if p.for_timestamp is None or p.for_timestamp == NO_RECORD_AT_OR_AFTER:
            return p.log_end
        return _clamp(p.for_timestamp, p)
    raise ValueError(f"unknown reset strategy {strategy.kind!r}")


def plan(strategy: Strategy, partitions: list[PartitionOffsets]) -> list[Reset]:
    """The new offset of every partition, sorted by topic and partition (ValueError: cannot plan)."""
    return [Reset(p.topic, p.partition, p.committed, _target(strategy, p), p.log_start, p.log_end)
            for p in sorted(partitions, key=lambda p: (p.topic, p.partition))]
