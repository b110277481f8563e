"""`tierlog configs --entity-type users|clients|ips ...`: client quotas as kafka-configs.sh sets them.

    tierlog configs --entity-type users --entity-name alice --alter --add-config producer_byte_rate=1048576
    tierlog configs --entity-type users --entity-name alice --entity-type clients --entity-default \\
        --alter --add-config consumer_byte_rate=2097152,request_percentage=50
    tierlog configs --entity-type ips --entity-default --alter --add-config connection_creation_rate=20
    tierlog configs --entity-type users --describe
    tierlog configs --entity-type users --entity-name alice --alter --delete-config producer_byte_rate

Each ``--entity-type`` is paired, in order, with the next ``--entity-name N`` or
``--entity-default``; a type without either matches any name (``--describe`` only). Like
kafka-configs.sh, ``--describe`` is strict: ``--entity-type users`` lists the entities that
are a user alone, not (user, client id) pairs. confluent-kafka has no client quota APIs, so
this speaks DescribeClientQuotas (48) and AlterClientQuotas (49) itself (``BrokerWire``).
"""

from __future__ import annotations

import argparse

from tierlog.cli.broker_wire import BrokerWire
from tierlog.cli.errors import CliError
from tierlog.cli.render import note, print_json, print_result
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode, error_name

__all__ = ["ENTITY_TYPES", "add_quota_options", "run_quotas"]

#: kafka-configs.sh's entity types of quotas -> the protocol's
ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
_LABELS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
_MATCH_EXACT, _MATCH_DEFAULT, _MATCH_ANY = 0, 1, 2
_ANY = object()       # an entity type given without a name


def add_quota_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("client quotas (kafka-configs.sh's form)")
    group.add_argument("--entity-type", action="append", default=[], choices=sorted([*ENTITY_TYPES, "client-metrics"]),
                       help="users, clients or ips; repeat for a (user, client id) pair; client-metrics: KIP-714 "
                            "client metrics subscriptions (cli/cmd_client_metrics.py)")
    group.add_argument("--entity-name", action="append", dest="entity_names", default=[], metavar="NAME",
                       help="the name of the --entity-type before it")
    group.add_argument("--entity-default", action="append_const", dest="entity_names", const=None,
                       help="the default entity of the --entity-type before it")
    group.add_argument("--describe", action="store_true", help="show the quotas of the entities matched")
    group.add_argument("--alter", action="store_true", help="set (--add-config) or remove (--delete-config) quotas")
    group.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V]",
                       help="quotas to set: producer_byte_rate, consumer_byte_rate, request_percentage, "
                            "controller_mutation_rate; connection_creation_rate for ips; for client-metrics: "
                            "metrics=[PREFIX,...], interval.ms=MS, match=[SELECTOR=REGEX,...]")
    group.add_argument("--delete-config", action="append", default=[], metavar="K[,K]", help="quotas to remove")
    group.add_argument("--json", action="store_true", help="print one JSON object")


def _entity(args: argparse.Namespace) -> list[tuple[str, object]]:
    if not args.entity_type:
        raise CliError("give an ACTION (describe, alter) or --entity-type users|clients|ips")
    if len(args.entity_names) > len(args.entity_type):
        raise CliError("each --entity-name / --entity-default follows an --entity-type")
    names = list(args.entity_names) + [_ANY] * (len(args.entity_type) - len(args.entity_names))
    types = [ENTITY_TYPES[t] for t in args.entity_type]
    if len(set(types)) != len(types):
        raise CliError("an --entity-type is given twice")
    return list(zip(types, names, strict=True))


def _configs(texts: list[str], with_values: bool) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for part in (p.strip() for text in texts for p in text.split(",")):
        if not part:
            continue
        if not with_values:
            out[part] = None
            continue
        key, sep, value = part.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            raise CliError(f"bad --add-config {part!r}: expected KEY=NUMBER") from None
        if not sep:
            raise CliError(f"bad --add-config {part!r}: expected KEY=NUMBER")
    return out


def run_quotas(args: argparse.Namespace) -> int:
    entity = _entity(args)
    if args.describe == args.alter:
        raise CliError("give one of --describe or --alter")
    with BrokerWire.from_args(args) as wire:
        return _alter(args, wire, entity) if args.alter else _describe(args, wire, entity)


def _version(wire: BrokerWire, api_key: ApiKey, name: str) -> int:
    version = wire.version(api_key)
    if version is None:
        raise CliError(f"{wire.address} does not support {name}")
    return version


def _alter(args: argparse.Namespace, wire: BrokerWire, entity: list[tuple[str, object]]) -> int:
    if any(name is _ANY for _, name in entity):
        raise CliError("--alter needs --entity-name or --entity-default for each --entity-type")
    sets, removals = _configs(args.add_config, True), _configs(args.delete_config, False)
    if not sets and not removals:
        raise CliError("nothing to alter: give --add-config K=V and/or --delete-config K")
    both = sorted(set(sets) & set(removals))
    if both:
        raise CliError(f"quota {both[0]!r} is both added and deleted")
    ops = [{"Key": k, "Value": v, "Remove": False} for k, v in sets.items()]
    ops += [{"Key": k, "Value": 0.0, "Remove": True} for k in removals]
    body = {"Entries": [{"Entity": [{"EntityType": t, "EntityName": n} for t, n in entity], "Ops": ops}],
            "ValidateOnly": False}
    answer = wire.call(ApiKey.ALTER_CLIENT_QUOTAS, body, _version(wire, ApiKey.ALTER_CLIENT_QUOTAS,
                                                                  "AlterClientQuotas"), "AlterClientQuotas")
    result = answer["Entries"][0]
    if result["ErrorCode"] != ErrorCode.NONE:
        raise CliError(f"cannot alter quotas of {_label(entity)}: "
                       f"{result['ErrorMessage'] or error_name(result['ErrorCode'])}")
    print_result(args, f"Completed updating quota configs for {_label(entity)}.",
                 {"entity": _json_entity(entity), "set": sets, "deleted": list(removals)})
    return 0


def _describe(args: argparse.Namespace, wire: BrokerWire, entity: list[tuple[str, object]]) -> int:
    components = [{"EntityType": t, "MatchType": _MATCH_ANY if n is _ANY else _MATCH_DEFAULT if n is None
                   else _MATCH_EXACT, "Match": None if n is _ANY else n} for t, n in entity]
    answer = wire.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, {"Components": components, "Strict": True},
                       _version(wire, ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas"), "DescribeClientQuotas")
    if answer["ErrorCode"] != ErrorCode.NONE:
        raise CliError(f"cannot describe quotas: {answer['ErrorMessage'] or error_name(answer['ErrorCode'])}")
    entries = [([(e["EntityType"], e["EntityName"]) for e in x["Entity"]], {v["Key"]: v["Value"] for v in x["Values"]})
               for x in answer["Entries"] or []]
    if args.json:
        print_json({"entries": [{"entity": _json_entity(e), "quotas": q} for e, q in entries]})
        return 0
    if not entries:
        note(f"no quotas for {_label(entity)}")
    for e, quotas in entries:
        values = ", ".join(f"{k}={v}" for k, v in sorted(quotas.items()))
        print(f"Quota configs for {_label(e)} are {values}")
    return 0


def _label(entity: list[tuple[str, object]]) -> str:
    parts = []
    for entity_type, name in sorted(entity, key=lambda p: p[0] != "user"):
        label = _LABELS[entity_type]
        parts.append(f"any {label}" if name is _ANY else f"the default {label}" if name is None
                     else f"{label} '{name}'")
    return ", ".join(parts)


def _json_entity(entity: list[tuple[str, object]]) -> dict:
    return {t: ("*" if n is _ANY else n) for t, n in entity}
