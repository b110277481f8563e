"""`tierlog acls --add|--remove|--list`, modelled on kafka-acls.sh (Kafka's AclCommand).

Resources: ``--topic``, ``--group``, ``--transactional-id`` (each repeatable) and
``--cluster``, with ``--resource-pattern-type`` (literal, the default; prefixed; and
for --list / --remove also any or match). Entries: ``--allow-principal`` /
``--deny-principal`` (repeatable, ``User:name``), ``--allow-host`` / ``--deny-host``
(default ``*``) and ``--operation`` (Kafka's names: Read, Write, Create, Delete,
Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All).
``--producer`` adds WRITE, DESCRIBE and CREATE on the topics (and WRITE, DESCRIBE on
transactional ids; with ``--idempotent`` IDEMPOTENT_WRITE on the cluster);
``--consumer`` adds READ and DESCRIBE on the topics and READ on the groups.
``--remove`` without principals removes every ACL of the resources; it asks before
removing unless ``--force``. ``--list`` without resources lists every ACL;
``--principal`` narrows it. Output is kafka-acls.sh's. --add and --remove go through
confluent-kafka's AdminClient (CreateAcls, DeleteAcls); --list sends DescribeAcls over
tierlog's own connection (``broker_wire``), because librdkafka drops DescribeAcls'
error code and a refused listing would read as "no ACLs".
"""
from __future__ import annotations

import argparse
import sys
from enum import Enum
from typing import NamedTuple

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tierlog.cli.broker_wire import BrokerWire, usable
from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, UsageError, describe_exception
from tierlog.cli.options import connection_options
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode

__all__ = ["register"]

CLUSTER_NAME = "kafka-cluster"
_OPERATIONS = {op.name.replace("_", "").lower(): op for op in AclOperation
               if op not in (AclOperation.UNKNOWN, AclOperation.ANY)}
_PATTERNS = {"literal": ResourcePatternType.LITERAL, "prefixed": ResourcePatternType.PREFIXED,
             "any": ResourcePatternType.ANY, "match": ResourcePatternType.MATCH}
_TYPE_NAMES = {2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}

_EPILOG = """\
examples:
  tierlog acls --add --allow-principal User:alice --operation Write --topic t1
  tierlog acls --add --allow-principal User:bob --consumer --topic orders- --group billing \\
      --resource-pattern-type prefixed
  tierlog acls --list --topic t1
  tierlog acls --remove --allow-principal User:alice --operation Write --topic t1 --force
  tierlog acls --list --command-config client.properties
"""


def _code(member) -> int:
    return member.value


def _operation(text: str) -> AclOperation:
    op = _OPERATIONS.get(text.replace("_", "").replace("-", "").lower())
    if op is None:
        raise argparse.ArgumentTypeError(f"unknown operation {text!r} (want one of "
                                         f"{', '.join(o.name.title().replace('_', '') for o in _OPERATIONS.values())})")
    return op


def _principal(text: str) -> str:
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not a principal (want e.g. User:alice)")
    return text


def _resources(args) -> list[tuple[ResourceType, str]]:
    out = [(ResourceType.TOPIC, t) for t in args.topic] + [(ResourceType.GROUP, g) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        out.append((ResourceType.BROKER, CLUSTER_NAME))
    return out


def _entries(args) -> list[tuple[str, str, AclPermissionType]]:
    """(principal, host, permission) for every principal x host named."""
    allow_hosts = args.allow_host or ["*"]
    deny_hosts = args.deny_host or ["*"]
    return ([(p, h, AclPermissionType.ALLOW) for p in args.allow_principal for h in allow_hosts]
            + [(p, h, AclPermissionType.DENY) for p in args.deny_principal for h in deny_hosts])


def _operations_by_resource(args, resources) -> dict[tuple, set]:
    """Kafka's getResourceToAcls: --operation on every resource, or the --producer / --consumer sets."""
    if not (args.producer or args.consumer):
        ops = set(args.operation) or ({AclOperation.ALL} if args.action == "add" else set())
        return {r: ops for r in resources}
    out: dict[tuple, set] = {}
    for kind, name in resources:
        ops = out.setdefault((kind, name), set())
        if kind == ResourceType.TOPIC:
            ops |= ({AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE} if args.producer else set())
            ops |= ({AclOperation.READ, AclOperation.DESCRIBE} if args.consumer else set())
        elif kind == ResourceType.GROUP and args.consumer:
            ops.add(AclOperation.READ)
        elif kind == ResourceType.TRANSACTIONAL_ID and args.producer:
            ops |= {AclOperation.WRITE, AclOperation.DESCRIBE}
    if args.producer and args.idempotent:
        out.setdefault((ResourceType.BROKER, CLUSTER_NAME), set()).add(AclOperation.IDEMPOTENT_WRITE)
    return {r: ops for r, ops in out.items() if ops}


def _check(args, resources) -> None:
    if args.consumer and not args.group:
        raise UsageError("--consumer needs --group")
    if (args.producer or args.consumer) and not args.topic:
        raise UsageError("--producer / --consumer need --topic")
    if args.action == "add":
        if not resources:
            raise UsageError("--add needs a resource: --topic, --group, --transactional-id or --cluster")
        if not (args.allow_principal or args.deny_principal):
            raise UsageError("--add needs --allow-principal or --deny-principal")
        if args.resource_pattern_type not in ("literal", "prefixed"):
            raise UsageError("--add takes --resource-pattern-type literal or prefixed")
    if args.action == "remove" and not resources:
        raise UsageError("--remove needs a resource: --topic, --group, --transactional-id or --cluster")


def _pattern(args) -> ResourcePatternType:
    return _PATTERNS[args.resource_pattern_type]


class _Acl(NamedTuple):
    """One ACL as the CLI prints it, from confluent-kafka's AclBinding or a DescribeAcls answer."""

    restype: int
    name: str
    pattern: int
    principal: str
    host: str
    operation: int
    permission: int

    @classmethod
    def of(cls, b) -> _Acl:
        return cls(b.restype.value, b.name, b.resource_pattern_type.value, b.principal, b.host, b.operation.value,
                   b.permission_type.value)


def _describe(acl: _Acl) -> str:
    return (f"(principal={acl.principal}, host={acl.host}, operation={_name(AclOperation, acl.operation)}, "
            f"permissionType={_name(AclPermissionType, acl.permission)})")


def _name(enum, code: int | Enum) -> str:
    try:
        return enum(code).name
    except ValueError:
        return f"UNKNOWN({code})"


def _resource_label(kind: int | ResourceType, name: str, pattern: int | ResourcePatternType) -> str:
    code = kind.value if isinstance(kind, ResourceType) else kind      # Kafka's names by code: CLUSTER, not BROKER
    kind_name = _TYPE_NAMES.get(code) or _name(ResourceType, code)
    return f"ResourcePattern(resourceType={kind_name}, name={name}, patternType={_name(ResourcePatternType, pattern)})"


def _print_grouped(acls, heading: str) -> None:
    grouped: dict[tuple, list] = {}
    for a in acls:
        grouped.setdefault((a.restype, a.name, a.pattern), []).append(a)
    for (kind, name, pattern), entries in sorted(grouped.items()):
        print(f"{heading} `{_resource_label(kind, name, pattern)}`: ")
        for a in sorted(set(entries), key=_describe):
            print(f" \t{_describe(a)} ")
        print()


def run_add(args, conn: Connection, resources) -> int:
    bindings = [AclBinding(kind, name, _pattern(args), principal, host, op, perm)
                for (kind, name), ops in _operations_by_resource(args, resources).items()
                for principal, host, perm in _entries(args) for op in sorted(ops, key=_code)]
    futures = conn.client.create_acls(bindings, request_timeout=conn.timeout_s)
    conn.wait(futures.values(), "ACL creation")
    for binding, future in futures.items():
        if future.exception() is not None:
            raise CliError(f"cannot add {_describe(_Acl.of(binding))}: {describe_exception(future.exception())}")
    _print_grouped([_Acl.of(b) for b in bindings], "Adding ACLs for resource")
    return 0


def _filters(args, resources) -> list[AclBindingFilter]:
    entries = _entries(args)
    ops_by_resource = _operations_by_resource(args, resources)
    out = []
    for (kind, name), ops in ops_by_resource.items():
        if not entries:
            # None matches any principal and host (confluent-kafka's filter; its annotation is AclBinding's)
            out.append(AclBindingFilter(kind, name, _pattern(args), None, None,  # type: ignore[arg-type]
                                        AclOperation.ANY, AclPermissionType.ANY))
            continue
        for principal, host, perm in entries:
            out += [AclBindingFilter(kind, name, _pattern(args), principal, host, op, perm)
                    for op in (sorted(ops, key=_code) or [AclOperation.ANY])]
    return out


def _confirm(args, resources) -> None:
    if args.force:
        return
    if not sys.stdin.isatty():
        raise UsageError("--remove asks for confirmation; give --force when not on a terminal")
    names = ", ".join(_resource_label(k, n, _pattern(args)) for k, n in resources)
    if input(f"Are you sure you want to remove ACLs from {names}? (y/n) ").strip().lower() != "y":
        raise CliError("nothing removed")


def run_remove(args, conn: Connection, resources) -> int:
    _confirm(args, resources)
    futures = conn.client.delete_acls(_filters(args, resources), request_timeout=conn.timeout_s)
    conn.wait(futures.values(), "ACL removal")
    removed = []
    for future in futures.values():
        if future.exception() is not None:
            raise CliError(f"cannot remove ACLs: {describe_exception(future.exception())}")
        removed += [_Acl.of(b) for b in future.result()]
    if not removed:
        print("no matching ACLs")
    _print_grouped(removed, "Removed ACLs for resource")
    return 0


def _list_filters(args, resources) -> list[dict]:
    """DescribeAcls requests: one per resource, or one for every ACL."""
    pattern = _PATTERNS[args.resource_pattern_type or "any"].value
    wanted = [(kind.value, name, pattern) for kind, name in resources] or [(1, None, 1)]     # 1: ANY
    return [{"ResourceTypeFilter": kind, "ResourceNameFilter": name, "PatternTypeFilter": p,
             "PrincipalFilter": args.principal, "HostFilter": None, "Operation": 1, "PermissionType": 1}
            for kind, name, p in wanted]


def _described(answer: dict) -> list[_Acl]:
    return [_Acl(r["ResourceType"], r["ResourceName"], r["PatternType"], a["Principal"], a["Host"], a["Operation"],
                 a["PermissionType"]) for r in answer["Resources"] for a in r["Acls"]]


def run_list(args, resources) -> int:
    """Over tierlog's own connection: librdkafka drops DescribeAcls' error code (a refusal would
    read as "no ACLs"); a SCRAM --command-config, which that connection cannot speak, uses librdkafka."""
    if not usable(args):
        return _list_with_librdkafka(args, resources)
    found: list[_Acl] = []
    with BrokerWire.from_args(args) as wire:
        version = wire.version(ApiKey.DESCRIBE_ACLS)
        if version is None:
            raise CliError(f"{wire.address} does not serve DescribeAcls (API 29)")
        for body in _list_filters(args, resources):
            answer = wire.call(ApiKey.DESCRIBE_ACLS, body, version, "DescribeAcls")
            if answer["ErrorCode"]:
                raise CliError(f"cannot list ACLs: {_name(ErrorCode, answer['ErrorCode'])}"
                               + (f" ({answer['ErrorMessage']})" if answer.get("ErrorMessage") else ""))
            found += _described(answer)
    _print_grouped(found, "Current ACLs for resource")
    return 0


def _list_with_librdkafka(args, resources) -> int:
    conn = Connection(AdminClient, args)
    found: list[_Acl] = []
    for body in _list_filters(args, resources):
        f = AclBindingFilter(ResourceType(body["ResourceTypeFilter"]), body["ResourceNameFilter"],
                             ResourcePatternType(body["PatternTypeFilter"]), body["PrincipalFilter"],
                             None, AclOperation.ANY, AclPermissionType.ANY)  # type: ignore[arg-type]  # None: any host
        future = conn.client.describe_acls(f, request_timeout=conn.timeout_s)
        conn.wait([future], "ACL listing")
        if future.exception() is not None:
            raise CliError(f"cannot list ACLs: {describe_exception(future.exception())}")
        found += [_Acl.of(b) for b in future.result()]
    _print_grouped(found, "Current ACLs for resource")
    return 0


def run(args: argparse.Namespace) -> int:
    resources = _resources(args)
    if args.action != "list" and args.resource_pattern_type is None:
        args.resource_pattern_type = "literal"
    _check(args, resources)
    if args.action == "list":
        return run_list(args, resources)
    conn = Connection(AdminClient, args)
    return {"add": run_add, "remove": run_remove}[args.action](args, conn, resources)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "acls", parents=[connection_options()], help="add, remove and list ACLs",
        description="Add, remove and list ACLs (like kafka-acls.sh).", epilog=_EPILOG)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", dest="action", action="store_const", const="add", help="add ACLs")
    action.add_argument("--remove", dest="action", action="store_const", const="remove", help="remove ACLs")
    action.add_argument("--list", dest="action", action="store_const", const="list", help="list ACLs")
    res = parser.add_argument_group("resources")
    res.add_argument("--topic", action="append", default=[], metavar="NAME", help="a topic (repeatable)")
    res.add_argument("--group", action="append", default=[], metavar="NAME", help="a consumer group (repeatable)")
    res.add_argument("--transactional-id", action="append", default=[], metavar="ID",
                     help="a transactional id (repeatable)")
    res.add_argument("--cluster", action="store_true", help="the cluster (kafka-cluster)")
    res.add_argument("--resource-pattern-type", choices=sorted(_PATTERNS), default=None,
                     help="literal (default for --add / --remove), prefixed; for --list / --remove also any "
                          "(default for --list) or match")
    ent = parser.add_argument_group("entries")
    ent.add_argument("--allow-principal", type=_principal, action="append", default=[], metavar="User:NAME")
    ent.add_argument("--deny-principal", type=_principal, action="append", default=[], metavar="User:NAME")
    ent.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="default *")
    ent.add_argument("--deny-host", action="append", default=[], metavar="HOST", help="default *")
    ent.add_argument("--operation", type=_operation, action="append", default=[], metavar="OP",
                     help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                          "AlterConfigs, IdempotentWrite or All (default All for --add)")
    ent.add_argument("--principal", type=_principal, default=None, metavar="User:NAME",
                     help="--list only the ACLs of this principal")
    ent.add_argument("--producer", action="store_true", help="the producer's operations (see above)")
    ent.add_argument("--consumer", action="store_true", help="the consumer's operations (needs --group)")
    ent.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    parser.add_argument("--force", action="store_true", help="--remove without asking")
    parser.set_defaults(func=run)
