"""CPU of one follower round, in process, the leader's side or the follower's (issue 36, item 3).

    python bench/follower_round.py                      # P=300, 10 partitions moved per round
    python bench/follower_round.py --side follower      # the follower's side of the same rounds
    python bench/follower_round.py [--side follower] --profile # cProfile: Python calls per round
    PYTHONPATH=OTHER/src python bench/follower_round.py # the same against another tree (A/B)

The cluster runs of ``partitions.py`` on a shared machine mix the broker's CPU with how long
every hop waits for a core (their batching follows the latency), so this measures the code
alone: a real ``ReplicaManager`` hosting ``--partitions`` led partitions (RF 2, the follower
in the ISR) on a real log dir, and per round what a leader does for one record on each of
``--moved`` partitions and its follower: the acks=all appends (``append_records``), then the
follower's incremental Fetch (KIP-227 session, the Fetch handler ``api_01_fetch.handle``,
MaxWaitMs 0) that reports the previous round's positions and reads this round's records, which
moves the high watermark and answers the previous round's waiters.  Request decode and response
encode are left out (``codec_ab.py`` has them).  CPU = ``time.process_time``; the best of
``--repeats`` runs of ``--rounds`` rounds, in ms per round; a JSON line per run is added to
``--out`` (``results/follower_round.jsonl``).

``--side follower``: a real ``ReplicaManager`` following ``--partitions`` partitions of broker 1
(its real ``FetcherState`` and KIP-227 session), and per round what the follower's fetcher does
with a leader's answer naming ``--moved`` partitions with one 1 KiB record each (and the high
watermark of the round before): ``handle_fetch_response``, the appends and high watermarks
(``ReplicaFetcherTasks._apply_round``, as the fetcher task calls it), then the next incremental
request (``take_probes``, ``build_fetch_request``).  Response decode and request encode are left out here too.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from tierlog.broker.apis import api_01_fetch
from tierlog.broker.partition import AppendOrigin
from tierlog.broker.replica_manager import ReplicaManager
from tierlog.metadata import TopicInfo
from tierlog.metadata.image import PartitionInfo
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader
from tierlog.records import Record, build_batch
from tierlog.storage import LogConfig, LogManager

NOW = 1_700_000_000_000
TOPIC_ID = bytes(range(16))
FOLLOWER = 2
VALUE = os.urandom(1024)


class _Context:
    """The part of the broker the Fetch handler reads (no ACLs, no remote storage)."""

    node_id, authorizer, remote, fetch_max_bytes, fetch_wait_max_ms = 1, None, None, 10 << 20, 500

    def __init__(self, rm: ReplicaManager, image):
        self.replicas, self.image = rm, image
        self.fetch_sessions = rm.fetch_sessions
        self.fetch_purgatory = getattr(rm, "fetch_purgatory", None)

    def led_partition(self, topic, index):
        part = self.replicas.get(topic, index)
        if part is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return part, ErrorCode.NONE if part.is_leader else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def endpoint(self, node_id):
        return None


def _hosting(tmp: Path, partitions: int, node_id: int = 1):
    """A ReplicaManager on ``node_id`` hosting ``partitions`` partitions led by broker 1 (RF 2, both in the ISR)."""
    topic = TopicInfo("t", TOPIC_ID, tuple(PartitionInfo(i, 1, 1, (1, FOLLOWER), (1, FOLLOWER), partition_epoch=1)
                                           for i in range(partitions)))
    image = SimpleNamespace(brokers={1: SimpleNamespace(usable=True), FOLLOWER: SimpleNamespace(usable=True)},
                            topics={"t": topic}, config=lambda name, t, default: default,
                            topic_by_id=lambda tid: topic if tid == TOPIC_ID else None)
    rm = ReplicaManager(node_id, LogManager([tmp], NOW), {}, lambda: NOW, controller_channel=None,
                        broker_epoch=lambda: 1, image_fn=lambda: image)
    config = LogConfig.from_props({"min.insync.replicas": "2", "segment.bytes": str(1 << 30)})
    for p in topic.partitions:
        rm.host(image, topic, p, config)
    return rm, image


def _fetch(session: tuple[int, int], named: dict[int, int], max_wait_ms: int = 0) -> dict:
    return {"ReplicaState": {"ReplicaId": FOLLOWER, "ReplicaEpoch": 1}, "MaxWaitMs": max_wait_ms, "MinBytes": 1,
            "MaxBytes": 10 << 20, "IsolationLevel": 0, "SessionId": session[0], "SessionEpoch": session[1],
            "Topics": [{"TopicId": TOPIC_ID, "Partitions": [
                {"Partition": i, "FetchOffset": off, "PartitionMaxBytes": 1 << 20, "CurrentLeaderEpoch": 1,
                 "LastFetchedEpoch": 1 if off else -1, "LogStartOffset": 0, "LocalLogStartTimestamp": -1,
                 "LocalLogSizeBytes": -1} for i, off in named.items()]}] if named else [],
            "ForgottenTopicsData": []}


async def _run(partitions: int, moved: int, rounds: int, repeats: int, profile: bool) -> list[float]:
    header = RequestHeader(ApiKey.FETCH, 19, 0, "bench", "PLAINTEXT")
    results = []
    with tempfile.TemporaryDirectory(prefix="tierlog-follower-round-") as tmp:
        rm, image = _hosting(Path(tmp), partitions)
        ctx = _Context(rm, image)
        first = await api_01_fetch.handle(ctx, header, _fetch((0, 0), dict.fromkeys(range(partitions), 0)))
        session = (first["SessionId"], 1)
        order = list(range(partitions))
        random.Random(1).shuffle(order)
        step = 0
        profiler = _profiler() if profile else None
        for _ in range(repeats):
            waiters, reported = [], {}
            start = time.process_time()
            if profiler is not None:
                profiler.enable()
            for _ in range(rounds):
                for _ in range(moved):
                    index = order[step % partitions]
                    step += 1
                    part = rm.get("t", index)
                    outcome, fut = rm.append_records(part, bytearray(build_batch([Record(0, NOW, None, VALUE)])),
                                                     AppendOrigin.CLIENT, -1, 30_000)
                    assert outcome.appended and fut is not None
                    waiters.append(fut)
                resp = await api_01_fetch.handle(ctx, header, _fetch(session, reported))
                session = (session[0], session[1] + 1)
                reported = {}
                for t in resp["Responses"]:
                    for p in t["Partitions"]:
                        if p["Records"]:
                            reported[p["PartitionIndex"]] = part_leo(rm, p["PartitionIndex"])
            if profiler is not None:
                profiler.disable()
            results.append((time.process_time() - start) * 1000 / rounds)
            await asyncio.sleep(0)
            answered = sum(1 for w in waiters if w.done() and w.result() == ErrorCode.NONE)
            assert answered >= len(waiters) - moved, (answered, len(waiters))
        _report(profiler, rounds * repeats)
        await rm.stop()
        rm.logs.close()
    return results


def _answer(parts: list[tuple[int, int, bytes | None]]) -> dict:
    """The leader's Fetch answer: (index, high watermark, records) per partition with news."""
    return {"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 7, "NodeEndpoints": [], "Responses": [
        {"TopicId": TOPIC_ID, "Partitions": [
            {"PartitionIndex": i, "ErrorCode": 0, "HighWatermark": hw, "LastStableOffset": hw, "LogStartOffset": 0,
             "DivergingEpoch": {"Epoch": -1, "EndOffset": -1}, "CurrentLeader": {"LeaderId": -1, "LeaderEpoch": -1},
             "SnapshotId": {"EndOffset": -1, "Epoch": -1}, "AbortedTransactions": None, "PreferredReadReplica": -1,
             "Records": records} for i, hw, records in parts]}]}


def _profiler():
    """cProfile's profiler (bench/profile.py shadows the stdlib module cProfile imports)."""
    here = str(Path(__file__).resolve().parent)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if p and str(Path(p).resolve()) != here]
    sys.modules.pop("profile", None)
    try:
        import cProfile
        return cProfile.Profile()
    finally:
        sys.path[:] = saved


def _report(profiler, rounds: int) -> None:
    """Python calls per round, and the top functions (FR_SORT, FR_TOP; FR_CALLERS: whose callers)."""
    if profiler is None:
        return
    import pstats
    stats = pstats.Stats(profiler)
    calls = sum(v[1] for v in stats.stats.values())      # type: ignore[attr-defined]
    print(f"{calls / rounds:.1f} Python calls per round", file=sys.stderr)
    stats.sort_stats(os.environ.get("FR_SORT", "tottime")).print_stats(int(os.environ.get("FR_TOP", "25")))
    if os.environ.get("FR_CALLERS"):
        stats.print_callers(os.environ["FR_CALLERS"])


def _run_follower(partitions: int, moved: int, rounds: int, repeats: int, profile: bool) -> list[float]:
    results = []
    with tempfile.TemporaryDirectory(prefix="tierlog-follower-side-") as tmp:
        rm, _ = _hosting(Path(tmp), partitions, FOLLOWER)     # broker 2, following broker 1
        state, tasks = rm.fetchers.fetchers[1], rm.fetcher_tasks
        assert state.build_fetch_request(NOW) is not None
        tasks._apply_round(state.handle_fetch_response(_answer([(i, 0, None) for i in range(partitions)]), NOW))
        order = list(range(partitions))
        random.Random(1).shuffle(order)
        ends, step, previous = [0] * partitions, 0, []
        profiler = _profiler() if profile else None
        for _ in range(repeats):
            answers = []                # built before the clock starts: the leader's bytes
            for _ in range(rounds):
                news = []
                for _ in range(moved):
                    i = order[step % partitions]
                    step += 1
                    news.append((i, ends[i], build_batch([Record(ends[i], NOW, None, VALUE)], base_offset=ends[i],
                                                         partition_leader_epoch=1)))
                    ends[i] += 1
                hws = [(i, ends[i], None) for i in previous if all(i != j for j, _, _ in news)]
                answers.append(_answer(news + hws))
                previous = [i for i, _, _ in news]
            start = time.process_time()
            if profiler is not None:
                profiler.enable()
            for answer in answers:       # as ReplicaFetcherTasks._run: KIP-1023 probes, then the request
                assert not state.take_probes(NOW)
                assert state.build_fetch_request(NOW) is not None
                tasks._apply_round(state.handle_fetch_response(answer, NOW))
            if profiler is not None:
                profiler.disable()
            results.append((time.process_time() - start) * 1000 / rounds)
        assert all(rm.get("t", i).log_end_offset == ends[i] for i in range(partitions))
        _report(profiler, rounds * repeats)
        rm.logs.close()
    return results


def part_leo(rm: ReplicaManager, index: int) -> int:
    """The follower appended what it read: its position is the leader's log end."""
    return rm.get("t", index).log_end_offset


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--partitions", type=int, default=300)
    p.add_argument("--moved", type=int, default=10, help="partitions with a new record per round")
    p.add_argument("--rounds", type=int, default=400)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--side", choices=("leader", "follower"), default="leader")
    p.add_argument("--profile", action="store_true", help="count Python calls per round (cProfile)")
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "follower_round.jsonl")
    args = p.parse_args(argv)
    gc.collect()
    if args.side == "follower":
        runs = _run_follower(args.partitions, args.moved, args.rounds, args.repeats, args.profile)
    else:
        runs = asyncio.run(_run(args.partitions, args.moved, args.rounds, args.repeats, args.profile))
    row = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "pythonpath": os.environ.get("PYTHONPATH"),
           "side": args.side,
           "partitions": args.partitions, "moved": args.moved, "rounds": args.rounds,
           "ms_per_round_best": round(min(runs), 4), "ms_per_round_median": round(sorted(runs)[len(runs) // 2], 4),
           "load": os.getloadavg()[0]}
    print(json.dumps(row))
    args.out.parent.mkdir(exist_ok=True)
    with args.out.open("a") as f:       # one JSON line per run: A/B runs side by side
        f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
