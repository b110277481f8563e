"""`tierlog users`: SCRAM credentials, kafka-configs.sh's user form (``--entity-type users``).

``--alter --add-config 'SCRAM-SHA-512=[password=...]' --entity-name alice`` upserts (the
client salts and hashes the password, AlterUserScramCredentials carries only the salted
password; the controller stores StoredKey / ServerKey), ``--delete-config SCRAM-SHA-512``
deletes, ``--describe [--entity-name alice]`` lists mechanisms and iterations
(DescribeUserScramCredentials). Through confluent-kafka's AdminClient, so
``--command-config`` (a SASL_SSL client.properties) works as for every other command.
"""
from __future__ import annotations

import argparse

from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from confluent_kafka.admin import ScramMechanism as AdminScramMechanism

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_exception
from tierlog.cli.options import connection_options
from tierlog.cli.render import make_table, note, print_json, print_table
from tierlog.cli.scram_config import parse_scram_config, parse_scram_mechanisms

__all__ = ["register"]

_EPILOG = """\
examples:
  tierlog users --alter --add-config 'SCRAM-SHA-512=[password=alice-secret]' --entity-name alice
  tierlog users --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=s],SCRAM-SHA-512=[password=s]' \\
      --entity-name bob --command-config tierlog-data/client.properties
  tierlog users --alter --delete-config SCRAM-SHA-256 --entity-name bob
  tierlog users --describe
"""


def _admin_mechanism(mechanism) -> AdminScramMechanism:
    return AdminScramMechanism[mechanism.name]


def _alterations(args: argparse.Namespace) -> list:
    if not args.entity_name:
        raise CliError("--alter needs --entity-name USER")
    if not args.add_config and not args.delete_config:
        raise CliError("nothing to alter: give --add-config 'SCRAM-SHA-512=[password=...]' and/or --delete-config")
    out: list = []
    for text in args.add_config:
        for e in parse_scram_config(text, "--add-config", need_name=False):
            info = ScramCredentialInfo(_admin_mechanism(e.mechanism), e.iterations)
            out.append(UserScramCredentialUpsertion(args.entity_name, info, e.password.encode()))
    for text in args.delete_config:
        out += [UserScramCredentialDeletion(args.entity_name, _admin_mechanism(m))
                for m in parse_scram_mechanisms(text, "--delete-config")]
    return out


def run_alter(args: argparse.Namespace) -> int:
    alterations = _alterations(args)
    conn = Connection(AdminClient, args)
    # one request per mechanism: a KRaft controller refuses a user altered twice in one request
    # (DUPLICATE_RESOURCE, Kafka's ScramControlManager), which two mechanisms at once would be
    for alteration in alterations:
        futures = conn.client.alter_user_scram_credentials([alteration], request_timeout=conn.timeout_s)
        conn.wait(list(futures.values()), f"SCRAM credentials of {args.entity_name}")
        for user, future in futures.items():
            if future.exception() is not None:
                raise CliError(f"cannot alter the SCRAM credentials of {user}: "
                               f"{describe_exception(future.exception())}")
    print(f"altered SCRAM credentials of user {args.entity_name}")
    return 0


def run_describe(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    users = [args.entity_name] if args.entity_name else None
    future = conn.client.describe_user_scram_credentials(users, request_timeout=conn.timeout_s)
    futures = list(future.values()) if isinstance(future, dict) else [future]
    conn.wait(futures, "SCRAM credentials")
    rows = []
    for f in futures:
        if f.exception() is not None:
            raise CliError(f"cannot describe SCRAM credentials: {describe_exception(f.exception())}")
    descriptions = {k: f.result() for k, f in future.items()} if isinstance(future, dict) else future.result()
    for user, description in sorted(descriptions.items()):
        rows += [(user, info.mechanism.name.replace("_", "-"), info.iterations)
                 for info in description.scram_credential_infos]
    if args.json:
        print_json([{"user": u, "mechanism": m, "iterations": i} for u, m, i in rows])
    elif not rows:
        note("no SCRAM credentials")
    else:
        table = make_table("User", "Mechanism", "Iterations")
        for u, m, i in rows:
            table.add_row(u, m, str(i))
        print_table(table)
    return 0


def _run(args: argparse.Namespace) -> int:
    return run_alter(args) if args.alter else run_describe(args)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "users", parents=[connection_options()], help="SASL/SCRAM users: add, change, delete, describe",
        description="Alter or describe users' SCRAM credentials (like kafka-configs.sh --entity-type users). "
                    "Passwords are salted and hashed by the client; the cluster keeps salt, iterations "
                    "and derived keys only.", epilog=_EPILOG)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true", help="add, change or delete credentials")
    action.add_argument("--describe", action="store_true", help="list users' mechanisms and iterations")
    p.add_argument("--entity-name", metavar="USER", help="the user (--describe without it: every user)")
    p.add_argument("--add-config", action="append", default=[], metavar="'MECHANISM=[password=P]'",
                   help="SCRAM-SHA-256 / SCRAM-SHA-512 credential to set, optionally iterations=N "
                        "(4096..16384, default 4096); repeatable")
    p.add_argument("--delete-config", action="append", default=[], metavar="MECHANISM",
                   help="mechanism(s) whose credential to delete; repeatable")
    p.add_argument("--json", action="store_true", help="--describe: print one JSON array")
    p.set_defaults(func=_run)
