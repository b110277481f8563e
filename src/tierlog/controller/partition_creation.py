"""CreatePartitions (37) on the controller: more partitions for existing topics.

Per topic, Kafka's checks and codes (ReplicationControlManager.createPartitions):
a name repeated in the request -> INVALID_REQUEST (one answer per repeated
name, as ControllerApis gives); an unknown topic -> UNKNOWN_TOPIC_OR_PARTITION;
Count equal to or below the current count -> INVALID_PARTITIONS; Count above
``MAX_PARTITIONS`` -> INVALID_PARTITIONS; Assignments (when not null) must
hold one replica list per new partition, each non-empty, without duplicates,
of registered brokers only and of the topic's replication factor (that of its
first partition), with at least one usable broker -> else
INVALID_REPLICA_ASSIGNMENT.  Without Assignments the new partitions are placed
like CreateTopics' (``placement.place`` over usable brokers;
INVALID_REPLICATION_FACTOR when too few are usable).  ``ValidateOnly`` runs
every check and writes nothing.

Records: one PartitionRecord per new partition (ISR = the usable replicas,
leader = the first of them, epochs 0), the same record CreateTopics writes, so
every replica's image gains the partitions and the brokers they land on
create their logs.
"""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tierlog.metadata.cluster_records import MetadataRecord, PartitionRecord
from tierlog.metadata.directories import directories_for
from tierlog.metadata.image import MetadataImage
from tierlog.metadata.topic_rules import MAX_PARTITIONS, RuleError
from tierlog.protocol.errors import ErrorCode

from .placement import PlacementError, UsableBroker, place

if TYPE_CHECKING:
    from tierlog.protocol.typed.create_partitions import (
        CreatePartitionsRequest,
        CreatePartitionsResponse,
        CreatePartitionsTopic,
        CreatePartitionsTopicResult,
    )

__all__ = ["create_partitions"]


def create_partitions(request: CreatePartitionsRequest, image: MetadataImage,
                      rng: random.Random) -> tuple[Sequence[MetadataRecord], CreatePartitionsResponse]:
    validate_only = request.get("ValidateOnly", False)
    counts = Counter(t["Name"] for t in request["Topics"])
    records: list[PartitionRecord] = []
    results: list[CreatePartitionsTopicResult] = []
    for t in request["Topics"]:
        if counts[t["Name"]] > 1:
            continue
        out: CreatePartitionsTopicResult = {"Name": t["Name"], "ErrorCode": ErrorCode.NONE, "ErrorMessage": None}
        try:
            new = _one(t, image, rng)
        except (RuleError, PlacementError) as e:
            out["ErrorCode"], out["ErrorMessage"] = e.error_code, str(e)
        else:
            if not validate_only:
                records.extend(new)
        results.append(out)
    results += [{"Name": name, "ErrorCode": ErrorCode.INVALID_REQUEST, "ErrorMessage": "Duplicate topic name."}
                for name, n in counts.items() if n > 1]
    return records, {"ThrottleTimeMs": 0, "Results": results}


def _one(t: CreatePartitionsTopic, image: MetadataImage, rng: random.Random) -> list[PartitionRecord]:
    topic = image.topics.get(t["Name"])
    if topic is None:
        raise RuleError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{t['Name']}' does not exist.")
    current, count = len(topic.partitions), t["Count"]
    if count == current:
        raise RuleError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if count < current:
        raise RuleError(ErrorCode.INVALID_PARTITIONS, f"The topic {topic.name} currently has {current} "
                        f"partition(s); {count} would not be an increase.")
    if count > MAX_PARTITIONS:
        raise RuleError(ErrorCode.INVALID_PARTITIONS, f"Number of partitions must be at most {MAX_PARTITIONS}.")
    rf = len(topic.partitions[0].replicas)
    assignments = _assignments(t, image, count - current, rf, rng)
    usable = image.usable_brokers()
    records = []
    for index, replicas in enumerate(assignments, start=current):
        isr = tuple(r for r in replicas if r in usable)
        if not isr:
            raise RuleError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"All brokers specified in the manual partition "
                            f"assignment for partition {index} are fenced or in controlled shutdown.")
        records.append(PartitionRecord(partition_id=index, topic_id=topic.topic_id, replicas=tuple(replicas),
                                       isr=isr, leader=isr[0], leader_epoch=0, partition_epoch=0,
                                       directories=directories_for(replicas, image.brokers.get)))
    return records


def _assignments(t: CreatePartitionsTopic, image: MetadataImage, additional: int, rf: int,
                 rng: random.Random) -> list[tuple[int, ...]]:
    assignments = t.get("Assignments")      # nullable: None asks the controller to place them
    if assignments is None:
        usable = [UsableBroker(b.node_id, b.rack) for b in image.brokers.values() if b.usable]
        return place(usable, additional, rf, rng)
    given = [tuple(a["BrokerIds"]) for a in assignments]
    if len(given) != additional:
        raise RuleError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {additional} additional "
                        f"partition(s), but only {len(given)} assignment(s) were specified.")
    for replicas in given:
        _check_manual(replicas, rf, image)
    return given


def _check_manual(replicas: tuple[int, ...], rf: int, image: MetadataImage) -> None:
    bad = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    if not replicas:
        raise RuleError(bad, "The manual partition assignment includes an empty replica list.")
    if len(set(replicas)) != len(replicas):
        raise RuleError(bad, f"The manual partition assignment includes a duplicate broker: {list(replicas)}.")
    unknown = [r for r in replicas if r not in image.brokers]
    if unknown:
        raise RuleError(bad, f"The manual partition assignment includes broker(s) {unknown}, which are not "
                        "registered.")
    if len(replicas) != rf:
        raise RuleError(bad, f"The manual partition assignment includes a partition with {len(replicas)} "
                        f"replica(s), but this is not consistent with previous partitions, which have {rf} "
                        "replica(s).")
