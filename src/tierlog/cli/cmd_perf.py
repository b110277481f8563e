"""`tierlog perf produce|consume`: throughput and latency benchmarks.

Modelled on kafka-producer-perf-test and kafka-consumer-perf-test. ``--json``
prints one JSON object holding every figure (for benchmark harnesses) and
turns the live progress bar off; the bar is also off when stderr is not a
terminal.
"""

from __future__ import annotations

import argparse

from tierlog.cli.cmd_produce import ACKS, COMPRESSIONS
from tierlog.cli.options import connection_options, non_negative_int, positive_int
from tierlog.cli.perf_consume import run_perf_consume
from tierlog.cli.perf_produce import run_perf_produce

__all__ = ["register"]

_EPILOG = """\
examples:
  tierlog perf produce --topic bench --num-records 1000000 --record-size 100
  tierlog perf produce --topic bench --num-records 50000 --record-size 1024 --throughput 5000 --acks 1
  tierlog perf consume --topic bench --json
"""


def _throughput(text: str) -> int:
    """Records/s; any value <= 0 means unlimited (-1), as in Kafka's tool."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    return value if value > 0 else -1


def _add_produce(actions, common) -> None:
    parser = actions.add_parser(
        "produce", parents=[common], help="measure producer throughput and latency",
        description="Produce fixed-size records and report records/s, MB/s and latency\n"
                    "percentiles (like kafka-producer-perf-test).",
    )
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="an existing topic")
    parser.add_argument("--num-records", type=positive_int, required=True, metavar="N",
                        help="records to send")
    parser.add_argument("--record-size", type=positive_int, required=True, metavar="BYTES",
                        help="value size of each record")
    parser.add_argument("--throughput", type=_throughput, default=-1, metavar="RPS",
                        help="records/s to aim for; -1 for as fast as possible")
    parser.add_argument("--acks", choices=ACKS, default="all", help="acknowledgements to wait for")
    parser.add_argument("--linger-ms", type=non_negative_int, metavar="MS",
                        help="librdkafka linger.ms (default: librdkafka's)")
    parser.add_argument("--batch-size", type=positive_int, metavar="BYTES",
                        help="librdkafka batch.size (default: librdkafka's)")
    parser.add_argument("--compression", choices=COMPRESSIONS, default="none",
                        help="batch compression codec")
    parser.add_argument("--json", action="store_true", help="print one JSON object with every figure")
    parser.set_defaults(func=run_perf_produce)


def _add_consume(actions, common) -> None:
    parser = actions.add_parser(
        "consume", parents=[common], help="measure consumer throughput",
        description="Read a topic from the beginning and report records/s and MB/s\n"
                    "(like kafka-consumer-perf-test). --timeout is the longest wait\n"
                    "for the next record.",
    )
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="an existing topic")
    parser.add_argument("--messages", type=positive_int, metavar="N",
                        help="records to read (default: up to the end offsets at the start)")
    parser.add_argument("--json", action="store_true", help="print one JSON object with every figure")
    parser.set_defaults(func=run_perf_consume)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "perf", help="benchmark producing and consuming",
        description="Benchmarks modelled on Kafka's perf-test tools.", epilog=_EPILOG,
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    common = connection_options()
    _add_produce(actions, common)
    _add_consume(actions, common)
