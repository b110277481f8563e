"""`tierlog transactions describe-producers|abort`: the partition leader's side of
kafka-transactions.sh (KIP-664).

``describe-producers`` asks the partition's leader (found with Metadata) for the
producers it knows (DescribeProducers): producer id and epoch, the coordinator
epoch of its latest marker, its last sequence and timestamp, and the first offset
of its open transaction.

``abort`` ends a hanging transaction (one its coordinator has forgotten or can no
longer finish) the way Kafka's TransactionsCommand does: DescribeProducers finds
the producer whose open transaction starts at ``--start-offset`` on the partition
(none is an error), then WriteTxnMarkers asks the leader to append an ABORT marker
for that producer id and epoch, with the producer's latest coordinator epoch (0
when it has none), so the last stable offset moves past it.  ``--producer-id``,
``--producer-epoch`` and ``--coordinator-epoch`` name the producer directly instead.
WriteTxnMarkers needs CLUSTER_ACTION on the cluster when an authorizer is set.
"""

from __future__ import annotations

import argparse

from tierlog.cli.broker_wire import BrokerWire, security_of
from tierlog.cli.errors import CliError
from tierlog.cli.options import connection_options, non_negative_int
from tierlog.cli.render import epoch_ms_text, make_table, note, print_json, print_table
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import error_name

__all__ = ["add_partition_actions", "error_name", "version_of"]

_METADATA_VERSION = 12
_PRODUCER_FIELDS = (("producer_id", "ProducerId"), ("producer_epoch", "ProducerEpoch"),
                    ("latest_coordinator_epoch", "CoordinatorEpoch"), ("last_sequence", "LastSequence"),
                    ("last_timestamp", "LastTimestamp"), ("current_transaction_start_offset", "CurrentTxnStartOffset"))




def version_of(wire: BrokerWire, api_key: int, name: str) -> int:
    version = wire.version(api_key)
    if version is None:
        raise CliError(f"{wire.address} does not serve {name}")
    return version


def _leader_address(args: argparse.Namespace) -> str:
    """The address of the leader of --topic/--partition, from a Metadata answer."""
    with BrokerWire.from_args(args) as wire:
        version = min(version_of(wire, ApiKey.METADATA, "Metadata"), _METADATA_VERSION)
        body = {"Topics": [{"Name": args.topic}], "AllowAutoTopicCreation": False,
                "IncludeTopicAuthorizedOperations": False}
        meta = wire.call(ApiKey.METADATA, body, version, "Metadata")
    topic = meta["Topics"][0]
    if topic["ErrorCode"]:
        raise CliError(f"topic {args.topic}: {error_name(topic['ErrorCode'])}")
    found = [p for p in topic["Partitions"] if p["PartitionIndex"] == args.partition]
    if not found:
        raise CliError(f"topic {args.topic} has no partition {args.partition}")
    brokers = {b["NodeId"]: f"{b['Host']}:{b['Port']}" for b in meta["Brokers"]}
    if found[0]["LeaderId"] not in brokers:
        raise CliError(f"{args.topic}-{args.partition} has no leader right now")
    return brokers[found[0]["LeaderId"]]


def _producers(args: argparse.Namespace) -> tuple[str, list[dict]]:
    address = _leader_address(args)
    with BrokerWire(address, args.timeout, security_of(args)) as wire:
        version = version_of(wire, ApiKey.DESCRIBE_PRODUCERS, "DescribeProducers")
        body = {"Topics": [{"Name": args.topic, "PartitionIndexes": [args.partition]}]}
        resp = wire.call(ApiKey.DESCRIBE_PRODUCERS, body, version, "DescribeProducers")
    part = resp["Topics"][0]["Partitions"][0]
    if part["ErrorCode"]:
        raise CliError(f"cannot describe the producers of {args.topic}-{args.partition} at {address}: "
                       f"{error_name(part['ErrorCode'])}")
    return address, [{ours: p[theirs] for ours, theirs in _PRODUCER_FIELDS} for p in part["ActiveProducers"]]


def run_describe_producers(args: argparse.Namespace) -> int:
    _address, producers = _producers(args)
    if args.json:
        print_json(producers)
    elif not producers:
        note(f"no active producers on {args.topic}-{args.partition}")
    else:
        table = make_table("PRODUCER ID", "PRODUCER EPOCH", "LATEST COORDINATOR EPOCH", "LAST SEQUENCE",
                           "LAST TIMESTAMP", "CURRENT TRANSACTION START OFFSET")
        for p in producers:
            table.add_row(*(epoch_ms_text(p[ours]) if ours == "last_timestamp" else str(p[ours])
                            for ours, _ in _PRODUCER_FIELDS))
        print_table(table)
    return 0


def _abort_target(args: argparse.Namespace) -> dict:
    """The producer to abort: named by the options, or the one whose transaction starts at --start-offset."""
    named = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
    if args.start_offset is not None and any(v is not None for v in named):
        raise CliError("abort takes --start-offset or --producer-id/--producer-epoch/--coordinator-epoch, not both")
    if args.start_offset is None:
        if None in named:
            raise CliError("abort needs --start-offset, or all of --producer-id, --producer-epoch and "
                           "--coordinator-epoch")
        return {"producer_id": args.producer_id, "producer_epoch": args.producer_epoch,
                "coordinator_epoch": args.coordinator_epoch}
    _address, producers = _producers(args)
    found = [p for p in producers if p["current_transaction_start_offset"] == args.start_offset]
    if not found:
        raise CliError(f"could not find any open transaction starting at offset {args.start_offset} on "
                       f"partition {args.topic}-{args.partition}")
    p = found[0]
    return {"producer_id": p["producer_id"], "producer_epoch": p["producer_epoch"],
            "coordinator_epoch": max(0, p["latest_coordinator_epoch"])}


def run_abort(args: argparse.Namespace) -> int:
    target = _abort_target(args)
    address = _leader_address(args)
    with BrokerWire(address, args.timeout, security_of(args)) as wire:
        version = version_of(wire, ApiKey.WRITE_TXN_MARKERS, "WriteTxnMarkers")
        body = {"Markers": [{"ProducerId": target["producer_id"], "ProducerEpoch": target["producer_epoch"],
                             "TransactionResult": False, "CoordinatorEpoch": target["coordinator_epoch"],
                             "Topics": [{"Name": args.topic, "PartitionIndexes": [args.partition]}]}]}
        resp = wire.call(ApiKey.WRITE_TXN_MARKERS, body, version, "WriteTxnMarkers")
    code = resp["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"]
    if code:
        raise CliError(f"aborting producer {target['producer_id']}'s transaction on {args.topic}-{args.partition} "
                       f"failed: {error_name(code)}")
    out = {"topic": args.topic, "partition": args.partition, "leader": address, **target}
    if args.json:
        print_json(out)
    else:
        note(f"aborted the transaction of producer {target['producer_id']} (epoch {target['producer_epoch']}) "
             f"on {args.topic}-{args.partition}")
    return 0


def _partition_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="the topic of the partition")
    parser.add_argument("--partition", required=True, type=non_negative_int, metavar="N", help="the partition")
    parser.add_argument("--json", action="store_true", help="print JSON")


def add_partition_actions(actions) -> None:
    describe = actions.add_parser("describe-producers", parents=[connection_options()],
                                  help="the producers a partition's leader knows, with their open transactions",
                                  description="Describe the active producers of one partition at its leader "
                                              "(DescribeProducers).")
    _partition_options(describe)
    describe.set_defaults(func=run_describe_producers)
    abort = actions.add_parser("abort", parents=[connection_options()],
                               help="abort a hanging transaction on one partition",
                               description="Abort the open transaction starting at --start-offset on a "
                                           "partition by writing an ABORT marker at its leader "
                                           "(WriteTxnMarkers), as kafka-transactions.sh abort does.")
    _partition_options(abort)
    abort.add_argument("--start-offset", type=non_negative_int, metavar="OFFSET",
                       help="the first offset of the transaction to abort (see describe-producers)")
    abort.add_argument("--producer-id", type=non_negative_int, metavar="ID",
                       help="instead of --start-offset: the producer id")
    abort.add_argument("--producer-epoch", type=non_negative_int, metavar="EPOCH",
                       help="instead of --start-offset: the producer epoch")
    abort.add_argument("--coordinator-epoch", type=non_negative_int, metavar="EPOCH",
                       help="instead of --start-offset: the coordinator epoch")
    abort.set_defaults(func=run_abort)
