"""`tierlog configs describe|alter`, modelled on kafka-configs.sh; client quotas in
kafka-configs.sh's own form (`tierlog configs --entity-type users ... --alter`, `cli.cmd_quotas`).

``describe`` shows, like kafka-configs.sh, only the dynamic overrides of the
resource (source DYNAMIC_TOPIC_CONFIG for a topic, DYNAMIC_BROKER_CONFIG for
a broker, GROUP_CONFIG for a group's KIP-848 configs) unless ``--all`` is given.
A group need not exist (Kafka keeps configs for any group id). ``alter`` uses IncrementalAlterConfigs,
so configs not named are left as they are.
"""

from __future__ import annotations

import argparse

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from tierlog.cli.cmd_client_metrics import ENTITY_TYPE as CLIENT_METRICS_ENTITY
from tierlog.cli.cmd_client_metrics import run_client_metrics
from tierlog.cli.cmd_quotas import add_quota_options, run_quotas
from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_exception
from tierlog.cli.options import connection_options, key_value, non_negative_int
from tierlog.cli.render import (
    add_json_option,
    make_table,
    note,
    print_json,
    print_result,
    print_table,
)

__all__ = ["register"]

_DYNAMIC_SOURCE = {
    ResourceType.TOPIC: ConfigSource.DYNAMIC_TOPIC_CONFIG,
    ResourceType.BROKER: ConfigSource.DYNAMIC_BROKER_CONFIG,
    ResourceType.GROUP: ConfigSource.GROUP_CONFIG,
}
_KIND_NAME = {ResourceType.TOPIC: "topic", ResourceType.BROKER: "broker", ResourceType.GROUP: "group"}

_EPILOG = """\
examples:
  tierlog configs describe --topic orders
  tierlog configs describe --broker 1 --all --json
  tierlog configs alter --topic orders --set retention.ms=3600000 --delete cleanup.policy
  tierlog configs alter --group billing --set consumer.session.timeout.ms=30000
client quotas (kafka-configs.sh's form):
  tierlog configs --entity-type users --entity-name alice --alter --add-config producer_byte_rate=1048576
  tierlog configs --entity-type users --entity-name alice --entity-type clients --entity-default \
      --alter --add-config consumer_byte_rate=2097152,request_percentage=50
  tierlog configs --entity-type clients --entity-default --alter --add-config controller_mutation_rate=10
  tierlog configs --entity-type ips --entity-name 10.0.0.7 --alter --add-config connection_creation_rate=5
  tierlog configs --entity-type users --describe
  tierlog configs --entity-type users --entity-name alice --alter --delete-config producer_byte_rate
client metrics subscriptions (KIP-714; clients push the metrics named to the broker's /metrics):
  tierlog configs --entity-type client-metrics --entity-name producers --alter \
      --add-config 'metrics=[org.apache.kafka.producer.],interval.ms=5000,match=[client_id=billing-.*]'
  tierlog configs --entity-type client-metrics --describe
"""


def _run_entities(args: argparse.Namespace) -> int:
    """--entity-type: client quotas, or client metrics subscriptions."""
    if CLIENT_METRICS_ENTITY in args.entity_type:
        return run_client_metrics(args)
    return run_quotas(args)


def _resource(args: argparse.Namespace) -> tuple[ResourceType, str]:
    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    return ResourceType.BROKER, str(args.broker)


def _label(kind: ResourceType, name: str) -> str:
    return f"{_KIND_NAME[kind]} {name}"


def _check_exists(conn: Connection, kind: ResourceType, name: str) -> None:
    """Fail clearly instead of letting librdkafka wait for an unknown broker."""
    metadata = conn.metadata()
    if kind == ResourceType.BROKER and int(name) not in metadata.brokers:
        known = ", ".join(str(b) for b in sorted(metadata.brokers)) or "none"
        raise CliError(f"broker {name} is not in the cluster (brokers: {known})")
    if kind == ResourceType.TOPIC and name not in metadata.topics:
        raise CliError(f"topic {name!r} does not exist")


def _source_name(source) -> str:
    try:
        return ConfigSource(source).name
    except ValueError:
        return f"SOURCE_{int(source)}"


def _entry_dict(entry: ConfigEntry) -> dict:
    return {
        "name": entry.name,
        "value": None if entry.is_sensitive else entry.value,
        "source": _source_name(entry.source),
        "is_default": bool(entry.is_default),
        "is_read_only": bool(entry.is_read_only),
        "is_sensitive": bool(entry.is_sensitive),
    }


def _fetch_configs(conn: Connection, kind: ResourceType, name: str) -> list[dict]:
    resource = ConfigResource(kind, name)
    future = conn.client.describe_configs([resource], request_timeout=conn.timeout_s)[resource]
    conn.wait([future], f"configs of {_label(kind, name)}")
    if future.exception() is not None:
        raise CliError(f"cannot describe {_label(kind, name)}: {describe_exception(future.exception())}")
    return sorted((_entry_dict(e) for e in future.result().values()), key=lambda e: e["name"])


def _show(entries: list[dict], label: str, all_configs: bool) -> None:
    if not entries:
        hint = "" if all_configs else " (use --all to see every config)"
        note(f"no {'' if all_configs else 'dynamic '}configs for {label}{hint}")
        return
    title = f"{'All' if all_configs else 'Dynamic'} configs for {label}"
    table = make_table("Name", "Value", "Source", "ReadOnly")
    for e in entries:
        value = "(sensitive)" if e["is_sensitive"] else ("" if e["value"] is None else e["value"])
        table.add_row(e["name"], value, e["source"], "yes" if e["is_read_only"] else "no")
    print(title)
    print_table(table)


def run_describe(args: argparse.Namespace) -> int:
    kind, name = _resource(args)
    conn = Connection(AdminClient, args)
    _check_exists(conn, kind, name)
    entries = _fetch_configs(conn, kind, name)
    if not args.all:
        dynamic = _DYNAMIC_SOURCE[kind].name
        entries = [e for e in entries if e["source"] == dynamic]
    if args.json:
        print_json({"resource": _KIND_NAME[kind], "name": name, "configs": entries})
    else:
        _show(entries, _label(kind, name), args.all)
    return 0


def _alterations(args: argparse.Namespace) -> list[ConfigEntry]:
    sets = dict(args.set)
    both = sorted(set(sets) & set(args.delete))
    if both:
        raise CliError(f"config {both[0]!r} is both set and deleted")
    if not sets and not args.delete:
        raise CliError("nothing to alter: give --set KEY=VALUE and/or --delete KEY")
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in sets.items()]
    entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                for k in dict.fromkeys(args.delete)]
    return entries


def run_alter(args: argparse.Namespace) -> int:
    kind, name = _resource(args)
    entries = _alterations(args)
    conn = Connection(AdminClient, args)
    _check_exists(conn, kind, name)
    resource = ConfigResource(kind, name, incremental_configs=entries)
    future = conn.client.incremental_alter_configs([resource], request_timeout=conn.timeout_s)[resource]
    conn.wait([future], f"config change of {_label(kind, name)}")
    if future.exception() is not None:
        raise CliError(f"cannot alter {_label(kind, name)}: {describe_exception(future.exception())}")
    kind_name = "topic" if kind == ResourceType.TOPIC else "broker"
    print_result(args, f"altered configs of {_label(kind, name)}",
                 {"resource": kind_name, "name": name, "set": dict(args.set), "deleted": list(dict.fromkeys(args.delete))})
    return 0


def _add_target(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--topic", metavar="NAME", help="a topic's configs")
    target.add_argument("--broker", type=non_negative_int, metavar="ID", help="a broker's configs")
    target.add_argument("--group", metavar="ID", help="a consumer group's KIP-848 configs "
                        "(consumer.session.timeout.ms, consumer.heartbeat.interval.ms)")


def register(subparsers) -> None:
    common = connection_options()
    parser = subparsers.add_parser(
        "configs", parents=[common],
        help="describe and alter topic, broker and group configs; client quotas; client metrics subscriptions",
        description="Describe and alter configs (like kafka-configs.sh), client quotas "
                    "(--entity-type users|clients|ips) and client metrics subscriptions (--entity-type "
                    "client-metrics, KIP-714), as kafka-configs.sh.", epilog=_EPILOG,
    )
    add_quota_options(parser)
    parser.set_defaults(func=_run_entities)
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=False)

    describe = actions.add_parser("describe", parents=[common], help="show configs",
                                  description="Show a topic's, broker's or group's configs.")
    _add_target(describe)
    describe.add_argument("--all", action="store_true", help="every config, not only dynamic overrides")
    describe.add_argument("--json", action="store_true", help="print one JSON object")
    describe.set_defaults(func=run_describe)

    alter = actions.add_parser("alter", parents=[common], help="set or delete config overrides",
                               description="Set or delete config overrides (IncrementalAlterConfigs).")
    _add_target(alter)
    alter.add_argument("--set", "--add-config", type=key_value, action="append", default=[],
                       metavar="K=V", help="set a config; repeatable")
    alter.add_argument("--delete", "--delete-config", action="append", default=[], metavar="K",
                       help="remove an override (back to the default); repeatable")
    add_json_option(alter, "{resource, name, set: {key: value}, deleted: [keys]}")
    alter.set_defaults(func=run_alter)
