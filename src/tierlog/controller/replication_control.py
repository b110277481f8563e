"""Topics on the controller: CreateTopics (19) and DeleteTopics (20).

CreateTopics, per topic (Kafka's order of checks, Kafka's error codes):
a name repeated in the request -> INVALID_REQUEST; an illegal name ->
INVALID_TOPIC_EXCEPTION; an existing topic -> TOPIC_ALREADY_EXISTS; manual
``Assignments`` with NumPartitions or ReplicationFactor other than -1 ->
INVALID_REQUEST, else the assignment is checked (INVALID_REPLICA_ASSIGNMENT);
NumPartitions / ReplicationFactor -1 take ``num.partitions`` /
``default.replication.factor``; out-of-range counts -> INVALID_PARTITIONS /
INVALID_REPLICATION_FACTOR; bad configs -> INVALID_CONFIG; placement over usable
brokers (INVALID_REPLICATION_FACTOR when there are too few).  ``validateOnly``
runs every check and writes nothing.  Records: TopicRecord, one ConfigRecord
per config, one PartitionRecord per partition (ISR = the usable replicas,
leader = the first of them, epochs 0).  Topic ids are uuid4s drawn from the
injected ``random.Random`` the way Kafka's Uuid.randomUuid draws them (protocol/kafka_uuid.py).

DeleteTopics: by name (v0-5) or by name or id (v6); TOPIC_DELETION_DISABLED
when ``delete.topic.enable`` is false; UNKNOWN_TOPIC_OR_PARTITION /
UNKNOWN_TOPIC_ID for unknown topics.  One RemoveTopicRecord per topic.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tierlog.metadata.cluster_records import (
    CONFIG_RESOURCE_TOPIC,
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from tierlog.metadata.directories import directories_for
from tierlog.metadata.image import MetadataImage, TopicInfo
from tierlog.metadata.topic_rules import (
    MAX_PARTITIONS,
    RuleError,
    TieringRules,
    validate_creatable,
    validate_deletable,
    validate_topic_configs,
)
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.kafka_uuid import random_uuid
from tierlog.storage import TOPIC_CONFIGS

from .controller_config import ControllerConfig
from .placement import PlacementError, UsableBroker, place, validate_assignment

if TYPE_CHECKING:
    from tierlog.protocol.typed.create_topics import (
        CreatableTopic,
        CreatableTopicConfigs,
        CreatableTopicResult,
        CreateTopicsRequest,
        CreateTopicsResponse,
    )
    from tierlog.protocol.typed.delete_topics import (
        DeletableTopicResult,
        DeleteTopicsRequest,
        DeleteTopicsResponse,
    )

__all__ = ["NO_TOPIC_ID", "ReplicationControlManager"]

NO_TOPIC_ID = bytes(16)
# DescribeConfigs ConfigSource values used in CreateTopics v5+ answers
_TOPIC_CONFIG, _STATIC_BROKER_CONFIG, _DEFAULT_CONFIG = 1, 4, 5


class ReplicationControlManager:
    def __init__(self, config: ControllerConfig, rng: random.Random):
        self.config = config
        self.rng = rng

    # -- CreateTopics (19) ----------------------------------------------------

    def create_topics(self, request: CreateTopicsRequest, version: int,
                      image: MetadataImage) -> tuple[Sequence[MetadataRecord], CreateTopicsResponse]:
        validate_only = request.get("validateOnly", False)
        results: list[CreatableTopicResult] = []
        records, seen = [], set()
        for t in request["Topics"]:
            out = _create_result(t["Name"])
            try:
                if t["Name"] in seen:
                    raise RuleError(ErrorCode.INVALID_REQUEST, f"Topic '{t['Name']}' appears twice in the request.")
                seen.add(t["Name"])
                topic_records = self._create_one(t, image)
            except (RuleError, PlacementError) as e:
                out["ErrorCode"], out["ErrorMessage"] = e.error_code, str(e)
                results.append(out)
                continue
            self._fill_result(out, topic_records, validate_only)
            if not validate_only:
                records.extend(topic_records)
            results.append(out)
        return records, {"ThrottleTimeMs": 0, "Topics": results}

    def _create_one(self, t: CreatableTopic, image: MetadataImage) -> list[TopicRecord | ConfigRecord | PartitionRecord]:
        name = t["Name"]
        validate_creatable(name)
        if name in image.topics:
            raise RuleError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        assignments = self._assignments(t, image)
        configs = {c["Name"]: c["Value"] for c in t["Configs"]}
        validate_topic_configs(configs, self.config.topic_defaults,
                               TieringRules(name, self.config.remote_log_storage_system_enable,
                                            encryption_enabled=self.config.remote_storage_encryption_enable))
        usable = image.usable_brokers()
        topic_id = random_uuid(lambda: self.rng.getrandbits(128))
        records: list[TopicRecord | ConfigRecord | PartitionRecord] = [TopicRecord(name=name, topic_id=topic_id)]
        records += [ConfigRecord(CONFIG_RESOURCE_TOPIC, name, k, v) for k, v in sorted(configs.items())]
        for index, replicas in enumerate(assignments):
            isr = tuple(r for r in replicas if r in usable)
            if not isr:
                code = ErrorCode.INVALID_REPLICA_ASSIGNMENT if t["Assignments"] else ErrorCode.INVALID_REPLICATION_FACTOR
                raise RuleError(code, f"All brokers for partition {index} are fenced or in controlled shutdown.")
            records.append(PartitionRecord(partition_id=index, topic_id=topic_id, replicas=tuple(replicas),
                                           isr=isr, leader=isr[0], leader_epoch=0, partition_epoch=0,
                                           directories=directories_for(replicas, image.brokers.get)))
        return records

    def _assignments(self, t: CreatableTopic, image: MetadataImage) -> list[tuple[int, ...]]:
        if t["Assignments"]:
            if t["NumPartitions"] != -1 or t["ReplicationFactor"] != -1:
                raise RuleError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was given, so "
                                "NumPartitions and ReplicationFactor must be -1.")
            manual = validate_assignment(t["Assignments"], set(image.brokers))
            if len(manual) > MAX_PARTITIONS:
                raise RuleError(ErrorCode.INVALID_PARTITIONS,
                                f"Number of partitions must be between 1 and {MAX_PARTITIONS}.")
            return [manual[i] for i in range(len(manual))]
        n = self.config.num_partitions if t["NumPartitions"] == -1 else t["NumPartitions"]
        rf = self.config.default_replication_factor if t["ReplicationFactor"] == -1 else t["ReplicationFactor"]
        if not 1 <= n <= MAX_PARTITIONS:
            raise RuleError(ErrorCode.INVALID_PARTITIONS, f"Number of partitions must be between 1 and {MAX_PARTITIONS}.")
        if rf < 1:
            raise RuleError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be at least 1.")
        usable = [UsableBroker(b.node_id, b.rack) for b in image.brokers.values() if b.usable]
        return place(usable, n, rf, self.rng)

    def _fill_result(self, out: CreatableTopicResult, records: list[TopicRecord | ConfigRecord | PartitionRecord],
                     validate_only: bool) -> None:
        topic = records[0]
        assert isinstance(topic, TopicRecord), topic       # _create_one's first record
        parts = [r for r in records if isinstance(r, PartitionRecord)]
        configs = {r.name: r.value for r in records if isinstance(r, ConfigRecord)}
        out["TopicId"] = NO_TOPIC_ID if validate_only else topic.topic_id
        out["NumPartitions"] = len(parts)
        out["ReplicationFactor"] = len(parts[0].replicas)
        out["Configs"] = self._config_entries(configs)

    def _config_entries(self, overrides: dict[str, str | None]) -> list[CreatableTopicConfigs]:
        entries: list[CreatableTopicConfigs] = []
        for name, spec in sorted(TOPIC_CONFIGS.items()):
            if name in overrides:
                value, source = overrides[name], _TOPIC_CONFIG
            elif name in self.config.topic_defaults:
                value, source = _text(self.config.topic_defaults[name]), _STATIC_BROKER_CONFIG
            else:
                value, source = _text(spec.default), _DEFAULT_CONFIG
            entries.append({"Name": name, "Value": value, "ReadOnly": False, "ConfigSource": source,
                            "IsSensitive": False})
        return entries

    # -- DeleteTopics (20) ----------------------------------------------------

    def delete_topics(self, request: DeleteTopicsRequest, version: int,
                      image: MetadataImage) -> tuple[Sequence[MetadataRecord], DeleteTopicsResponse]:
        if version >= 6:
            wanted = [(t.get("Name"), t.get("TopicId", NO_TOPIC_ID)) for t in request["Topics"]]
        else:
            wanted = [(name, NO_TOPIC_ID) for name in request["TopicNames"]]
        results: list[DeletableTopicResult] = []
        records, gone = [], set()
        for name, topic_id in wanted:
            out: DeletableTopicResult = {"Name": name, "TopicId": topic_id, "ErrorCode": ErrorCode.NONE,
                                         "ErrorMessage": None}
            topic = self._find(name, topic_id, image, out)
            if topic is not None and topic.topic_id in gone:
                topic = None
                out["ErrorCode"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name else ErrorCode.UNKNOWN_TOPIC_ID
                out["ErrorMessage"] = "The topic appears twice in the request."
            if topic is not None:
                refusal = _deletion_refusal(topic.name, self.config.delete_topic_enable)
                if refusal is not None:
                    out["ErrorCode"], out["ErrorMessage"] = refusal.error_code, str(refusal)
                else:
                    out["Name"], out["TopicId"] = topic.name, topic.topic_id
                    gone.add(topic.topic_id)
                    records.append(RemoveTopicRecord(topic_id=topic.topic_id))
            results.append(out)
        return records, {"ThrottleTimeMs": 0, "Responses": results}

    @staticmethod
    def _find(name: str | None, topic_id: bytes, image: MetadataImage, out: DeletableTopicResult) -> TopicInfo | None:
        if name is None:
            topic = image.topic_by_id(topic_id)
            if topic is None:
                out["ErrorCode"], out["ErrorMessage"] = ErrorCode.UNKNOWN_TOPIC_ID, "Unknown topic id."
            return topic
        topic = image.topics.get(name)
        if topic is None or (topic_id != NO_TOPIC_ID and topic.topic_id != topic_id):
            out["ErrorCode"], out["ErrorMessage"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist."
            return None
        return topic


def _deletion_refusal(name: str, delete_topic_enable: bool) -> RuleError | None:
    if not delete_topic_enable:
        return RuleError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
    try:
        validate_deletable(name)
    except RuleError as e:
        return e
    return None


def _create_result(name: str) -> CreatableTopicResult:
    return {"Name": name, "TopicId": NO_TOPIC_ID, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None,
            "NumPartitions": -1, "ReplicationFactor": -1, "Configs": None}


def _text(value: object) -> str:
    return ",".join(value) if isinstance(value, (list, tuple)) else ("" if value is None else str(value))
