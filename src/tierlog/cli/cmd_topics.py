"""`tierlog topics create|list|describe|alter|delete`, modelled on kafka-topics.sh."""

from __future__ import annotations

import argparse

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_exception
from tierlog.cli.options import connection_options, key_value, positive_int
from tierlog.cli.render import add_json_option, note, print_json, print_result
from tierlog.cli.topics_describe import run_describe

__all__ = ["register"]

_BROKER_DEFAULT = -1  # CreateTopics v4+: let the broker pick

_EPILOG = """\
examples:
  tierlog topics create orders --partitions 3 --replication-factor 3 --config retention.ms=86400000
  tierlog topics list
  tierlog topics describe orders              # Leader, LeaderEpoch, Replicas, Isr, Elr per partition
  tierlog topics describe orders --json
  tierlog topics alter orders --partitions 6   # more partitions (CreatePartitions); never fewer
  tierlog topics delete orders --if-exists
"""


def _error_code(error: BaseException | None) -> int | None:
    if isinstance(error, KafkaException) and isinstance(error.args[0], KafkaError):
        return error.args[0].code()
    return None


def run_create(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    conn.metadata()  # fails fast, and clearly, when the cluster is unreachable
    topic = NewTopic(
        args.name,
        num_partitions=args.partitions or _BROKER_DEFAULT,
        replication_factor=args.replication_factor or _BROKER_DEFAULT,
        config=dict(args.config),
    )
    future = conn.client.create_topics([topic], request_timeout=conn.timeout_s)[args.name]
    conn.wait([future], f"creation of topic {args.name!r}")
    error = future.exception()
    if _error_code(error) == KafkaError.TOPIC_ALREADY_EXISTS:
        if args.if_not_exists:
            print_result(args, [], {"topic": args.name, "created": False})
            return 0
        raise CliError(f"topic {args.name!r} already exists")
    if error is not None:
        raise CliError(f"cannot create topic {args.name!r}: {describe_exception(error)}")
    print_result(args, f"created topic {args.name}", {"topic": args.name, "created": True})
    return 0


def run_list(args: argparse.Namespace) -> int:
    names = sorted(Connection(AdminClient, args).metadata().topics)
    if args.json:
        print_json(names)
    else:
        for name in names:
            print(name)
    return 0


def run_alter(args: argparse.Namespace) -> int:
    """kafka-topics.sh --alter --partitions: grow the topic to ``--partitions`` partitions."""
    conn = Connection(AdminClient, args)
    conn.metadata()  # fails fast, and clearly, when the cluster is unreachable
    future = conn.client.create_partitions([NewPartitions(args.name, args.partitions)],
                                           request_timeout=conn.timeout_s)[args.name]
    conn.wait([future], f"new partitions of topic {args.name!r}")
    error = future.exception()
    if _error_code(error) == KafkaError.UNKNOWN_TOPIC_OR_PART:
        raise CliError(f"topic {args.name!r} does not exist")
    if error is not None:
        raise CliError(f"cannot add partitions to topic {args.name!r}: {describe_exception(error)}")
    print_result(args, f"topic {args.name} now has {args.partitions} partitions",
                 {"topic": args.name, "partitions": args.partitions})
    return 0


def run_delete(args: argparse.Namespace) -> int:
    conn = Connection(AdminClient, args)
    conn.metadata()  # fails fast, and clearly, when the cluster is unreachable
    names = list(dict.fromkeys(args.names))
    futures = conn.client.delete_topics(names, request_timeout=conn.timeout_s)
    conn.wait(futures.values(), "topic deletion")
    deleted, failures = [], []
    for name in names:
        error = futures[name].exception()
        if error is None:
            deleted.append(name)
        elif _error_code(error) == KafkaError.UNKNOWN_TOPIC_OR_PART:
            if not args.if_exists:
                failures.append(f"topic {name!r} does not exist")
        else:
            failures.append(f"cannot delete topic {name!r}: {describe_exception(error)}")
    print_result(args, [f"deleted topic {name}" for name in deleted], {"deleted": deleted, "errors": failures})
    for extra in failures[1:]:
        note(f"tierlog: {extra}")
    if failures:
        raise CliError(failures[0])
    return 0


def _add_create(actions, common) -> None:
    parser = actions.add_parser("create", parents=[common], help="create a topic",
                                description="Create a topic.")
    parser.add_argument("name", metavar="NAME", help="topic name")
    parser.add_argument("--partitions", type=positive_int, metavar="N",
                        help="partition count (default: the broker's num.partitions)")
    parser.add_argument("--replication-factor", type=positive_int, metavar="N",
                        help="replicas per partition (default: the broker's default.replication.factor)")
    parser.add_argument("--config", type=key_value, action="append", default=[], metavar="K=V",
                        help="topic config override, e.g. retention.ms=60000; repeatable")
    parser.add_argument("--if-not-exists", action="store_true",
                        help="succeed quietly if the topic already exists")
    add_json_option(parser, "{topic, created} (created false: it existed, with --if-not-exists)")
    parser.set_defaults(func=run_create)


def _add_list(actions, common) -> None:
    parser = actions.add_parser("list", parents=[common], help="list topic names",
                                description="List the names of all topics, one per line.")
    parser.add_argument("--json", action="store_true", help="print a JSON array of names")
    parser.set_defaults(func=run_list)


_DESCRIBE_TEXT = """\
Describe topics (all topics when none is named), like kafka-topics.sh --describe:
a line per topic (Topic, TopicId, PartitionCount, ReplicationFactor), then a row
per partition. Columns a broker cannot give are left out: LeaderEpoch, Elr and
the offsets come from DescribeTopicPartitions (API 75) and ListOffsets to each
leader, which tierlog's own connection asks (not over SASL/SCRAM).

columns:
  Partition            the partition's index
  Leader               the broker that leads it ("none": no leader, it is offline)
  LeaderEpoch          the leader's epoch; one more at every change of leader
  Replicas             the brokers holding a replica, the preferred leader first
  Isr                  in-sync replicas: caught up with the leader; acks=all waits for them
  Elr                  eligible leader replicas (KIP-966): out of the ISR, yet holding every
                       committed record, so still safe to elect
  LastKnownElr         ELR members when the partition lost its last leader (only when any)
  Offline              replicas on a broker or log dir that is offline (only when any)
  Adding / Removing    replicas an ongoing reassignment adds / removes (only when any)
  LogStartOffset       the first offset a consumer can read, locally or from remote
                       storage (ListOffsets -2)
  LocalLogStartOffset  the first offset still on the leader's disk (ListOffsets -4);
                       older records are read from remote storage
  HighestTieredOffset  the last offset copied to remote storage (ListOffsets -5);
                       "-": nothing copied (or the topic is not tiered)
  TableOffset          topics with tierlog.table.mode on: the last offset the topic's
                       Iceberg table covers (read from the tables' catalog); below
                       HighestTieredOffset while a backfill runs, equal after
  LocalLog             per replica REPLICA:SIZE/AGE, its local log's size and the age of its
                       earliest local record as last reported to the controller (KIP-1303);
                       "?": not reported yet
  NotEligible          replicas whose local log is shorter than
                       leader.election.eligible.local.log.ms / .bytes: an election picks them
                       only when no eligible replica can lead (KIP-1303)
"?" in an offset column: the leader did not answer; "-" in a list: empty.
"""


def _add_describe(actions, common) -> None:
    parser = actions.add_parser(
        "describe", parents=[common], help="show partitions, leaders, leader epochs, replicas, ISR and ELR",
        description=_DESCRIBE_TEXT)
    parser.add_argument("names", nargs="*", metavar="NAME", help="topics to describe")
    parser.add_argument("--json", action="store_true", help="print a JSON array of descriptions")
    parser.set_defaults(func=run_describe)


def _add_alter(actions, common) -> None:
    parser = actions.add_parser("alter", parents=[common], help="add partitions to a topic",
                                description="Raise a topic's partition count (CreatePartitions, API 37): the "
                                            "new partitions are placed by the controller. A count that does "
                                            "not grow is an error (INVALID_PARTITIONS).")
    parser.add_argument("name", metavar="NAME", help="topic name")
    parser.add_argument("--partitions", type=positive_int, metavar="N", required=True,
                        help="the topic's new total partition count")
    add_json_option(parser, "{topic, partitions}")
    parser.set_defaults(func=run_alter)


def _add_delete(actions, common) -> None:
    parser = actions.add_parser("delete", parents=[common], help="delete topics",
                                description="Delete topics and all their records.")
    parser.add_argument("names", nargs="+", metavar="NAME", help="topics to delete")
    parser.add_argument("--if-exists", action="store_true",
                        help="succeed quietly for topics that do not exist")
    add_json_option(parser, "{deleted: [names], errors: [messages]}")
    parser.set_defaults(func=run_delete)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "topics", help="create, list, describe, alter and delete topics",
        description="Manage topics (like kafka-topics.sh).", epilog=_EPILOG,
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    common = connection_options()
    for add in (_add_create, _add_list, _add_describe, _add_alter, _add_delete):
        add(actions, common)
