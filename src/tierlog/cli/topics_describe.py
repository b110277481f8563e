"""`tierlog topics describe`: partitions, leader, leader epoch, replicas, ISR, ELR, topic id.

Sources, best first:

1. DescribeTopicPartitions (API 75, KIP-966) when the broker's ApiVersions
   lists it (`topic_partitions`): the only one with each partition's leader
   epoch, eligible leader replicas (ELR) and last known ELR; plus ongoing
   reassignments when the broker also serves ListPartitionReassignments (46).
   Spoken over tierlog's own connection (confluent-kafka has no such call),
   plaintext, TLS or SASL (PLAIN, SCRAM) as --command-config asks; not used when it asks
   for what that connection cannot speak.
2. The DescribeTopics admin call (Metadata v10+, which carries topic ids).
3. Plain metadata, without ids, against a broker too old for 2.

A description is a plain dict, the same one ``--json`` prints::

    {"topic": "t", "topic_id": "AaIBHe7pdeO3iyC3TwqcqQ" | null, "internal": false,
     "partitions": [{"partition": 0, "leader": 1, "leader_epoch": 4, "replicas": [1, 2, 3],
                     "isr": [1], "elr": [2], "last_known_elr": [], "offline": [3],
                     "adding": [], "removing": []}]}

From source 1 each partition also carries ``log_start_offset``,
``local_log_start_offset`` and ``highest_tiered_offset`` (-1: nothing in remote
storage), asked of its leader with ListOffsets (``log_offsets``); null when the
leader did not answer.

From source 1 each partition also carries ``local_log`` (KIP-1303): per
replica ``{"replica", "start_timestamp", "size_bytes", "eligible"}``, its local
log coverage as last reported to the controller (-1: not reported) and whether
it is eligible for leader election preference under the effective
``leader.election.eligible.local.log.ms`` / ``.bytes``; the table shows it as
``LocalLog`` (replica:bytes/age of its earliest local record, ``?`` unknown)
and ``NotEligible`` (replicas an election ranks last), when some replica has
reported.

``leader`` is null when the partition has none. ``leader_epoch``, ``elr``,
``last_known_elr`` and ``offline`` are null when the source (2 or 3) does not
carry them; ``adding`` and ``removing`` are null unless the broker serves
ListPartitionReassignments. The table shows a column only when its source
carries it (LastKnownElr, Offline, Adding and Removing only when some
partition has one); an empty list is shown as ``-``.
"""

from __future__ import annotations

import argparse
import base64
import sys
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from tierlog.cli import broker_wire
from tierlog.cli.connection import Connection
from tierlog.cli.log_offsets import add_log_offsets
from tierlog.cli.render import make_table, note, print_json, print_table
from tierlog.cli.table_progress import FIELD as TABLE_OFFSET
from tierlog.cli.table_progress import add_table_offsets
from tierlog.cli.topic_partitions import (
    describe_partitions,
    missing_error,
)
from tierlog.clock import wall_clock_ms
from tierlog.protocol.api import ApiKey

__all__ = ["describe", "run_describe"]

_NO_LEADER = -1
_FALLBACK_CODES = frozenset({KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION})
_NOT_CARRIED = {"leader_epoch": None, "elr": None, "last_known_elr": None, "offline": None,
                "adding": None, "removing": None, "local_log": None}


def _kafka_uuid(uuid) -> str | None:
    """A topic id as Kafka prints it: url-safe base64 of the 16 bytes, unpadded."""
    if uuid is None:
        return None
    raw = b"".join(
        bits.to_bytes(8, "big", signed=True)
        for bits in (uuid.get_most_significant_bits(), uuid.get_least_significant_bits())
    )
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _from_admin(topic) -> dict:
    return {
        "topic": topic.name,
        "topic_id": _kafka_uuid(topic.topic_id),
        "internal": bool(topic.is_internal),
        "partitions": [
            {
                "partition": p.id,
                "leader": p.leader.id if p.leader is not None else None,
                "replicas": [node.id for node in p.replicas],
                "isr": [node.id for node in p.isr],
                **_NOT_CARRIED,
            }
            for p in sorted(topic.partitions, key=lambda p: p.id)
        ],
    }


def _from_metadata(topic) -> dict:
    return {
        "topic": topic.topic,
        "topic_id": None,
        "internal": False,
        "partitions": [
            {
                "partition": p.id,
                "leader": p.leader if p.leader != _NO_LEADER else None,
                "replicas": list(p.replicas),
                "isr": list(p.isrs),
                **_NOT_CARRIED,
            }
            for p in sorted(topic.partitions.values(), key=lambda p: p.id)
        ],
    }


def _describe_with_admin(conn: Connection, names: list[str]) -> list[dict]:
    futures = conn.client.describe_topics(TopicCollection(names), request_timeout=conn.timeout_s)
    conn.wait(futures.values(), "topic descriptions")
    described, missing = [], []
    for name in names:
        error = futures[name].exception()
        if error is None:
            described.append(_from_admin(futures[name].result()))
        elif isinstance(error, KafkaException) and error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            missing.append(name)
        else:
            raise error
    if missing:
        raise missing_error(missing)
    return described


def _describe_with_metadata(conn: Connection, names: list[str]) -> list[dict]:
    topics = conn.metadata().topics
    missing = [name for name in names if name not in topics]
    if missing:
        raise missing_error(missing)
    return [_from_metadata(topics[name]) for name in names]


def _describe_with_librdkafka(args: argparse.Namespace, names: list[str]) -> list[dict]:
    conn = Connection(AdminClient, args)
    existing = conn.metadata().topics
    if not names:
        names = sorted(existing)
        if not names:
            return []
    try:
        return _describe_with_admin(conn, names)
    except KafkaException as exc:
        if exc.args[0].code() not in _FALLBACK_CODES:
            raise
        return _describe_with_metadata(conn, names)


def describe(args: argparse.Namespace, names: list[str]) -> list[dict]:
    """Descriptions of the named topics, or of every topic when none is named."""
    if broker_wire.usable(args):
        with broker_wire.BrokerWire.from_args(args) as wire:
            if wire.version(ApiKey.DESCRIBE_TOPIC_PARTITIONS) is not None:
                descriptions = describe_partitions(wire, names)
                add_log_offsets(wire, descriptions)
                add_table_offsets(wire, descriptions)
                return descriptions
    return _describe_with_librdkafka(args, names)


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids) or "-"


#: (heading, the cell of a partition's description)
Column = tuple[str, Callable[[dict[str, Any]], str]]


def _columns(partitions: list[dict]) -> list[Column]:
    """(heading, cell of a partition) of the columns this topic's source carries."""
    def carried(key):
        return bool(partitions) and all(p.get(key) is not None for p in partitions)

    def present(key):
        return any(p.get(key) for p in partitions)

    columns: list[Column] = [
               ("Partition", lambda p: str(p["partition"])),
               ("Leader", lambda p: "none" if p["leader"] is None else str(p["leader"]))]
    if carried("leader_epoch"):
        columns.append(("LeaderEpoch", lambda p: str(p["leader_epoch"])))
    columns += [("Replicas", lambda p: _ids(p["replicas"])), ("Isr", lambda p: _ids(p["isr"]))]
    if carried("elr"):
        columns.append(("Elr", lambda p: _ids(p["elr"])))
    optional = (("LastKnownElr", "last_known_elr"), ("Offline", "offline"),
                ("Adding", "adding"), ("Removing", "removing"))
    columns += [(heading, _ids_cell(key)) for heading, key in optional if present(key)]
    if partitions and all("highest_tiered_offset" in p for p in partitions):
        columns += [(heading, _offset_cell(key)) for heading, key in _OFFSET_COLUMNS]
    if partitions and all(TABLE_OFFSET in p for p in partitions):
        columns.append(("TableOffset", _offset_cell(TABLE_OFFSET)))
    if any(c["size_bytes"] >= 0 or c["start_timestamp"] >= 0 for p in partitions for c in p.get("local_log") or ()):
        now_ms = wall_clock_ms()
        columns += [("LocalLog", lambda p: _local_log_cell(p.get("local_log"), now_ms)),
                    ("NotEligible", lambda p: _ids([c["replica"] for c in p.get("local_log") or ()
                                                    if not c["eligible"]]))]
    return columns


def _ids_cell(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda p: _ids(p.get(key) or [])


def _offset_cell(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda p: _offset(p[key])


def _local_log_cell(entries: list | None, now_ms: int) -> str:
    """KIP-1303 coverage per replica: ``replica:bytes/age``, ``?`` for what was not reported."""
    if not entries:
        return "-"
    return " ".join(f"{c['replica']}:{_size(c['size_bytes'])}/{_age(c['start_timestamp'], now_ms)}"
                    for c in entries)


def _size(n: int) -> str:
    if n < 0:
        return "?"
    value: float = n
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return "?"


def _age(start_timestamp: int, now_ms: int) -> str:
    if start_timestamp < 0:
        return "?"
    seconds = max(0, now_ms - start_timestamp) // 1000
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            return f"{seconds // span}{unit}"
    return f"{seconds}s"


_OFFSET_COLUMNS = (("LogStartOffset", "log_start_offset"), ("LocalLogStartOffset", "local_log_start_offset"),
                   ("HighestTieredOffset", "highest_tiered_offset"))


def _offset(value: int | None) -> str:
    """An offset cell: ``?`` when the leader did not say, ``-`` for -1 (nothing tiered)."""
    return "?" if value is None else "-" if value < 0 else str(value)


def _show(description: dict) -> None:
    partitions = description["partitions"]
    first = partitions[0] if partitions else None     # Kafka: a reassignment's added replicas do not count
    replication = len(first["replicas"]) - len(first["adding"] or []) if first else 0
    topic_id = description["topic_id"] or "unknown"
    sep = "  " if sys.stdout.isatty() else "\t"       # kafka-topics' tabs, for awk and cut
    title = (
        f"Topic: {description['topic']}{sep}TopicId: {topic_id}{sep}"
        f"PartitionCount: {len(partitions)}{sep}ReplicationFactor: {replication}"
    )
    columns = _columns(partitions)
    table = make_table(*(heading for heading, _ in columns))
    for p in partitions:
        table.add_row(*(cell(p) for _, cell in columns))
    print(title)
    print_table(table)


def run_describe(args: argparse.Namespace) -> int:
    descriptions = describe(args, list(dict.fromkeys(args.names)))
    if args.json:
        print_json(descriptions)
    elif not descriptions:
        note("no topics")
    else:
        for index, description in enumerate(descriptions):
            if index:
                print()
            _show(description)
    return 0
