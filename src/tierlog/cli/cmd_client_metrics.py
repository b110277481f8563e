"""`tierlog configs --entity-type client-metrics ...`: KIP-714 client metrics subscriptions as
kafka-configs.sh sets them:

    tierlog configs --entity-type client-metrics --entity-name producers --alter \\
        --add-config 'metrics=[org.apache.kafka.producer.],interval.ms=5000,match=[client_id=billing-.*]'
    tierlog configs --entity-type client-metrics --entity-name producers --describe
    tierlog configs --entity-type client-metrics --describe          # every subscription
    tierlog configs --entity-type client-metrics --entity-name producers --alter --delete-config match

A list value goes in brackets (its items separated by commas, as kafka-configs.sh takes them).
confluent-kafka has no CLIENT_METRICS resource type, so this speaks the protocol itself
(``cli.broker_wire``): IncrementalAlterConfigs and DescribeConfigs on resource type 16,
ListClientMetricsResources (74) to list the subscriptions.
"""

from __future__ import annotations

import argparse

from tierlog.cli.broker_wire import BrokerWire
from tierlog.cli.errors import CliError
from tierlog.cli.render import note, print_json, print_result
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode, error_name

__all__ = ["ENTITY_TYPE", "parse_add_config", "run_client_metrics"]

ENTITY_TYPE = "client-metrics"
CLIENT_METRICS = 16             # ConfigResource.Type.CLIENT_METRICS
_SET, _DELETE = 0, 1            # IncrementalAlterConfigs operations


def parse_add_config(texts: list[str]) -> dict[str, str]:
    """``k=v,k=[a,b]`` (repeatable) -> {k: v, k: "a,b"}: commas inside brackets belong to the value."""
    out: dict[str, str] = {}
    for text in texts:
        depth, start = 0, 0
        for i, c in enumerate(text + ","):
            depth += (c == "[") - (c == "]")
            if c == "," and depth == 0:
                _one(text[start:i].strip(), out)
                start = i + 1
        if depth != 0:
            raise CliError(f"bad --add-config {text!r}: unbalanced brackets")
    return out


def _one(part: str, out: dict[str, str]) -> None:
    if not part:
        return
    key, sep, value = part.partition("=")
    if not sep or not key.strip():
        raise CliError(f"bad --add-config {part!r}: expected KEY=VALUE or KEY=[A,B]")
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = ",".join(v.strip() for v in value[1:-1].split(",") if v.strip())
    out[key.strip()] = value


def run_client_metrics(args: argparse.Namespace) -> int:
    if args.entity_type != [ENTITY_TYPE]:
        raise CliError("--entity-type client-metrics goes alone")
    if len(args.entity_names) > 1:
        raise CliError("give one --entity-name for --entity-type client-metrics")
    name = args.entity_names[0] if args.entity_names else None
    if args.describe == args.alter:
        raise CliError("give one of --describe or --alter")
    if args.alter and not name:
        raise CliError("--alter needs --entity-name NAME for --entity-type client-metrics")
    with BrokerWire.from_args(args) as wire:
        return _alter(args, wire, name) if args.alter and name else _describe(args, wire, name)


def _version(wire: BrokerWire, api_key: ApiKey, what: str) -> int:
    version = wire.version(api_key)
    if version is None:
        raise CliError(f"{wire.address} does not support {what}")
    return version


def _alter(args: argparse.Namespace, wire: BrokerWire, name: str) -> int:
    sets = parse_add_config(args.add_config)
    removals = [k.strip() for text in args.delete_config for k in text.split(",") if k.strip()]
    if not sets and not removals:
        raise CliError("nothing to alter: give --add-config K=V and/or --delete-config K")
    both = sorted(set(sets) & set(removals))
    if both:
        raise CliError(f"config {both[0]!r} is both added and deleted")
    configs = [{"Name": k, "ConfigOperation": _SET, "Value": v} for k, v in sets.items()]
    configs += [{"Name": k, "ConfigOperation": _DELETE, "Value": None} for k in removals]
    body = {"Resources": [{"ResourceType": CLIENT_METRICS, "ResourceName": name, "Configs": configs}],
            "ValidateOnly": False}
    answer = wire.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, body,
                       _version(wire, ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs"),
                       "IncrementalAlterConfigs")
    result = answer["Responses"][0]
    if result["ErrorCode"] != ErrorCode.NONE:
        raise CliError(f"cannot alter client metrics {name!r}: "
                       f"{result['ErrorMessage'] or error_name(result['ErrorCode'])}")
    print_result(args, f"Completed updating config for client-metric {name}.",
                 {"client_metrics": name, "set": sets, "deleted": removals})
    return 0


def _describe(args: argparse.Namespace, wire: BrokerWire, name: str | None) -> int:
    if name is None:
        listed = wire.call(ApiKey.LIST_CLIENT_METRICS_RESOURCES, {},
                           _version(wire, ApiKey.LIST_CLIENT_METRICS_RESOURCES, "ListClientMetricsResources"),
                           "ListClientMetricsResources")
        if listed["ErrorCode"] != ErrorCode.NONE:
            raise CliError(f"cannot list client metrics: {error_name(listed['ErrorCode'])}")
        names = [r["Name"] for r in listed["ClientMetricsResources"]]
    else:
        names = [name]
    configs = _configs(wire, names) if names else {}
    if args.json:
        print_json({"client_metrics": [{"name": n, "configs": configs[n]} for n in names]})
        return 0
    if not names:
        note("no client metrics subscriptions")
    for n in names:
        values = ",".join(f"{k}={v}" for k, v in sorted(configs[n].items()))
        print(f"Dynamic configs for client-metric {n} are {values}" if values else
              f"No dynamic configs for client-metric {n}")
    return 0


def _configs(wire: BrokerWire, names: list[str]) -> dict[str, dict[str, str]]:
    body = {"Resources": [{"ResourceType": CLIENT_METRICS, "ResourceName": n, "ConfigurationKeys": None}
                          for n in names], "IncludeSynonyms": False, "IncludeDocumentation": False}
    answer = wire.call(ApiKey.DESCRIBE_CONFIGS, body, _version(wire, ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs"),
                       "DescribeConfigs")
    out = {}
    for r in answer["Results"]:
        if r["ErrorCode"] != ErrorCode.NONE:
            raise CliError(f"cannot describe client metrics {r['ResourceName']!r}: "
                           f"{r['ErrorMessage'] or error_name(r['ErrorCode'])}")
        out[r["ResourceName"]] = {c["Name"]: c["Value"] for c in r["Configs"]}
    return out
