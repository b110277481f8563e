"""`tierlog log-dirs describe`, modelled on kafka-log-dirs.sh --describe.

Asks every broker (or those of ``--broker-list``) for its log dirs with
DescribeLogDirs (key 35, sent to each broker itself, as Kafka's tool does):
per dir its path, its error (an offline dir: KAFKA_STORAGE_ERROR), the
volume's total and usable bytes (v4), and per partition replica its size on
disk and its offset lag (how far its log end is behind the high watermark).
``--topic-list`` keeps the partitions of those topics.  A replica moving to
another dir (AlterReplicaLogDirs) is listed in its target dir too, as
``TOPIC-N (future)`` with its future log's size and how far it is behind.

A table (tab-separated when stdout is not a terminal), or with ``--json``
kafka-log-dirs.sh's JSON: ``{"version": 1, "brokers": [{"broker", "logDirs":
[{"logDir", "error", "totalBytes", "usableBytes", "partitions": [{"partition":
"TOPIC-N", "size", "offsetLag", "isFuture"}]}]}]}``.

confluent-kafka has no DescribeLogDirs, so this command speaks the protocol
itself (`BrokerWire`), with --command-config's security.
"""

from __future__ import annotations

import argparse

from tierlog.cli.broker_wire import BrokerWire, security_of
from tierlog.cli.errors import CliError
from tierlog.cli.options import connection_options
from tierlog.cli.reassign_log_dirs import broker_addresses
from tierlog.cli.reassign_plan import broker_list
from tierlog.cli.render import add_json_option, make_table, print_json, print_table
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, error_name

__all__ = ["describe_document", "register"]

_EPILOG = """\
examples:
  tierlog log-dirs describe                            # every broker, every partition
  tierlog log-dirs describe --broker-list 4,5 --topic-list orders,events
  tierlog log-dirs describe --json                     # kafka-log-dirs.sh's JSON
"""


def _error_name(code: int) -> str | None:
    return None if code == ErrorCode.NONE else error_name(code)


def _dir_document(result: dict, topics: set[str] | None) -> dict:
    partitions = [{"partition": f"{t['Name']}-{p['PartitionIndex']}", "size": p["PartitionSize"],
                   "offsetLag": p["OffsetLag"], "isFuture": p["IsFutureKey"]}
                  for t in result["Topics"] if topics is None or t["Name"] in topics
                  for p in sorted(t["Partitions"], key=lambda p: p["PartitionIndex"])]
    return {"logDir": result["LogDir"], "error": _error_name(result["ErrorCode"]),
            "totalBytes": result.get("TotalBytes", -1), "usableBytes": result.get("UsableBytes", -1),
            "partitions": partitions}


def describe_document(answers: dict[int, dict], topics: set[str] | None) -> dict:
    """kafka-log-dirs.sh's JSON from each broker's DescribeLogDirs response body."""
    return {"version": 1, "brokers": [
        {"broker": broker, "logDirs": [_dir_document(r, topics) for r in answers[broker]["Results"]]}
        for broker in sorted(answers)]}


def _show(document: dict) -> None:
    table = make_table("Broker", "LogDir", "Status", "Partition", "Size", "OffsetLag")
    for broker in document["brokers"]:
        for d in broker["logDirs"]:
            state = d["error"] or "online"
            rows = [(p["partition"] + (" (future)" if p["isFuture"] else ""), str(p["size"]), str(p["offsetLag"]))
                    for p in d["partitions"]]
            for partition, size, lag in rows or [("-", "-", "-")]:
                table.add_row(str(broker["broker"]), d["logDir"], state, partition, size, lag)
    print_table(table)


def _log_dirs(address: str, args: argparse.Namespace, timeout_s: float) -> dict:
    with BrokerWire(address, timeout_s, security_of(args)) as wire:
        version = wire.version(ApiKey.DESCRIBE_LOG_DIRS)
        if version is None:
            raise CliError(f"{address} does not support DescribeLogDirs (API {ApiKey.DESCRIBE_LOG_DIRS})")
        answer = wire.call(ApiKey.DESCRIBE_LOG_DIRS, {"Topics": None}, version, "DescribeLogDirs")
    if answer.get("ErrorCode"):
        raise CliError(f"DescribeLogDirs from {address} failed: {_error_name(answer['ErrorCode'])}")
    return answer


def run_describe(args: argparse.Namespace) -> int:
    with BrokerWire.from_args(args) as wire:
        brokers = broker_addresses(wire)
        remaining = wire.remaining_s()
    wanted = args.broker_list if args.broker_list is not None else sorted(brokers)
    unknown = [b for b in wanted if b not in brokers]
    if unknown:
        known = ",".join(map(str, sorted(brokers))) or "none"
        raise CliError(f"broker(s) {','.join(map(str, unknown))} not in the cluster (brokers: {known})")
    answers = {b: _log_dirs(brokers[b], args, remaining) for b in wanted}
    topics = set(args.topic_list) if args.topic_list else None
    document = describe_document(answers, topics)
    if args.json:
        print_json(document)
    else:
        _show(document)
    return 0


def _topic_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected TOPIC,TOPIC,..., got {text!r}")
    return names


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "log-dirs", help="describe the brokers' log dirs (sizes, offset lag)",
        description="Describe log dirs (like kafka-log-dirs.sh).", epilog=_EPILOG)
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    describe = actions.add_parser(
        "describe", parents=[connection_options()], help="each broker's log dirs and partition replicas",
        description="Per broker and log dir: its state (online, or KAFKA_STORAGE_ERROR when offline), and "
                    "per partition replica in it its Size (bytes of its local segments) and OffsetLag "
                    "(how far its log end is behind the partition's high watermark; 0 for a leader, -1 "
                    "for a log not served yet); a replica moving to another dir is listed there too as TOPIC-N (future), "
                    "its lag being how far the copy is behind. DescribeLogDirs is sent to each broker.")
    describe.add_argument("--broker-list", metavar="ID,ID,...", type=broker_list,
                          help="the brokers to ask (default: every broker)")
    describe.add_argument("--topic-list", metavar="TOPIC,TOPIC,...", type=_topic_list,
                          help="only the partitions of these topics (default: every topic)")
    add_json_option(describe, "kafka-log-dirs.sh's {version, brokers: [{broker, logDirs}]}")
    describe.set_defaults(func=run_describe)
