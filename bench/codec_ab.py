"""The hot messages' static codecs (``protocol/hot/``) against the generic engine (``protocol/codec.py``),
alternated in one process on the same messages (A B A B ...).

    .venv/bin/python bench/codec_ab.py [--rounds 7]

Per message, microseconds of CPU (process time, not wall time: the machine is shared) to decode
one body from its bytes and to encode it back, best and median of the rounds; every round checks
that both give the same dict and the same bytes. The messages are those of the request path:
a single-record Produce (librdkafka's shape for keyed traffic), its answer, a follower's Fetch of
100 partitions and the leader's answer carrying one small batch in each, a Metadata answer of 300
partitions, an ApiVersions answer.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tierlog.protocol import hot
from tierlog.protocol.codec import Output, decode_struct, encode_struct
from tierlog.protocol.messages import APIS

TOPIC_ID = bytes(range(16))


def messages() -> dict[str, tuple[int, str, int, dict]]:
    """name -> (api key, "request"/"response", version, body)."""
    batch = bytes(1100)
    fetch_parts = [{"Partition": p, "CurrentLeaderEpoch": 3, "FetchOffset": 1000 + p, "LastFetchedEpoch": 3,
                    "LogStartOffset": 0, "PartitionMaxBytes": 1 << 20} for p in range(100)]
    answer_parts = [{"PartitionIndex": p, "ErrorCode": 0, "HighWatermark": 1000 + p, "LastStableOffset": 1000 + p,
                     "LogStartOffset": 0, "AbortedTransactions": None, "Records": bytes(120)} for p in range(100)]
    md_parts = [{"ErrorCode": 0, "PartitionIndex": p, "LeaderId": p % 3, "LeaderEpoch": 2, "ReplicaNodes": [0, 1, 2],
                 "IsrNodes": [0, 1, 2], "OfflineReplicas": []} for p in range(300)]
    return {
        "Produce request v9, 1 record": (0, "request", 9, {
            "TransactionalId": None, "Acks": 1, "TimeoutMs": 30000,
            "TopicData": [{"Name": "keyed", "PartitionData": [{"Index": 7, "Records": batch}]}]}),
        "Produce response v10, 1 partition": (0, "response", 10, {
            "Responses": [{"Name": "keyed", "PartitionResponses": [{"Index": 7, "ErrorCode": 0, "BaseOffset": 99}]}],
            "ThrottleTimeMs": 0}),
        "Fetch request v15, follower, 100 partitions": (1, "request", 15, {
            "ReplicaState": {"ReplicaId": 2, "ReplicaEpoch": 5}, "MaxWaitMs": 500, "MinBytes": 1,
            "MaxBytes": 10 << 20, "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
            "Topics": [{"TopicId": TOPIC_ID, "Partitions": fetch_parts}], "ForgottenTopicsData": [], "RackId": ""}),
        "Fetch response v15, 100 partitions": (1, "response", 15, {
            "ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 0,
            "Responses": [{"TopicId": TOPIC_ID, "Partitions": answer_parts}]}),
        "Metadata response v12, 300 partitions": (3, "response", 12, {
            "Brokers": [{"NodeId": n, "Host": "127.0.0.1", "Port": 9092 + n, "Rack": None} for n in range(3)],
            "ClusterId": "c", "ControllerId": 0,
            "Topics": [{"ErrorCode": 0, "Name": "keyed", "TopicId": TOPIC_ID, "IsInternal": False,
                        "Partitions": md_parts}]}),
        "ApiVersions response v3": (18, "response", 3, {
            "ErrorCode": 0, "ApiKeys": [{"ApiKey": k, "MinVersion": 0, "MaxVersion": 9} for k in range(60)]}),
    }


def codecs(key: int, kind: str, version: int):
    spec = APIS[key]
    struct, flexible = (spec.request if kind == "request" else spec.response), spec.is_flexible(version)
    found = hot.codecs(key, version)
    static_encode, static_decode = (found.encode_request, found.decode_request) if kind == "request" else \
        (found.encode_response, found.decode_response)

    def generic_encode(body):
        return encode_struct(struct, version, flexible, body)

    def generic_decode(view):
        return decode_struct(struct, version, flexible, view)[0]

    def fast_encode(body):
        out = Output()
        static_encode(out, body)
        return out

    def fast_decode(view):
        return static_decode(view, 0)[0]

    return {"generic": (generic_encode, generic_decode), "static": (fast_encode, fast_decode)}


def per_call_us(fn, arg, n: int) -> float:
    t = time.process_time()
    for _ in range(n):
        fn(arg)
    return (time.process_time() - t) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--target-s", type=float, default=0.05, help="CPU seconds per timed batch")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; us of CPU per message, best (median) of {args.rounds} rounds")
    print(f"{'message':<46} {'decode generic':>16} {'static':>16} {'x':>5}   {'encode generic':>16} "
          f"{'static':>16} {'x':>5}")
    for name, (key, kind, version, body) in messages().items():
        both = codecs(key, kind, version)
        wire = bytes(both["generic"][0](body))
        view = memoryview(wire)
        assert bytes(both["static"][0](body)) == wire, name
        assert both["static"][1](view) == both["generic"][1](view), name
        n = max(1, int(args.target_s / (per_call_us(both["generic"][1], view, 20) / 1e6)))
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for which, (enc, dec) in both.items():
                times.setdefault((which, "decode"), []).append(per_call_us(dec, view, n))
                times.setdefault((which, "encode"), []).append(per_call_us(enc, body, n))
        cells = []
        for op in ("decode", "encode"):
            g, s = times["generic", op], times["static", op]
            cells.append(f"{min(g):7.2f} ({statistics.median(g):6.2f}) {min(s):7.2f} ({statistics.median(s):6.2f}) "
                         f"{min(g) / min(s):5.2f}")
        print(f"{name:<46} {cells[0]}   {cells[1]}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
