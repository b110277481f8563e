"""The AdminClient's consumer-group calls, with the retries `tierlog groups` needs.

A group's calls go to its coordinator, which may be briefly unavailable: the
``__consumer_offsets`` topic is created on first use, a new leader of one of
its partitions loads the groups from the log, a leadership move makes the old
one answer NOT_COORDINATOR. Those answers (`RETRIABLE`) are asked again, with
a growing backoff, until the command's --timeout; then they end as one line:
``coordinator of group G not available after Ns (COORDINATOR_NOT_AVAILABLE)``.
Every other error is the caller's to word.

States and types are spelled as Kafka's tools print them: ``Stable``,
``PreparingRebalance``, ``CompletingRebalance``, ``Empty``, ``Dead``;
``classic``, ``consumer``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Literal, overload

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import OffsetSpec

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_kafka_error
from tierlog.cli.render import note
from tierlog.clock import monotonic_s

__all__ = ["RETRIABLE", "STATE_NAMES", "TYPE_NAMES", "alter_offsets", "committed_offsets", "delete_group",
           "describe_group", "error_code", "list_groups", "log_offsets", "state_name", "type_name"]

RETRIABLE = frozenset({KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.NOT_COORDINATOR})
STATE_NAMES = {ConsumerGroupState.STABLE: "Stable", ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
               ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
               ConsumerGroupState.EMPTY: "Empty", ConsumerGroupState.DEAD: "Dead",
               ConsumerGroupState.UNKNOWN: "Unknown"}
TYPE_NAMES = {ConsumerGroupType.CLASSIC: "classic", ConsumerGroupType.CONSUMER: "consumer",
              ConsumerGroupType.UNKNOWN: "unknown"}
_BACKOFF_FIRST_S, _BACKOFF_MAX_S = 0.1, 1.0
_OFFSETS_ROUND_S = 3.0      # a first ListOffsets round waits this long at most for the leaders; later ones double


def state_name(state) -> str:
    return STATE_NAMES.get(state, str(state))


def type_name(kind) -> str:
    return TYPE_NAMES.get(kind, str(kind))


def error_code(error: BaseException | None) -> int | None:
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return error.args[0].code()
    return None


def _retrying(conn: Connection, group: str, what: str, start: Callable[[float], Future]):
    """``start(request_timeout_s)``'s result, asking again while the coordinator is unavailable."""
    deadline = conn.deadline()
    backoff = _BACKOFF_FIRST_S
    while True:
        future = start(max(1.0, deadline - monotonic_s()))
        conn.wait([future], what)
        error = future.exception()
        if error is None:
            return future.result()
        if error_code(error) not in RETRIABLE:
            raise error
        if monotonic_s() + backoff >= deadline:
            raise CliError(f"coordinator of group {group!r} not available after {conn.timeout_s:g}s "
                           f"({describe_kafka_error(error.args[0])})")
        time.sleep(backoff)     # backoff between two asks of an unavailable coordinator
        backoff = min(2 * backoff, _BACKOFF_MAX_S)


def list_groups(conn: Connection, states: set[ConsumerGroupState]) -> list:
    """Every group's ConsumerGroupListing (of the given states, if any), sorted by id.

    A broker whose coordinator partitions are still loading answers only part
    of its groups: asked again until --timeout, then the part is shown with a
    note on stderr. A list no broker answered is an error.
    """
    kwargs = {"states": states} if states else {}
    deadline, backoff = conn.deadline(), _BACKOFF_FIRST_S
    while True:
        future = conn.client.list_consumer_groups(request_timeout=conn.timeout_s, **kwargs)
        conn.wait([future], "the list of groups")
        result = future.result()
        retry = any(error_code(e) in RETRIABLE or _is_retriable_error(e) for e in result.errors)
        if not retry or monotonic_s() + backoff >= deadline:
            break
        time.sleep(backoff)     # backoff while coordinators load their groups
        backoff = min(2 * backoff, _BACKOFF_MAX_S)
    if result.errors and not result.valid:
        raise CliError(f"cannot list groups: {_first_error(result.errors)}")
    if result.errors:
        note(f"tierlog: some groups may be missing: {_first_error(result.errors)}")
    return sorted(result.valid, key=lambda g: g.group_id)


def _is_retriable_error(error) -> bool:
    """list_consumer_groups reports a broker's failure as a KafkaError or a KafkaException."""
    if isinstance(error, KafkaError):
        return error.code() in RETRIABLE
    return False


def _first_error(errors: list) -> str:
    first = errors[0]
    if isinstance(first, KafkaError):
        return describe_kafka_error(first)
    if isinstance(first, KafkaException) and first.args and isinstance(first.args[0], KafkaError):
        return describe_kafka_error(first.args[0])
    return str(first)


def describe_group(conn: Connection, group: str):
    """The group's ConsumerGroupDescription; None when it does not exist (Dead, GROUP_ID_NOT_FOUND)."""
    try:
        description = _retrying(conn, group, f"the description of group {group!r}", lambda timeout_s:
                                conn.client.describe_consumer_groups([group], request_timeout=timeout_s)[group])
    except KafkaException as exc:
        if error_code(exc) == KafkaError.GROUP_ID_NOT_FOUND:
            return None
        raise CliError(f"cannot describe group {group!r}: {describe_kafka_error(exc.args[0])}") from None
    if description.state == ConsumerGroupState.DEAD and not description.members:
        return None
    return description


def committed_offsets(conn: Connection, group: str, partitions: list[TopicPartition] | None = None
                      ) -> dict[tuple[str, int], int]:
    """The group's committed offsets, of ``partitions`` or of all its partitions."""
    request = [ConsumerGroupTopicPartitions(group, partitions)]
    result = _retrying(conn, group, f"the committed offsets of group {group!r}", lambda timeout_s:
                       conn.client.list_consumer_group_offsets(request, request_timeout=timeout_s)[group])
    committed = {}
    for tp in result.topic_partitions:
        if tp.error is not None:
            raise CliError(f"cannot read the committed offset of {tp.topic}:{tp.partition} for group "
                           f"{group!r}: {describe_kafka_error(tp.error)}")
        if tp.offset >= 0:
            committed[(tp.topic, tp.partition)] = tp.offset
    return committed


def alter_offsets(conn: Connection, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for the group (OffsetCommit as an admin: the group must be Empty)."""
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])]
    try:
        result = _retrying(conn, group, f"the new offsets of group {group!r}", lambda timeout_s:
                           conn.client.alter_consumer_group_offsets(request, request_timeout=timeout_s)[group])
    except KafkaException as exc:
        raise CliError(f"cannot commit offsets for group {group!r}: {describe_kafka_error(exc.args[0])}") from None
    for tp in result.topic_partitions:
        if tp.error is not None:
            raise CliError(f"cannot commit the offset of {tp.topic}:{tp.partition} for group {group!r}: "
                           f"{describe_kafka_error(tp.error)}")


def delete_group(conn: Connection, group: str) -> None:
    """DeleteGroups for one group; its errors (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP) as KafkaException."""
    _retrying(conn, group, f"the deletion of group {group!r}", lambda timeout_s:
              conn.client.delete_consumer_groups([group], request_timeout=timeout_s)[group])


@overload
def log_offsets(conn: Connection, partitions: list[tuple[str, int]], spec: OffsetSpec,
                strict: Literal[True] = True) -> dict[tuple[str, int], int]: ...
@overload
def log_offsets(conn: Connection, partitions: list[tuple[str, int]], spec: OffsetSpec,
                strict: bool) -> dict[tuple[str, int], int | None]: ...


def log_offsets(conn: Connection, partitions: list[tuple[str, int]], spec: OffsetSpec,
                strict: bool = True) -> dict[tuple[str, int], int] | dict[tuple[str, int], int | None]:
    """ListOffsets of ``partitions`` (earliest, latest or for a timestamp) from their leaders.

    A partition whose leader answers a retriable error (a leader election
    under way) or does not answer within the round (a dead leader still in
    librdkafka's metadata; rounds of 3 s, then 6, 12...) is asked again until --timeout. Then, or on another error,
    ``strict`` makes it a `CliError`; otherwise its offset is None.
    """
    offsets: dict[tuple[str, int], int | None] = {}
    pending, deadline, backoff, round_s = list(partitions), conn.deadline(), _BACKOFF_FIRST_S, _OFFSETS_ROUND_S
    while pending:
        failed = _ask_offsets(conn, pending, spec, offsets, round_s)
        round_s *= 2
        pending = [key for key, error in failed.items() if _retriable(error)]
        if pending and monotonic_s() + backoff < deadline:
            time.sleep(backoff)     # backoff while the partitions' leaders are elected
            backoff = min(2 * backoff, _BACKOFF_MAX_S)
            continue
        for (topic, partition), error in failed.items():
            if strict:
                raise CliError(f"cannot list the offsets of {topic}:{partition}: {_error_text(error)}")
            offsets[(topic, partition)] = None
        return offsets
    return offsets


def _ask_offsets(conn: Connection, partitions: list[tuple[str, int]], spec: OffsetSpec,
                 offsets: dict, round_s: float) -> dict[tuple[str, int], BaseException]:
    """One ListOffsets round of at most ``round_s``: fills ``offsets``, returns the failures."""
    round_s = max(1.0, min(round_s, conn.deadline() - monotonic_s()))
    futures = conn.client.list_offsets({TopicPartition(t, p): spec for t, p in partitions},
                                       request_timeout=round_s)
    conn.wait(futures.values(), "the partitions' offsets")
    failed = {}
    for tp, future in futures.items():
        error = future.exception()
        if error is None:
            offsets[(tp.topic, tp.partition)] = future.result().offset
        else:
            failed[(tp.topic, tp.partition)] = error
    return failed


def _retriable(error: BaseException) -> bool:
    """A leader election under way, or a leader that did not answer within the round (a dead one
    that librdkafka's metadata still names: the next round looks the leader up again)."""
    code = error_code(error)
    return code is not None and (code == KafkaError._TIMED_OUT or error.args[0].retriable())


def _error_text(error: BaseException) -> str:
    return describe_kafka_error(error.args[0]) if error_code(error) is not None else str(error) or type(error).__name__
