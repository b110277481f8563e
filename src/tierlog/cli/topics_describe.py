"""`tierlog topics describe`: partitions, leader, replicas, ISR, topic id.

Uses the DescribeTopics admin call (Metadata v10+, which carries topic ids);
against a broker too old for it, falls back to plain metadata, without ids.
A description is a plain dict, the same one ``--json`` prints::

    {"topic": "t", "topic_id": "AaIBHe7pdeO3iyC3TwqcqQ" | null, "internal": false,
     "partitions": [{"partition": 0, "leader": 1, "replicas": [1], "isr": [1]}]}

``leader`` is null when the partition has none.

Not shown, because no source the CLI can use carries them: the partition's
LeaderEpoch (confluent-kafka's ``TopicPartitionInfo`` from describe_topics has
only id, leader, replicas and isr, and its plain metadata has no epoch either)
and the eligible leader replicas (ELR, KIP-966: only DescribeTopicPartitions,
API 75, returns them, and brokers do not serve it yet; Metadata has no ELR).
Add them here when one of those changes.
"""

from __future__ import annotations

import argparse
import base64

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError
from tierlog.cli.render import make_table, note, print_json, print_table

__all__ = ["run_describe"]

_NO_LEADER = -1
_FALLBACK_CODES = frozenset({KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION})


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
            }
            for p in sorted(topic.partitions.values(), key=lambda p: p.id)
        ],
    }


def _missing_error(missing: list[str]) -> CliError:
    if len(missing) == 1:
        return CliError(f"topic {missing[0]!r} does not exist")
    return CliError("topics do not exist: " + ", ".join(missing))


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
        raise _missing_error(missing)
    return described


def _describe_with_metadata(conn: Connection, names: list[str]) -> list[dict]:
    topics = conn.metadata().topics
    missing = [name for name in names if name not in topics]
    if missing:
        raise _missing_error(missing)
    return [_from_metadata(topics[name]) for name in names]


def describe(conn: Connection, names: list[str]) -> list[dict]:
    """Descriptions of the named topics, or of every topic when none is named."""
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


def _show(description: dict) -> None:
    partitions = description["partitions"]
    replication = len(partitions[0]["replicas"]) if partitions else 0
    topic_id = description["topic_id"] or "unknown"
    title = (
        f"Topic: {description['topic']}  TopicId: {topic_id}  "
        f"PartitionCount: {len(partitions)}  ReplicationFactor: {replication}"
    )
    table = make_table("Partition", "Leader", "Replicas", "Isr")
    for p in partitions:
        leader = "none" if p["leader"] is None else str(p["leader"])
        table.add_row(str(p["partition"]), leader, _ids(p["replicas"]), _ids(p["isr"]))
    print(title)
    print_table(table)


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


def run_describe(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    descriptions = describe(conn, list(dict.fromkeys(args.names)))
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
