"""Topic descriptions from DescribeTopicPartitions (API 75, KIP-966), over `BrokerWire`.

The one source that carries each partition's leader epoch and its eligible
leader replicas (ELR) and last known ELR. Pages are followed through
NextCursor until the broker has answered every partition (each page at most
`PAGE_PARTITIONS`; a broker caps it further with
max.request.partition.size.limit). When the broker also serves
ListPartitionReassignments (API 46), ongoing reassignments fill ``adding``
and ``removing``; otherwise they stay null (unknown).

KIP-1303: ``local_log`` lists each replica's local log coverage as its leader
last reported it to the controller (``start_timestamp`` / ``size_bytes``, -1
when not reported) and whether it is ``eligible`` for leader election
preference now, from the response's tagged LocalLogCoverage (tierlog's
extension; null when the broker does not send it).

The descriptions have the shape `topics_describe` documents.
"""

from __future__ import annotations

import base64

from tierlog.cli.broker_wire import BrokerWire
from tierlog.cli.errors import CliError
from tierlog.cli.render import note
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, error_name

__all__ = [
    "PAGE_PARTITIONS", "describe_partitions", "missing_error", "topic_id_text",
]

PAGE_PARTITIONS = 2000          # ResponsePartitionLimit of each page (Kafka's default)
_NO_LEADER = -1
_ZERO_UUID = bytes(16)


def topic_id_text(raw: bytes) -> str | None:
    """A topic id as Kafka prints it: url-safe base64 of the 16 bytes, unpadded."""
    if raw == _ZERO_UUID:
        return None
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def describe_partitions(wire: BrokerWire, names: list[str]) -> list[dict]:
    """Descriptions of ``names`` (every topic when empty), in that order (sorted for all)."""
    found, errors = _fetch_pages(wire, names)
    missing = [n for n in names if n not in found and errors.get(n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
               == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    if missing:
        raise missing_error(missing)
    for name in names:
        if name not in found:
            raise CliError(f"cannot describe topic {name!r}: {_error_name(errors[name])}")
    descriptions = [found[n] for n in (names or sorted(found))]
    _add_reassignments(wire, descriptions)
    return descriptions


def _fetch_pages(wire: BrokerWire, names: list[str]) -> tuple[dict, dict]:
    """Topic name -> description, and topic name -> error code, over every page."""
    version = wire.version(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
    assert version is not None, "asked only of a broker serving DescribeTopicPartitions (topics_describe.describe)"
    body = {"Topics": [{"Name": n} for n in names], "ResponsePartitionLimit": PAGE_PARTITIONS, "Cursor": None}
    found: dict[str, dict] = {}
    errors: dict[str, int] = {}
    while True:
        response = wire.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, body, version, "DescribeTopicPartitions")
        for topic in response["Topics"]:
            if topic["ErrorCode"]:
                errors[topic["Name"]] = topic["ErrorCode"]
            else:
                _merge(found, topic)
        cursor = response["NextCursor"]
        if cursor is None:
            return found, errors
        if cursor == body["Cursor"]:
            raise CliError(f"DescribeTopicPartitions from {wire.address} repeated its cursor {cursor}")
        body["Cursor"] = cursor


def _merge(found: dict, topic: dict) -> None:
    """Add one answered topic (or the next page of one) to ``found``."""
    described = found.setdefault(topic["Name"], {
        "topic": topic["Name"], "topic_id": topic_id_text(bytes(topic["TopicId"])),
        "internal": bool(topic["IsInternal"]), "partitions": []})
    described["partitions"].extend(_partition(p) for p in topic["Partitions"])


def _partition(p: dict) -> dict:
    return {
        "partition": p["PartitionIndex"],
        "leader": None if p["LeaderId"] == _NO_LEADER else p["LeaderId"],
        "leader_epoch": p["LeaderEpoch"],
        "replicas": list(p["ReplicaNodes"]),
        "isr": list(p["IsrNodes"]),
        "elr": list(p["EligibleLeaderReplicas"] or []),
        "last_known_elr": list(p["LastKnownElr"] or []),
        "offline": list(p["OfflineReplicas"]),
        "adding": None,
        "removing": None,
        "local_log": _local_log(p.get("LocalLogCoverage")),
    }


def _local_log(entries: list | None) -> list[dict] | None:
    if not entries:
        return None
    return [{"replica": c["BrokerId"], "start_timestamp": c["LocalLogStartTimestamp"],
             "size_bytes": c["LocalLogSizeBytes"], "eligible": bool(c["Eligible"])} for c in entries]


def _add_reassignments(wire: BrokerWire, descriptions: list[dict]) -> None:
    """Fill ``adding`` / ``removing`` from ListPartitionReassignments, if the broker serves it."""
    version = wire.version(ApiKey.LIST_PARTITION_REASSIGNMENTS)
    if version is None or not descriptions:
        return
    try:
        body = {"TimeoutMs": max(1, int(wire.remaining_s() * 1000)), "Topics": None}
        response = wire.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, body, version, "ListPartitionReassignments")
    except (CliError, TimeoutError) as exc:
        note(f"tierlog: ongoing reassignments unknown: {exc}")
        return
    if response["ErrorCode"]:
        note(f"tierlog: ongoing reassignments unknown: {_error_name(response['ErrorCode'])}")
        return
    ongoing = {(t["Name"], p["PartitionIndex"]): p for t in response["Topics"] for p in t["Partitions"]}
    for description in descriptions:
        for p in description["partitions"]:
            moving = ongoing.get((description["topic"], p["partition"]))
            p["adding"] = list(moving["AddingReplicas"]) if moving else []
            p["removing"] = list(moving["RemovingReplicas"]) if moving else []


def missing_error(missing: list[str]) -> CliError:
    if len(missing) == 1:
        return CliError(f"topic {missing[0]!r} does not exist")
    return CliError("topics do not exist: " + ", ".join(missing))


def _error_name(code: int) -> str:
    return error_name(code)
