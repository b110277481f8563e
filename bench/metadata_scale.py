"""Metadata at scale: image build, snapshot, load vs replay, fence cost (KIP-630).

    .venv/bin/python bench/metadata_scale.py                      # 100k topics x 10 x RF 3, 100 brokers
    .venv/bin/python bench/metadata_scale.py --topics 10000       # smaller run

Measures, at ``--topics`` x ``--partitions`` x ``--rf`` over ``--brokers``:

* the log as created: RegisterBrokerRecords, then per topic one batch
  (TopicRecord + PartitionRecords), its encoded bytes;
* ``--churn`` rounds of history (per partition an AlterPartition ISR shrink and
  expand, 1000 records a batch), which a real metadata log also holds;
* replay of that log through MetadataLoader.handle_commit, one image per batch
  (what a broker that starts from an empty log does);
* snapshot: snapshot_records(image) time, encode time and bytes;
* load from the snapshot (one delta over all records) vs the replay above;
* fencing the broker hosting the most replicas: bytes appended by our event
  design (one FenceBrokerRecord) vs the PartitionChangeRecords Kafka's
  per-partition approach would write (encoded for the same state change), and
  the apply time of the fence;
* process RSS growth while holding the image (the controller's memory).

Writes ``bench/results/metadata_scale.json`` (``--out`` to change) and prints it.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tierlog.metadata.cluster_records import (
    BrokerEndpoint,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    encode,
)
from tierlog.metadata.delta import MetadataDelta
from tierlog.metadata.image import MetadataImage, MetadataProvenance
from tierlog.metadata.loader import MetadataLoader
from tierlog.metadata.snapshot import load_snapshot, snapshot_records


@dataclass
class Batch:
    records: list
    last_offset: int
    epoch: int = 1
    append_timestamp: int = 0


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def creation_log(topics: int, partitions: int, rf: int, brokers: int) -> list[list[bytes]]:
    """Batches of encoded records, as a controller would have committed them."""
    batches = [[encode(RegisterBrokerRecord(
        b, b.to_bytes(16, "big"), 100 + b, (BrokerEndpoint("PLAINTEXT", f"broker{b}", 9092),),
        rack=f"rack{b % 3}", fenced=False)) for b in range(brokers)]]
    k = 0
    for t in range(topics):
        tid = (t + 1).to_bytes(16, "big")
        recs = [encode(TopicRecord(f"topic-{t:06d}", tid))]
        for p in range(partitions):
            replicas = tuple((k + i) % brokers for i in range(rf))
            k += 1
            recs.append(encode(PartitionRecord(p, tid, replicas, replicas, leader=replicas[0],
                                               leader_epoch=0, partition_epoch=0)))
        batches.append(recs)
    return batches


def churn_log(topics: int, partitions: int, rf: int, brokers: int, rounds: int,
              per_batch: int = 1000) -> list[list[bytes]]:
    """History a real log also holds: per round and partition, an AlterPartition ISR
    shrink then expand (two PartitionChangeRecords), batched ``per_batch`` a batch."""
    out, cur, k = [], [], 0
    for _ in range(rounds):
        k = 0
        for t in range(topics):
            tid = (t + 1).to_bytes(16, "big")
            for p in range(partitions):
                replicas = tuple((k + i) % brokers for i in range(rf))
                k += 1
                cur.append(encode(PartitionChangeRecord(p, tid, isr=replicas[:-1])))
                cur.append(encode(PartitionChangeRecord(p, tid, isr=replicas)))
                if len(cur) >= per_batch:
                    out.append(cur)
                    cur = []
    if cur:
        out.append(cur)
    return out


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def kafka_fence_records(before: MetadataImage, after: MetadataImage, broker: int) -> list[bytes]:
    """The PartitionChangeRecords a per-partition design writes for the same fence."""
    out = []
    for t in before.topics_on(broker):
        new_t = after.topics[t.name]
        for p, q in zip(t.partitions, new_t.partitions):
            if p is q:
                continue
            out.append(encode(PartitionChangeRecord(
                p.partition, t.topic_id, isr=q.isr if q.isr != p.isr else None,
                leader=q.leader if q.leader != p.leader else -2,
                eligible_leader_replicas=q.elr if q.elr != p.elr else None)))
    return out


def run(args) -> dict:
    res: dict = {"scale": {"topics": args.topics, "partitions_per_topic": args.partitions,
                           "replication_factor": args.rf, "brokers": args.brokers,
                           "partitions": args.topics * args.partitions}}
    gc.collect()
    rss0 = rss_bytes()
    batches, dt = timed(lambda: creation_log(args.topics, args.partitions, args.rf, args.brokers))
    created = len(batches)
    if args.churn:
        batches += churn_log(args.topics, args.partitions, args.rf, args.brokers, args.churn)
    log_bytes = sum(len(r) for b in batches for r in b)
    res["log"] = {"build_s": round(dt, 3), "records": sum(len(b) for b in batches),
                  "batches": len(batches), "bytes": log_bytes,
                  "creation_batches": created, "churn_rounds": args.churn}

    # replay the log, one image per batch
    loader = MetadataLoader(cluster_id="bench", controller_id=0)

    t0 = time.perf_counter()
    for i, b in enumerate(batches[:created]):
        loader.handle_commit(Batch(b, i))
    create_s = time.perf_counter() - t0
    for i, b in enumerate(batches[created:], created):
        loader.handle_commit(Batch(b, i))
    image = loader.image
    replay_s = time.perf_counter() - t0
    res["replay"] = {"seconds": round(replay_s, 3), "creation_part_s": round(create_s, 3),
                     "images_built": len(batches)}
    gc.collect()
    rss_image = rss_bytes()
    res["memory"] = {"rss_before_mb": round(rss0 / 2**20, 1),
                     "rss_with_log_and_image_mb": round(rss_image / 2**20, 1)}
    del batches, loader
    gc.collect()
    res["memory"]["rss_image_only_mb"] = round(rss_bytes() / 2**20, 1)
    res["memory"]["image_mb_approx"] = round((rss_bytes() - rss0) / 2**20, 1)

    # snapshot
    recs, gen_s = timed(lambda: list(snapshot_records(image)))
    data, enc_s = timed(lambda: [encode(r) for r in recs])
    res["snapshot"] = {"records": len(recs), "generate_s": round(gen_s, 3),
                       "encode_s": round(enc_s, 3), "bytes": sum(map(len, data))}
    recs = None
    loaded, load_s = timed(lambda: load_snapshot(
        data, cluster_id="bench", controller_id=0, provenance=image.provenance))
    assert loaded.topics == image.topics if args.topics <= 20_000 else len(loaded.topics) == len(image.topics)
    res["load"] = {"snapshot_load_s": round(load_s, 3), "log_replay_s": round(replay_s, 3),
                   "replay_over_load": round(replay_s / load_s, 2),
                   "creation_only_replay_over_load": round(create_s / load_s, 2),
                   "log_bytes_over_snapshot_bytes": round(log_bytes / res["snapshot"]["bytes"], 2)}
    loaded = data = None
    gc.collect()

    # fence the broker hosting most replicas
    broker = max(image.broker_topics, key=lambda b: sum(image.broker_topics[b].values()))
    hosted = sum(image.broker_topics[broker].values())
    fence = FenceBrokerRecord(broker, image.brokers[broker].epoch)

    def do_fence():
        d = MetadataDelta(image, now_ms=0)
        d.replay(fence)
        return d.apply(MetadataProvenance(image.provenance.last_contained_offset + 1, 1, 0))
    after, fence_s = timed(do_fence)
    kafka = kafka_fence_records(image, after, broker)
    ours = len(encode(fence))
    kbytes = sum(map(len, kafka))
    led_before = sum(1 for _ in image.partitions_led_by(broker))
    res["fence"] = {
        "broker": broker, "replicas_hosted": hosted, "leaderships_moved": led_before,
        "partitions_changed": len(kafka),
        "event_bytes": ours, "per_partition_records": len(kafka),
        "per_partition_bytes": kbytes, "ratio": round(kbytes / ours, 1),
        "replicated_to_99_brokers_event_bytes": ours * (args.brokers - 1),
        "replicated_to_99_brokers_per_partition_bytes": kbytes * (args.brokers - 1),
        "apply_s": round(fence_s, 3),
        "topics_shared_after_fence": sum(1 for n, t in image.topics.items() if after.topics[n] is t),
    }
    assert not any(after.partitions_led_by(broker))
    res["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                      "platform": platform.platform()}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--churn", type=int, default=2,
                    help="rounds of per-partition ISR shrink+expand in the log (0: creation only)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "metadata_scale.json"))
    args = ap.parse_args()
    res = run(args)
    text = json.dumps(res, indent=2)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
