"""DescribeConfigs (32), v1-4: topic configs (override, broker default, built-in default), this broker's,
and a group's (KIP-848 resource type GROUP, 32: ``consumer.session.timeout.ms`` and
``consumer.heartbeat.interval.ms``, GROUP_CONFIG when set for the group, else DEFAULT_CONFIG
with this broker's group.consumer.* value; any group id, existing or not, as Kafka), and a client
metrics subscription's (KIP-714 resource type CLIENT_METRICS, 16: the configs it has set, source
CLIENT_METRICS_CONFIG, as Kafka's ConfigHelper lists them; "" is INVALID_REQUEST).

ConfigSource follows Kafka: TOPIC_CONFIG for a topic override,
DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG for a broker value set
with IncrementalAlterConfigs on this broker's id / on the default resource ""
(e.g. KIP-1023's follower.fetch.last.tiered.offset.enable; such a key is not
read-only), STATIC_BROKER_CONFIG for a value from server.properties,
DEFAULT_CONFIG otherwise; synonyms (v1+) list the chain; ConfigType and Documentation (v3+).
Broker resources answer only for this node's id (clients send them to that node).

Read your writes through any broker: the answer waits until this broker's image
has caught up with the quorum's high watermark (one DescribeQuorum round trip to
the active controller, at most CATCH_UP_TIMEOUT_S), so a describe right after an
alter answered by another broker shows the new value. Kafka answers from its
local cache at once and may show the old value for a moment.
ACLs: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or the cluster for a
broker or a client metrics subscription (CLUSTER_AUTHORIZATION_FAILED).

Plugin settings (``rsm.config.*``, ``rlmm.config.*`` from server.properties) are listed too,
as Kafka lists a broker's originals (ConfigHelper.allConfigs), STATIC_BROKER_CONFIG and
read-only. Kafka shows a setting whose type it cannot know as sensitive (value null); so
does tierlog, except for the keys its own remote storage declares: where the store is
(``tiered.factory.STORAGE_KEYS``, credentials never being settings) and whether uploads are
encrypted. Those are shown, so a reader (the Spark source's ``remoteStorage=auto``) can find the
store from the cluster; encryption keys and unknown keys stay null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.config import BROKER_CONFIGS, PLUGIN_PREFIXES
from tierlog.metadata.client_metrics_rules import CLIENT_METRICS_CONFIGS
from tierlog.metadata.group_rules import (
    GROUP_CONFIGS,
    broker_default_key,
    broker_group_settings,
)
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader
from tierlog.storage import TOPIC_CONFIGS
from tierlog.tiered.encryption_config import ENABLED as ENCRYPTION_ENABLED
from tierlog.tiered.factory import STORAGE_KEYS

from . import authz
from .context import HandlerContext
from .forward import catch_up

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_configs import (
        DescribeConfigsRequest,
        DescribeConfigsResource,
        DescribeConfigsResourceResult,
        DescribeConfigsResponse,
        DescribeConfigsResult,
        DescribeConfigsSynonym,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_CONFIGS, 1, 4
CATCH_UP_TIMEOUT_S = 1.0
TOPIC, BROKER, GROUP, CLIENT_METRICS = 2, 4, 32, 16
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 3, 4, 5
CLIENT_METRICS_CONFIG, GROUP_CONFIG = 7, 8
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7,
                "class": 8, "password": 9}
DESCRIBED_PLUGIN_KEYS = STORAGE_KEYS | {ENCRYPTION_ENABLED}   # plugin settings shown with their value
_BROKER_SYNONYM = {d.topic_synonym: d.name for d in BROKER_CONFIGS.values() if d.topic_synonym}


async def handle(broker: HandlerContext, header: RequestHeader, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    await catch_up(broker, CATCH_UP_TIMEOUT_S)
    results = [_resource(broker, r, request.get("IncludeSynonyms", False), request.get("IncludeDocumentation", False),
                         authz.config_refusal(broker, header, authz.Op.DESCRIBE_CONFIGS, r))
               for r in request["Resources"]]
    return {"ThrottleTimeMs": 0, "Results": results}


def _resource(broker, r: DescribeConfigsResource, synonyms: bool, docs: bool,
              refusal: ErrorCode | None = None) -> DescribeConfigsResult:
    out: DescribeConfigsResult = {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "ResourceType": r["ResourceType"],
           "ResourceName": r["ResourceName"], "Configs": []}
    if refusal is not None:
        out["ErrorCode"] = refusal
        return out
    if r["ResourceType"] == TOPIC:
        topic = broker.image.topics.get(r["ResourceName"])
        if topic is None:
            out["ErrorCode"], out["ErrorMessage"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unknown topic."
            return out
        entries = topic_config_entries(broker, topic)
    elif r["ResourceType"] == BROKER:
        if r["ResourceName"] not in ("", str(broker.node_id)):
            out["ErrorCode"] = ErrorCode.INVALID_REQUEST
            out["ErrorMessage"] = f"This is broker {broker.node_id}; ask broker {r['ResourceName']} itself."
            return out
        entries = broker_config_entries(broker) if r["ResourceName"] else []
    elif r["ResourceType"] == GROUP:
        if not r["ResourceName"]:
            out["ErrorCode"], out["ErrorMessage"] = ErrorCode.INVALID_REQUEST, "Group name must not be empty"
            return out
        entries = group_config_entries(broker, r["ResourceName"])
    elif r["ResourceType"] == CLIENT_METRICS:
        if not r["ResourceName"]:
            out["ErrorCode"] = ErrorCode.INVALID_REQUEST
            out["ErrorMessage"] = "Client metrics subscription name must not be empty"
            return out
        entries = client_metrics_entries(broker, r["ResourceName"])
    else:
        out["ErrorCode"], out["ErrorMessage"] = ErrorCode.INVALID_REQUEST, "Unsupported resource type."
        return out
    keys = r.get("ConfigurationKeys")
    out["Configs"] = [_render(e, synonyms, docs) for e in entries if keys is None or e["Name"] in keys]
    return out


def _render(e: DescribeConfigsResourceResult, synonyms: bool, docs: bool) -> DescribeConfigsResourceResult:
    out = e.copy()
    if not synonyms:
        out["Synonyms"] = []
    if not docs:
        out["Documentation"] = None
    return out


def topic_config_entries(broker, topic) -> list[DescribeConfigsResourceResult]:
    entries: list[DescribeConfigsResourceResult] = []
    for name, spec in sorted(TOPIC_CONFIGS.items()):
        chain: list[DescribeConfigsSynonym] = []
        if name in topic.configs:
            chain.append({"Name": name, "Value": topic.configs[name], "Source": TOPIC_CONFIG})
        broker_key = _BROKER_SYNONYM.get(name)
        if broker_key and broker.config.is_explicit(broker_key):
            chain.append({"Name": broker_key, "Value": broker.replicas.topic_defaults[name],
                          "Source": STATIC_BROKER_CONFIG})
        chain.append({"Name": broker_key or name, "Value": _text(spec.default), "Source": DEFAULT_CONFIG})
        entries.append({"Name": name, "Value": chain[0]["Value"], "ReadOnly": False,
                        "IsDefault": chain[0]["Source"] == DEFAULT_CONFIG, "ConfigSource": chain[0]["Source"],
                        "IsSensitive": False, "Synonyms": chain, "ConfigType": CONFIG_TYPES.get(spec.type, 0),
                        "Documentation": getattr(spec, "doc", None)})
    return entries


def broker_config_entries(broker) -> list[DescribeConfigsResourceResult]:
    entries: list[DescribeConfigsResourceResult] = []
    image = broker.image
    dynamic = ((image.broker_configs(broker.node_id), DYNAMIC_BROKER_CONFIG),
               (image.cluster_configs(), DYNAMIC_DEFAULT_BROKER_CONFIG))
    for name, d in sorted(BROKER_CONFIGS.items()):
        explicit = broker.config.is_explicit(name)
        source = STATIC_BROKER_CONFIG if explicit else DEFAULT_CONFIG
        chain: list[DescribeConfigsSynonym] = [{"Name": name, "Value": configs[name], "Source": src}
                                               for configs, src in dynamic if name in configs]
        chain.append({"Name": name, "Value": _text(broker.config[name]), "Source": source})
        entries.append({"Name": name, "Value": chain[0]["Value"], "ReadOnly": len(chain) == 1,
                        "IsDefault": chain[0]["Source"] == DEFAULT_CONFIG, "ConfigSource": chain[0]["Source"],
                        "IsSensitive": False, "Synonyms": chain,
                        "ConfigType": CONFIG_TYPES.get(d.type, 0), "Documentation": d.doc})
    return entries + plugin_config_entries(broker.config)


def plugin_config_entries(config) -> list[DescribeConfigsResourceResult]:
    """The ``rsm.config.*`` / ``rlmm.config.*`` settings of server.properties (see the module doc)."""
    entries: list[DescribeConfigsResourceResult] = []
    for prefix in PLUGIN_PREFIXES:
        for name, value in sorted(config.prefixed(prefix).items()):
            shown = name in DESCRIBED_PLUGIN_KEYS
            value = str(value) if shown else None
            entries.append({"Name": name, "Value": value, "ReadOnly": True, "IsDefault": False,
                            "ConfigSource": STATIC_BROKER_CONFIG, "IsSensitive": not shown,
                            "Synonyms": [{"Name": name, "Value": value, "Source": STATIC_BROKER_CONFIG}],
                            "ConfigType": CONFIG_TYPES["string"] if shown else 0, "Documentation": None})
    return entries


def group_config_entries(broker, group_id: str) -> list[DescribeConfigsResourceResult]:
    """A group's configs (KIP-848, KIP-932, ``metadata.group_rules``): GROUP_CONFIG when the group has
    its own value, else DEFAULT_CONFIG with this broker's group.<protocol>.* setting or the string's
    default (Kafka's createGroupConfigEntry)."""
    overrides, settings = broker.image.group_config(group_id), broker_group_settings(broker.config)
    entries: list[DescribeConfigsResourceResult] = []
    for name, spec in GROUP_CONFIGS.items():
        source = GROUP_CONFIG if name in overrides else DEFAULT_CONFIG
        if spec.type == "int":
            key = broker_default_key(name)
            default, doc = str(settings[key]), BROKER_CONFIGS[key].doc
        else:
            default, doc = spec.default, spec.doc
        value = overrides.get(name, default)
        entries.append({"Name": name, "Value": value, "ReadOnly": False, "IsDefault": source == DEFAULT_CONFIG,
                        "ConfigSource": source, "IsSensitive": False,
                        "Synonyms": [{"Name": name, "Value": value, "Source": source}],
                        "ConfigType": CONFIG_TYPES[spec.type], "Documentation": doc})
    return entries


def client_metrics_entries(broker, name: str) -> list[DescribeConfigsResourceResult]:
    """A client metrics subscription's set configs (``metadata.client_metrics_rules``)."""
    entries: list[DescribeConfigsResourceResult] = []
    for key, value in sorted(broker.image.client_metrics.get(name, {}).items()):
        spec = CLIENT_METRICS_CONFIGS.get(key)
        entries.append({"Name": key, "Value": value, "ReadOnly": False, "IsDefault": False,
                        "ConfigSource": CLIENT_METRICS_CONFIG, "IsSensitive": False,
                        "Synonyms": [{"Name": key, "Value": value, "Source": CLIENT_METRICS_CONFIG}],
                        "ConfigType": CONFIG_TYPES.get(spec.type, 0) if spec else 0,
                        "Documentation": spec.doc if spec else None})
    return entries


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
