"""`tierlog elect-leaders`, modelled on kafka-leader-election.sh.

``--election-type preferred`` (or ``--preferred``) moves leadership back to
each partition's preferred replica (the first replica, after KIP-1303's
eligibility sort); ``--election-type unclean`` (or ``--unclean``) elects a
leader for partitions that have none, even a replica outside the ISR (records
it did not have are lost). The partitions: ``--topic T [--partition P]``,
``--all-topic-partitions`` or ``--path-to-json-file F`` holding
``{"partitions": [{"topic": "t", "partition": 0}, ...]}``.

Output, as Kafka's tool prints it: one line for the partitions elected, one
for those that already had the right leader ("Valid replica already elected")
and one per partition that failed; any failure exits 1 with one error line.
With ``--all-topic-partitions`` the cluster answers only for the partitions
that needed an election. ``--json`` prints the same as one JSON document:
``{"election_type", "elected": [{topic, partition}], "not_needed": [...],
"failed": [{topic, partition, error}]}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from tierlog.cli.connection import Connection
from tierlog.cli.errors import (
    CliError,
    UsageError,
    describe_exception,
    describe_kafka_error,
)
from tierlog.cli.options import connection_options, non_negative_int
from tierlog.cli.render import add_json_option, note, print_json

__all__ = ["outcome", "read_partitions_file", "register"]

_TYPES = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}
MAX_JSON_FILE_BYTES = 16 * 1024 * 1024

_EPILOG = """\
examples:
  tierlog elect-leaders --election-type preferred --all-topic-partitions
  tierlog elect-leaders --preferred --topic orders --partition 0
  tierlog elect-leaders --unclean --path-to-json-file partitions.json

partitions.json:
  {"partitions": [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 2}]}
"""


def read_partitions_file(path: Path) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a kafka-leader-election JSON file; CliError when malformed."""
    try:
        if path.stat().st_size > MAX_JSON_FILE_BYTES:
            raise CliError(f"{path}: larger than {MAX_JSON_FILE_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno})") from None
    entries = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise CliError(f'{path}: expected {{"partitions": [{{"topic": ..., "partition": ...}}, ...]}}')
    pairs = [_pair(path, i, e) for i, e in enumerate(entries)]
    if not pairs:
        raise CliError(f"{path}: no partitions listed")
    seen = set()
    for topic, partition in pairs:
        if (topic, partition) in seen:
            raise CliError(f"{path}: partition {topic}-{partition} is listed twice")
        seen.add((topic, partition))
    return pairs


def _pair(path: Path, index: int, entry) -> tuple[str, int]:
    ok = (isinstance(entry, dict) and isinstance(entry.get("topic"), str) and entry["topic"]
          and isinstance(entry.get("partition"), int) and not isinstance(entry["partition"], bool)
          and entry["partition"] >= 0)
    if not ok:
        raise CliError(f'{path}: partitions[{index}] must be {{"topic": NAME, "partition": INDEX >= 0}}')
    return entry["topic"], entry["partition"]


def outcome(results: dict) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(elected, already elected, [(partition, error)]) from ``{(topic, partition): KafkaError | None}``."""
    elected, not_needed, failed = [], [], []
    for (topic, partition), error in sorted(results.items()):
        name = f"{topic}-{partition}"
        if error is None:
            elected.append(name)
        elif error.code() == KafkaError.ELECTION_NOT_NEEDED:
            not_needed.append(name)
        else:
            failed.append((name, describe_kafka_error(error)))
    return elected, not_needed, failed


def _targets(args: argparse.Namespace, conn: Connection) -> list[TopicPartition] | None:
    if args.all_topic_partitions:
        return None
    if args.path_to_json_file is not None:
        return [TopicPartition(t, p) for t, p in read_partitions_file(Path(args.path_to_json_file))]
    if args.partition is not None:
        return [TopicPartition(args.topic, args.partition)]
    count = len(conn.topic_metadata(args.topic).partitions)
    return [TopicPartition(args.topic, p) for p in range(count)]


def _error_of(value) -> KafkaError | None:
    if isinstance(value, KafkaException) and value.args and isinstance(value.args[0], KafkaError):
        return value.args[0]
    return value


def run(args: argparse.Namespace) -> int:
    if args.partition is not None and args.topic is None:
        raise UsageError("--partition needs --topic (see 'tierlog elect-leaders --help')")
    kind = args.election_type
    # confluent-kafka 2.16's elect_leaders rejects its own request_timeout / operation_timeout
    # keywords (SystemError); both default to socket.timeout.ms, so --timeout goes there.
    conn = Connection(AdminClient, args, **{"socket.timeout.ms": max(10, int(args.timeout * 1000))})
    partitions = _targets(args, conn)
    future = conn.client.elect_leaders(_TYPES[kind], partitions)
    conn.wait([future], "the leader election")
    if future.exception() is not None:
        raise CliError(f"leader election failed: {describe_exception(future.exception())}")
    results = {(tp.topic, tp.partition): _error_of(v) for tp, v in future.result().items()}
    if args.json:
        return _report_json(kind.upper(), *outcome(results))
    return _report(kind.upper(), *outcome(results))


def _split(name: str) -> dict:
    topic, _, partition = name.rpartition("-")
    return {"topic": topic, "partition": int(partition)}


def _report_json(kind: str, elected: list[str], not_needed: list[str], failed: list[tuple[str, str]]) -> int:
    print_json({"election_type": kind, "elected": [_split(n) for n in elected],
                "not_needed": [_split(n) for n in not_needed],
                "failed": [{**_split(n), "error": error} for n, error in failed]})
    if failed:
        raise CliError(f"{len(failed)} replica(s) could not be elected")
    return 0


def _report(kind: str, elected: list[str], not_needed: list[str], failed: list[tuple[str, str]]) -> int:
    if elected:
        print(f"Successfully completed leader election ({kind}) for partitions {', '.join(elected)}")
    if not_needed:
        print(f"Valid replica already elected for partitions {', '.join(not_needed)}")
    for name, error in failed:
        print(f"Error completing leader election ({kind}) for partition: {name}: {error}")
    if not (elected or not_needed or failed):
        note("no partition needed a leader election")
    if failed:
        raise CliError(f"{len(failed)} replica(s) could not be elected")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "elect-leaders", parents=[connection_options()], help="run preferred or unclean leader elections",
        description="Elect partition leaders (like kafka-leader-election.sh).", epilog=_EPILOG,
    )
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--election-type", choices=sorted(_TYPES), help="the kind of election")
    kind.add_argument("--preferred", dest="election_type", action="store_const", const="preferred",
                      help="same as --election-type preferred")
    kind.add_argument("--unclean", dest="election_type", action="store_const", const="unclean",
                      help="same as --election-type unclean")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", metavar="NAME", help="a topic (every partition, or the one of --partition)")
    which.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    which.add_argument("--path-to-json-file", metavar="FILE", help='JSON: {"partitions": [{"topic", "partition"}]}')
    parser.add_argument("--partition", type=non_negative_int, metavar="P", help="one partition of --topic")
    add_json_option(parser, "{election_type, elected, not_needed, failed}")
    parser.set_defaults(func=run)
