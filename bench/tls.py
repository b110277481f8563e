"""What TLS and SASL cost: produce and consume MB/s on one node over PLAINTEXT, SSL and
SASL_SSL (PLAIN), in one run (issue 22).

One tierlog node serves three listeners (PLAINTEXT, SSL, SASL_SSL with PLAIN; certificates
from ``tierlog.net.dev_certs``); for each protocol in turn confluent-kafka produces
``--records`` records of ``--record-size`` bytes (acks=1, linger.ms 5) to a topic of its
own and then consumes them all from the beginning. Throughput is payload bytes over the
wall time of each phase. TLS is whatever Python's ssl and librdkafka negotiate (TLS 1.3,
AES-GCM on this machine); on TLS connections the node reads file regions instead of
``sendfile``.

Goal (issue 22): SASL_SSL at least 0.6x PLAINTEXT.

Writes ``results/tls_<timestamp>.json`` and ``results/tls_latest.json`` and plots
``results/tls.png``::

    nice -n 15 .venv/bin/python bench/tls.py [--records 50000] [--record-size 1024]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import brokers
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.net.dev_certs import DevCa

RESULTS = Path(__file__).resolve().parent / "results"
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_bench="bench-secret";'
GOAL_RATIO = 0.6


def _node(workdir: Path):
    ca = DevCa.create(workdir / "tls")
    cert = ca.issue("node", ["localhost", "127.0.0.1"])
    ssl_port, sasl_port = brokers.free_port(), brokers.free_port()
    props = {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
             "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
             "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
             "ssl.keystore.type": "PEM", "ssl.keystore.location": cert.keystore,
             "offsets.topic.replication.factor": 1}
    port = brokers.free_port()
    props["listeners"] = (f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_port},"
                          f"SASL_SSL://127.0.0.1:{sasl_port}")
    node = brokers.start_broker("tierlog", workdir / "node", props, port=port)
    tls = {"ssl.ca.location": str(ca.cert_path)}
    clients = {"PLAINTEXT": {"bootstrap.servers": f"127.0.0.1:{port}"},
               "SSL": {"bootstrap.servers": f"127.0.0.1:{ssl_port}", "security.protocol": "SSL", **tls},
               "SASL_SSL": {"bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_SSL",
                            "sasl.mechanisms": "PLAIN", "sasl.username": "bench", "sasl.password": "bench-secret",
                            **tls}}
    return node, clients


def _produce(conf: dict, topic: str, records: int, size: int) -> float:
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    producer = Producer({**conf, "acks": 1, "linger.ms": 5, "batch.size": 1 << 20})
    value = b"x" * size
    start = time.monotonic()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0, "undelivered records"
    return time.monotonic() - start


def _consume(conf: dict, topic: str, records: int) -> float:
    consumer = Consumer({**conf, "group.id": topic, "enable.auto.commit": False, "fetch.max.bytes": 50 << 20})
    consumer.assign([TopicPartition(topic, 0, -2)])
    got, start = 0, time.monotonic()
    try:
        while got < records:
            for msg in consumer.consume(10_000, 5):
                assert msg.error() is None, msg.error()
                got += 1
    finally:
        consumer.close()
    return time.monotonic() - start


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(result["protocols"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.38
    for i, phase in enumerate(("produce_mb_s", "consume_mb_s")):
        ax.bar([x + i * width for x in range(len(names))], [result["protocols"][n][phase] for n in names], width,
               label=phase.replace("_mb_s", ""))
    ax.set_xticks([x + width / 2 for x in range(len(names))], names)
    ax.set_ylabel("MB/s (payload)")
    ax.set_title(f"one node, {result['records']} x {result['record_size']} B records")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--record-size", type=int, default=1024)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tierlog-bench-tls-") as tmp:
        node, clients = _node(Path(tmp))
        try:
            protocols = {}
            for name, conf in clients.items():
                topic = f"bench-{name.lower()}"
                produce_s = _produce(conf, topic, args.records, args.record_size)
                consume_s = _consume(conf, topic, args.records)
                mb = args.records * args.record_size / 1e6
                protocols[name] = {"produce_s": round(produce_s, 3), "consume_s": round(consume_s, 3),
                                   "produce_mb_s": round(mb / produce_s, 1), "consume_mb_s": round(mb / consume_s, 1)}
                print(f"{name:10} produce {mb / produce_s:7.1f} MB/s   consume {mb / consume_s:7.1f} MB/s", flush=True)
        finally:
            node.stop()
    base = protocols["PLAINTEXT"]
    ratios = {n: {"produce": round(p["produce_mb_s"] / base["produce_mb_s"], 2),
                  "consume": round(p["consume_mb_s"] / base["consume_mb_s"], 2)} for n, p in protocols.items()}
    result = {"bench": "tls", "records": args.records, "record_size": args.record_size, "protocols": protocols,
              "ratio_to_plaintext": ratios, "goal_ratio": GOAL_RATIO}
    print("ratio to PLAINTEXT:", json.dumps(ratios))
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for name in (f"tls_{stamp}.json", "tls_latest.json"):
        (RESULTS / name).write_text(json.dumps(result, indent=1))
    plot(result, RESULTS / "tls.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
