"""IncrementalAlterConfigs (44) and AlterConfigs (33) on the controller: topic, broker and group resources.

Topic resources (type 2): the topic must exist (UNKNOWN_TOPIC_OR_PARTITION);
SET / DELETE / APPEND / SUBTRACT apply to its overrides with the rules of
``topic_rules`` (INVALID_CONFIG for unknown names, bad values, list operations
on non-lists); the result must still validate as a whole.  Broker resources
(type 4): name "" is the cluster-wide default, otherwise a broker id
(registered or not, as Kafka allows); any key is stored as a string (dynamic
broker configs are read by whoever needs them from the image), except that the
KIP-1303 thresholds (``leader.election.eligible.local.log.ms`` / ``.bytes``,
dynamic cluster-wide per the KIP) must be longs >= -1, and a known boolean broker
config (e.g. KIP-1023's ``follower.fetch.last.tiered.offset.enable``) must be true
or false (INVALID_CONFIG).  Group resources (type 32, KIP-848): a group id (any, existing
or not, as Kafka; "" -> INVALID_REQUEST), its configs checked as a whole by
``metadata.group_rules`` against this controller's group.consumer.* bounds.  Client metrics
resources (type 16, KIP-714 subscriptions): a subscription name ("" -> INVALID_REQUEST), its
``metrics`` / ``interval.ms`` / ``match`` checked by ``metadata.client_metrics_rules``
(unknown names, a bad interval or pattern -> INVALID_CONFIG).  A resource
named twice -> INVALID_REQUEST; other types -> INVALID_REQUEST.

AlterConfigs (33, the legacy whole-set alter) gives each resource's complete
dynamic config set: keys not given (or given a null value) are deleted, the
rest SET; the same checks and error codes as IncrementalAlterConfigs, as
Kafka's legacyAlterConfigs does.

One ConfigRecord per key that changes (value None deletes it); ``ValidateOnly``
writes nothing.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tierlog.config import BROKER_CONFIGS
from tierlog.metadata.client_metrics_rules import CLIENT_METRICS_CONFIGS, validate_client_metrics_configs
from tierlog.metadata.cluster_records import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_CLIENT_METRICS,
    CONFIG_RESOURCE_GROUP,
    CONFIG_RESOURCE_TOPIC,
    ConfigRecord,
    MetadataRecord,
)
from tierlog.metadata.group_rules import validate_group_configs
from tierlog.metadata.image import MetadataImage
from tierlog.metadata.topic_rules import (
    RuleError,
    TieringRules,
    apply_config_op,
    validate_topic_configs,
)
from tierlog.protocol.errors import ErrorCode
from tierlog.storage import TOPIC_CONFIGS

from .controller_config import ControllerConfig

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_configs import (
        AlterConfigsRequest,
        AlterConfigsResource,
        AlterConfigsResourceResponse,
        AlterConfigsResponse,
    )
    from tierlog.protocol.typed.incremental_alter_configs import (
        IncrementalAlterConfigsAlterConfigsResource,
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
    )

__all__ = ["ConfigControlManager"]


#: a resource's configs after a request's: (before, the request's configs, the names known or None) -> after;
#: IncrementalAlterConfigs applies operations, AlterConfigs gives the whole new set
ApplyConfigs = Callable[[dict[str, str], Sequence[Mapping[str, Any]], Mapping[str, Any] | None], dict[str, str]]


class ConfigControlManager:
    def __init__(self, config: ControllerConfig):
        self.config = config

    def incremental_alter_configs(self, request: IncrementalAlterConfigsRequest, version: int,
                                  image: MetadataImage) -> tuple[Sequence[MetadataRecord], IncrementalAlterConfigsResponse]:
        return self._alter(request, image, _apply_incremental)

    def legacy_alter_configs(self, request: AlterConfigsRequest, version: int,
                             image: MetadataImage) -> tuple[Sequence[MetadataRecord], AlterConfigsResponse]:
        return self._alter(request, image, _replace_all)

    def _alter(self, request: AlterConfigsRequest | IncrementalAlterConfigsRequest, image: MetadataImage,
               apply: ApplyConfigs) -> tuple[Sequence[MetadataRecord], AlterConfigsResponse]:
        """AlterConfigs and IncrementalAlterConfigs: their responses have the same shape."""
        validate_only = request.get("ValidateOnly", False)
        responses: list[AlterConfigsResourceResponse] = []
        records, seen = [], set()
        for r in request["Resources"]:
            out: AlterConfigsResourceResponse = {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None,
                                                 "ResourceType": r["ResourceType"],
                   "ResourceName": r["ResourceName"]}
            key = (r["ResourceType"], r["ResourceName"])
            try:
                if key in seen:
                    raise RuleError(ErrorCode.INVALID_REQUEST, "The resource appears twice in the request.")
                seen.add(key)
                changes = self._one(r, image, apply)
            except RuleError as e:
                out["ErrorCode"], out["ErrorMessage"] = e.error_code, str(e)
            else:
                if not validate_only:
                    records.extend(changes)
            responses.append(out)
        return records, {"ThrottleTimeMs": 0, "Responses": responses}

    def _one(self, r: AlterConfigsResource | IncrementalAlterConfigsAlterConfigsResource, image: MetadataImage,
             apply: ApplyConfigs) -> list[ConfigRecord]:
        kind, name = r["ResourceType"], r["ResourceName"]
        if kind == CONFIG_RESOURCE_TOPIC:
            topic = image.topics.get(name)
            if topic is None:
                raise RuleError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
            before = dict(topic.configs)
            after = apply(before, r["Configs"], TOPIC_CONFIGS)
            was_tiered = str(before.get("remote.storage.enable", "false")).lower() == "true"
            validate_topic_configs(after, self.config.topic_defaults,
                                   TieringRules(name, self.config.remote_log_storage_system_enable, was_tiered,
                                                self.config.remote_storage_encryption_enable, before))
        elif kind == CONFIG_RESOURCE_BROKER:
            if name != "" and not name.lstrip("-").isdigit():
                raise RuleError(ErrorCode.INVALID_REQUEST, f"Broker resource name {name!r} is not a broker id.")
            before = dict(image.configs.get(name, {}))
            after = apply(before, r["Configs"], None)
            _check_broker_longs(after)
            _check_broker_booleans(before, after)
        elif kind == CONFIG_RESOURCE_GROUP:
            if not name:
                raise RuleError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
            before = dict(image.group_config(name))
            after = apply(before, r["Configs"], None)
            validate_group_configs(after, self.config.group_settings)
        elif kind == CONFIG_RESOURCE_CLIENT_METRICS:
            validate_client_metrics_configs(name, {})
            before = dict(image.client_metrics.get(name, {}))
            after = apply(before, r["Configs"], CLIENT_METRICS_CONFIGS)
            validate_client_metrics_configs(name, after)
        else:
            raise RuleError(ErrorCode.INVALID_REQUEST, f"Resource type {kind} cannot be altered here.")
        return _diff(kind, name, before, after)


_BROKER_LONGS = ("leader.election.eligible.local.log.ms", "leader.election.eligible.local.log.bytes")


def _check_broker_longs(configs: Mapping[str, str]) -> None:
    for key in _BROKER_LONGS:
        value = configs.get(key)
        if value is None:
            continue
        try:
            ok = int(str(value).strip()) >= -1
        except ValueError:
            ok = False
        if not ok:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: "
                                                      "must be a long of at least -1.")


def _check_broker_booleans(before: Mapping[str, str], after: Mapping[str, str]) -> None:
    for key, value in after.items():
        d = BROKER_CONFIGS.get(key)
        if d is not None and d.type == "boolean" and before.get(key) != value and \
                str(value).strip().lower() not in ("true", "false"):
            raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: "
                                                      "Expected value to be either true or false")


def _apply_incremental(before: dict[str, str], configs: Sequence[Mapping[str, Any]],
                       known: Mapping[str, Any] | None) -> dict[str, str]:
    """IncrementalAlterConfigs: each operation on a copy of ``before``."""
    after = dict(before)
    for c in configs:
        apply_config_op(after, c["Name"], c["ConfigOperation"], c["Value"], known=known)
    return after


def _replace_all(before: dict[str, str], configs: Sequence[Mapping[str, Any]],
                 known: Mapping[str, Any] | None) -> dict[str, str]:
    """AlterConfigs: the given keys are the whole new set (a null value: the key is deleted).

    Topic config names are checked afterwards by ``validate_topic_configs``; a
    key given twice keeps its last value, as in Kafka.
    """
    after = {c["Name"]: c["Value"] for c in configs}
    return {k: v for k, v in after.items() if v is not None}


def _diff(kind: int, name: str, before: Mapping[str, str], after: Mapping[str, str]) -> list[ConfigRecord]:
    out = [ConfigRecord(kind, name, k, v) for k, v in sorted(after.items()) if before.get(k) != v]
    out += [ConfigRecord(kind, name, k, None) for k in sorted(before) if k not in after]
    return out
