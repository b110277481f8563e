"""One benchmark phase against a running broker, as a client process of its own.

    python bench/workload.py produce --bootstrap H:P --topic T --records N --acks 1 --create
    python bench/workload.py consume --bootstrap H:P --topic T
    python bench/workload.py rate    --bootstrap H:P --topic T --mib-per-s 50 --seconds 10 --create

The client is librdkafka (confluent-kafka).  Each run prints one JSON object on
stdout (the last line) with its figures; progress and client logs go to stderr.

* ``produce``: N records of ``--record-size`` bytes as fast as the client can
  hand them over (closed loop), ``linger.ms`` and ``acks`` as given.  Latency of
  a record = time its delivery callback ran - time its produce() call was made;
  in this mode it includes waiting in the client's queue behind earlier records.
* ``rate``: the same records, but produce() is called on a fixed schedule
  (``--mib-per-s``), so latency is that of a broker that keeps up (or not).
* ``consume``: assign() every partition at OFFSET_BEGINNING and read up to the
  high watermarks taken at start (no consumer group: group.id only because
  librdkafka requires one, auto commit off).

MiB = 2**20 bytes; throughput counts record value bytes only.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

__all__ = ["ConsumeResult", "ProduceResult", "latency_summary", "main"]

MIB = 1 << 20
TOPIC_READY_TIMEOUT_S = 30.0
FLUSH_TIMEOUT_S = 300.0
CONSUME_STALL_S = 30.0
CONSUME_BATCH = 10_000
PERCENTILES = (50, 95, 99, 99.9)
STATS_INTERVAL_MS = 1000
SCHEDULE_TICK_S = 0.001


@dataclass
class ProduceResult:
    phase: str
    topic: str
    acks: str
    records: int
    record_size: int
    seconds: float
    records_per_s: float
    mib_per_s: float
    latency_ms: dict
    broker_rtt_ms: dict
    errors: int
    first_error: str | None
    target_mib_per_s: float | None = None
    produce_lag_max_ms: float | None = None
    timeline: list | None = None


@dataclass
class ConsumeResult:
    phase: str
    topic: str
    records: int
    expected: int
    bytes: int
    seconds: float
    records_per_s: float
    mib_per_s: float
    errors: int
    first_error: str | None
    complete: bool


@dataclass
class _Deliveries:
    """Collects delivery reports: latency per successful record, errors counted."""
    latencies_s: list = field(default_factory=list)
    sent_at_s: list = field(default_factory=list)     # parallel to latencies_s, for the timeline
    errors: int = 0
    first_error: str | None = None

    def callback(self, sent_at: float):
        def on_delivery(err, _msg):
            if err is None:
                self.latencies_s.append(time.perf_counter() - sent_at)
                self.sent_at_s.append(sent_at)
            else:
                self._error(str(err))
        return on_delivery

    def _error(self, text: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = text


@dataclass
class _BrokerRtt:
    """Request round trips to the broker as librdkafka measures them (statistics
    windows of STATS_INTERVAL_MS): what the broker takes, without client queueing."""
    windows: list = field(default_factory=list)

    def on_stats(self, stats_json: str) -> None:
        for b in json.loads(stats_json).get("brokers", {}).values():
            rtt = b.get("rtt", {})
            if b.get("nodeid", -1) >= 0 and rtt.get("cnt", 0) > 0:
                self.windows.append((rtt["cnt"], rtt["avg"], rtt["p99"], rtt["max"]))

    def summary(self) -> dict:
        if not self.windows:
            return {}
        count = sum(w[0] for w in self.windows)
        return {"requests": count, "avg": sum(w[0] * w[1] for w in self.windows) / count / 1000,
                "p99_worst_window": max(w[2] for w in self.windows) / 1000,
                "max": max(w[3] for w in self.windows) / 1000}


def latency_summary(latencies_s: list[float]) -> dict:
    """avg, p50, p95, p99, p99.9 (nearest rank) and max, in milliseconds."""
    if not latencies_s:
        return {}
    ordered = sorted(latencies_s)
    out = {"avg": 1000 * sum(ordered) / len(ordered)}
    for p in PERCENTILES:
        rank = max(1, math.ceil(p / 100 * len(ordered)))
        out[f"p{p:g}"] = 1000 * ordered[rank - 1]
    out["max"] = 1000 * ordered[-1]
    return out


def timeline(d: _Deliveries, start: float, bucket_s: float = 1.0) -> list[dict]:
    """Latency over time: per ``bucket_s`` of send time, records, p50, p99 and max (ms)."""
    buckets: dict[int, list[float]] = {}
    for sent, lat in zip(d.sent_at_s, d.latencies_s):
        buckets.setdefault(int((sent - start) / bucket_s), []).append(lat)
    out = []
    for k in sorted(buckets):
        s = latency_summary(buckets[k])
        out.append({"t_s": k * bucket_s, "records": len(buckets[k]), "p50": s["p50"], "p99": s["p99"],
                    "max": s["max"]})
    return out


def _client_base(bootstrap: str) -> dict:
    return {"bootstrap.servers": bootstrap, "client.id": "tierlog-bench"}


def ensure_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = 1,
                 config: dict | None = None) -> None:
    """Create ``topic`` and wait until metadata shows every partition with a leader."""
    admin = AdminClient(_client_base(bootstrap))
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor,
                                            config=config or {})])
    futures[topic].result(TOPIC_READY_TIMEOUT_S)
    deadline = time.monotonic() + TOPIC_READY_TIMEOUT_S
    while not _topic_ready(admin, topic, partitions):
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} has no leader for all {partitions} partitions "
                               f"after {TOPIC_READY_TIMEOUT_S:.0f}s")
        time.sleep(0.1)


def _topic_ready(admin: AdminClient, topic: str, partitions: int) -> bool:
    md = admin.list_topics(topic=topic, timeout=5.0).topics.get(topic)
    if md is None or md.error is not None or len(md.partitions) != partitions:
        return False
    return all(p.leader >= 0 and p.error is None for p in md.partitions.values())


def _producer(args, rtt: _BrokerRtt) -> Producer:
    extra = {} if args.retry_backoff_ms is None else {"retry.backoff.ms": args.retry_backoff_ms}
    producer = Producer({**_client_base(args.bootstrap), "linger.ms": args.linger_ms,
                         "acks": args.acks, "statistics.interval.ms": STATS_INTERVAL_MS,
                         "stats_cb": rtt.on_stats, **extra})
    producer.list_topics(topic=args.topic, timeout=10.0)  # connect before the clock starts
    return producer


def _produce_one(producer: Producer, topic: str, value: bytes, deliveries: _Deliveries,
                 partition: int = -1) -> None:
    """``partition`` -1: librdkafka's partitioner (sticky for keyless records)."""
    while True:
        try:
            producer.produce(topic, value, partition=partition,
                             on_delivery=deliveries.callback(time.perf_counter()))
            return
        except BufferError:  # local queue full: serve delivery reports, then retry
            producer.poll(0.005)


def _finish(producer: Producer) -> None:
    left = producer.flush(FLUSH_TIMEOUT_S)
    if left:
        raise RuntimeError(f"{left} records still undelivered after {FLUSH_TIMEOUT_S:.0f}s")


def run_produce(args) -> ProduceResult:
    rtt, deliveries, value = _BrokerRtt(), _Deliveries(), os.urandom(args.record_size)
    producer = _producer(args, rtt)
    start = time.perf_counter()
    for _ in range(args.records):
        _produce_one(producer, args.topic, value, deliveries)
        producer.poll(0)
    _finish(producer)
    return _produce_result("produce", args, time.perf_counter() - start, deliveries, rtt)


def run_rate(args) -> ProduceResult:
    """produce() on a schedule of ``rate`` records/s for ``seconds``; never faster."""
    rtt, deliveries, value = _BrokerRtt(), _Deliveries(), os.urandom(args.record_size)
    producer = _producer(args, rtt)
    rate = args.mib_per_s * MIB / args.record_size
    total, sent, lag_max = int(rate * args.seconds), 0, 0.0
    spread = args.partitions if args.spread == "round-robin" else 0   # the shape of keyed traffic
    start = time.perf_counter()
    while sent < total:
        elapsed = time.perf_counter() - start
        due = min(total, int(elapsed * rate) + 1)
        lag_max = max(lag_max, elapsed - sent / rate)
        for i in range(sent, due):
            _produce_one(producer, args.topic, value, deliveries, i % spread if spread else -1)
        sent = due
        # wake at most every SCHEDULE_TICK_S (a burst of the records due since): waking per record
        # would cost the client a whole core at 10k records/s, a core the brokers need on this machine
        producer.poll(max(SCHEDULE_TICK_S, start + sent / rate - time.perf_counter()))
    _finish(producer)
    result = _produce_result("rate", args, time.perf_counter() - start, deliveries, rtt, total)
    result.target_mib_per_s, result.produce_lag_max_ms = args.mib_per_s, 1000 * lag_max
    if args.timeline:
        result.timeline = timeline(deliveries, start)
    return result


def _produce_result(phase: str, args, seconds: float, d: _Deliveries, rtt: _BrokerRtt,
                    records: int | None = None) -> ProduceResult:
    n = args.records if records is None else records
    return ProduceResult(phase, args.topic, str(args.acks), n, args.record_size, seconds,
                         n / seconds, n * args.record_size / MIB / seconds,
                         latency_summary(d.latencies_s), rtt.summary(), d.errors, d.first_error)


def run_consume(args) -> ConsumeResult:
    consumer = Consumer({**_client_base(args.bootstrap), "group.id": "tierlog-bench",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        return _consume_all(consumer, args.topic, args.expect)
    finally:
        consumer.close()


def _high_watermarks(consumer: Consumer, topic: str) -> dict[int, int]:
    md = consumer.list_topics(topic=topic, timeout=10.0).topics[topic]
    if md.error is not None:
        raise KafkaException(md.error)
    return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10.0)[1]
            for p in sorted(md.partitions)}


def _consume_all(consumer: Consumer, topic: str, expect: int | None) -> ConsumeResult:
    ends = _high_watermarks(consumer, topic)
    expected = sum(ends.values()) if expect is None else expect
    count = nbytes = errors = 0
    first_error = None
    start = last_progress = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
    while count < expected and time.perf_counter() - last_progress < CONSUME_STALL_S:
        for msg in consumer.consume(CONSUME_BATCH, timeout=1.0):
            if msg.error() is not None:
                errors, first_error = errors + 1, first_error or str(msg.error())
                continue
            count, nbytes = count + 1, nbytes + len(msg.value())
            last_progress = time.perf_counter()
    seconds = last_progress - start
    return ConsumeResult("consume", topic, count, expected, nbytes, seconds, count / seconds,
                         nbytes / MIB / seconds, errors, first_error, count >= expected)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="phase", required=True)
    for name in ("produce", "rate", "consume"):
        s = sub.add_parser(name)
        s.add_argument("--bootstrap", required=True)
        s.add_argument("--topic", required=True)
        if name != "consume":
            _producer_args(s)
    sub.choices["produce"].add_argument("--records", type=int, default=200_000)
    sub.choices["consume"].add_argument("--expect", type=int, default=None,
                                        help="records to read (default: the high watermarks at start)")
    sub.choices["rate"].add_argument("--mib-per-s", type=float, default=50.0)
    sub.choices["rate"].add_argument("--seconds", type=float, default=10.0)
    sub.choices["rate"].add_argument("--spread", choices=["sticky", "round-robin"], default="sticky",
                                     help="sticky: librdkafka's keyless partitioner; round-robin: record i to "
                                          "partition i %% --partitions (every batch small, like keyed traffic)")
    sub.choices["rate"].add_argument("--timeline", action="store_true",
                                     help="add per-second latency percentiles (by send time)")
    return p


def _producer_args(s: argparse.ArgumentParser) -> None:
    s.add_argument("--acks", default="1", choices=["0", "1", "all", "-1"])
    s.add_argument("--record-size", type=int, default=1024)
    s.add_argument("--linger-ms", type=float, default=5.0)
    s.add_argument("--retry-backoff-ms", type=int, default=None, help="librdkafka's retry.backoff.ms (default: its own)")
    s.add_argument("--partitions", type=int, default=1)
    s.add_argument("--replication-factor", type=int, default=1)
    s.add_argument("--topic-config", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("--create", action="store_true", help="create the topic first")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "create", False):
        config = dict(kv.split("=", 1) for kv in args.topic_config)
        ensure_topic(args.bootstrap, args.topic, args.partitions, args.replication_factor, config)
    run = {"produce": run_produce, "rate": run_rate, "consume": run_consume}[args.phase]
    print(json.dumps(asdict(run(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
