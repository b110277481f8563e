"""Topic creation, deletion and config changes as Kafka validates them.

Shared by CreateTopics, DeleteTopics, IncrementalAlterConfigs and Metadata's
auto-creation.  Every refusal is ``TopicAdminError(error_code, message)``.
"""
from __future__ import annotations

import re

from tierlog.metadata import MetadataError, TopicInfo
from tierlog.protocol.errors import ErrorCode
from tierlog.storage import TOPIC_CONFIGS, LogConfig

__all__ = ["TopicAdminError", "validate_topic_name", "create_topic", "delete_topic", "alter_topic_configs",
           "MAX_TOPIC_NAME_LENGTH", "MAX_PARTITIONS"]

MAX_TOPIC_NAME_LENGTH = 249
MAX_PARTITIONS = 10000          # per topic; a bound of ours, Kafka has none
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


class TopicAdminError(Exception):
    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code


def validate_topic_name(name: str | None) -> None:
    if not name or name in (".", ".."):
        raise TopicAdminError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name {name!r} is illegal.")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise TopicAdminError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                              f"Topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters.")
    if not _LEGAL.match(name):
        raise TopicAdminError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                              f"Topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'.")


def validate_configs(broker, configs: dict[str, str]) -> None:
    unknown = [k for k in configs if k not in TOPIC_CONFIGS]
    if unknown:
        raise TopicAdminError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {unknown[0]}")
    try:
        LogConfig.from_props({**broker.replicas.topic_defaults, **configs})
    except ValueError as e:
        raise TopicAdminError(ErrorCode.INVALID_CONFIG, str(e)) from None


def create_topic(broker, name: str, num_partitions: int, replication_factor: int,
                 configs: dict[str, str], validate_only: bool = False) -> TopicInfo | None:
    validate_topic_name(name)
    if num_partitions == -1:
        num_partitions = broker.config["num.partitions"]
    if replication_factor == -1:
        replication_factor = broker.config["default.replication.factor"]
    if not 1 <= num_partitions <= MAX_PARTITIONS:
        raise TopicAdminError(ErrorCode.INVALID_PARTITIONS,
                              f"Number of partitions must be between 1 and {MAX_PARTITIONS}.")
    if replication_factor < 1:
        raise TopicAdminError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be at least 1.")
    validate_configs(broker, configs)
    if name in broker.image.topics:
        raise TopicAdminError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if validate_only:
        return None
    try:
        topic = broker.metadata.create_topic(name, num_partitions, replication_factor, configs)
    except MetadataError as e:
        raise TopicAdminError(e.error_code, str(e)) from None
    broker.replicas.apply_image(broker.image)
    return topic


def delete_topic(broker, name: str) -> TopicInfo:
    if not broker.config["delete.topic.enable"]:
        raise TopicAdminError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
    try:
        topic = broker.metadata.delete_topic(name)
    except MetadataError as e:
        raise TopicAdminError(e.error_code, str(e)) from None
    broker.replicas.apply_image(broker.image)
    return topic


def alter_topic_configs(broker, name: str, configs: dict[str, str], validate_only: bool) -> None:
    if name not in broker.image.topics:
        raise TopicAdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
    validate_configs(broker, configs)
    if validate_only:
        return
    broker.metadata.alter_topic_configs(name, configs)
    broker.replicas.apply_image(broker.image)
