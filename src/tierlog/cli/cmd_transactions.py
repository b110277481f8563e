"""`tierlog transactions list|describe|describe-producers|abort`, modelled on kafka-transactions.sh (KIP-664).

librdkafka has no transaction admin APIs, so every action speaks the protocol themselves
(`BrokerWire`): ``list`` asks every broker of the cluster (Metadata) for the
transactions it coordinates (ListTransactions); ``describe`` finds the
transactional id's coordinator (FindCoordinator key type 1) and asks it
(DescribeTransactions); ``describe-producers`` and ``abort`` work at a partition's
leader (`cli.transactions_partition`).  A broker that cannot be reached or answers an error is
a one-line message.
"""

from __future__ import annotations

import argparse

from tierlog.cli.broker_wire import BrokerWire, security_of
from tierlog.cli.errors import CliError
from tierlog.cli.options import connection_options
from tierlog.cli.render import epoch_ms_text, make_table, note, print_json, print_table
from tierlog.cli.transactions_partition import add_partition_actions, version_of
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import error_name

__all__ = ["register"]

_EPILOG = """\
examples:
  tierlog transactions list
  tierlog transactions list --json
  tierlog transactions describe --transactional-id payments-0
  tierlog transactions describe-producers --topic payments --partition 0
  tierlog transactions abort --topic payments --partition 0 --start-offset 4711
"""
TRANSACTION_KEY_TYPE = 1


def _brokers(args: argparse.Namespace) -> list[str]:
    with BrokerWire.from_args(args) as wire:
        body = {"Topics": [], "AllowAutoTopicCreation": False, "IncludeClusterAuthorizedOperations": False,
                "IncludeTopicAuthorizedOperations": False}
        meta = wire.call(ApiKey.METADATA, body, version_of(wire, ApiKey.METADATA, "Metadata"), "Metadata")
    return [f"{b['Host']}:{b['Port']}" for b in sorted(meta["Brokers"], key=lambda b: b["NodeId"])]


def run_list(args: argparse.Namespace) -> int:
    listed = []
    for address in _brokers(args):
        with BrokerWire(address, args.timeout, security_of(args)) as wire:
            version = version_of(wire, ApiKey.LIST_TRANSACTIONS, "ListTransactions")
            resp = wire.call(ApiKey.LIST_TRANSACTIONS, {"StateFilters": [], "ProducerIdFilters": []}, version,
                             "ListTransactions")
        if resp["ErrorCode"]:
            raise CliError(f"ListTransactions at {address} failed: {error_name(resp['ErrorCode'])}")
        listed += [{"transactional_id": t["TransactionalId"], "producer_id": t["ProducerId"],
                    "state": t["TransactionState"], "coordinator": address} for t in resp["TransactionStates"]]
    listed.sort(key=lambda t: t["transactional_id"])
    if args.json:
        print_json(listed)
    elif not listed:
        note("no transactional ids")
    else:
        table = make_table("TRANSACTIONAL ID", "PRODUCER ID", "STATE", "COORDINATOR")
        for t in listed:
            table.add_row(t["transactional_id"], str(t["producer_id"]), t["state"], t["coordinator"])
        print_table(table)
    return 0


def _coordinator(args: argparse.Namespace, tid: str) -> str:
    with BrokerWire.from_args(args) as wire:
        version = version_of(wire, ApiKey.FIND_COORDINATOR, "FindCoordinator")
        body = {"KeyType": TRANSACTION_KEY_TYPE, "Key": tid, "CoordinatorKeys": [tid]}
        resp = wire.call(ApiKey.FIND_COORDINATOR, body, version, "FindCoordinator")
    found = resp["Coordinators"][0] if version >= 4 else resp
    if found["ErrorCode"]:
        raise CliError(f"no coordinator for transactional id {tid!r}: {error_name(found['ErrorCode'])}")
    return f"{found['Host']}:{found['Port']}"


def run_describe(args: argparse.Namespace) -> int:
    tid = args.transactional_id
    address = _coordinator(args, tid)
    with BrokerWire(address, args.timeout, security_of(args)) as wire:
        version = version_of(wire, ApiKey.DESCRIBE_TRANSACTIONS, "DescribeTransactions")
        resp = wire.call(ApiKey.DESCRIBE_TRANSACTIONS, {"TransactionalIds": [tid]}, version, "DescribeTransactions")
    state = resp["TransactionStates"][0]
    if state["ErrorCode"]:
        raise CliError(f"cannot describe transactional id {tid!r}: {error_name(state['ErrorCode'])}")
    out = {"transactional_id": tid, "coordinator": address, "state": state["TransactionState"],
           "producer_id": state["ProducerId"], "producer_epoch": state["ProducerEpoch"],
           "timeout_ms": state["TransactionTimeoutMs"], "start_time_ms": state["TransactionStartTimeMs"],
           "partitions": [f"{t['Topic']}-{p}" for t in state["Topics"] for p in t["Partitions"]]}
    if args.json:
        print_json(out)
        return 0
    table = make_table("TRANSACTIONAL ID", "COORDINATOR", "PRODUCER ID", "EPOCH", "STATE", "TIMEOUT MS",
                       "START TIME", "PARTITIONS")
    table.add_row(tid, address, str(out["producer_id"]), str(out["producer_epoch"]), out["state"],
                  str(out["timeout_ms"]), epoch_ms_text(out["start_time_ms"]), ",".join(out["partitions"]) or "-")
    print_table(table)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "transactions", help="list, describe and abort transactions",
        description="List the transactions of the cluster, describe one, show a partition's producers and "
                    "abort a hanging transaction (like kafka-transactions.sh).",
        epilog=_EPILOG)
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[connection_options()],
                                 help="every transactional id, its producer id, state and coordinator",
                                 description="List the transactional ids every broker coordinates.")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(func=run_list)
    describe = actions.add_parser("describe", parents=[connection_options()],
                                  help="one transactional id: state, producer, timeout, partitions",
                                  description="Describe one transactional id at its coordinator.")
    describe.add_argument("--transactional-id", required=True, metavar="ID", help="the transactional id")
    describe.add_argument("--json", action="store_true", help="print one JSON object")
    describe.set_defaults(func=run_describe)
    add_partition_actions(actions)
