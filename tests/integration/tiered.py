"""Helpers for the tiered storage integration tests: cluster settings, offsets, remote listings, moto S3."""
from __future__ import annotations

import itertools
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Self

import boto3
from botocore.exceptions import BotoCoreError, ClientError
from cluster import FAST_REPLICATION, request, wait_for
from nodeproc import free_port

from tierlog.tiered import list_partitions, object_store_from_config

LIST_OFFSETS = 2
EARLIEST, EARLIEST_LOCAL, LATEST_TIERED = -2, -4, -5
MOTO_REGION = "us-east-1"
MOTO_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "tierlog-test", "AWS_SECRET_ACCESS_KEY": "tierlog-test-secret"}

# Tiering every few hundred ms, retention checks as often, deleted files gone after a second.
TIERED_BROKER = {**FAST_REPLICATION, "remote.log.storage.system.enable": "true",
                 "remote.log.manager.task.interval.ms": "300", "log.retention.check.interval.ms": "300",
                 "log.segment.delete.delay.ms": "1000", "remote.log.manager.task.retry.backoff.ms": "200",
                 "remote.log.manager.task.retry.backoff.max.ms": "1000"}
# Small segments, small local retention: most of a topic lives in remote storage only.
TIERED_TOPIC = {"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024),
                "local.retention.bytes": str(1024 * 1024)}


def fs_props(root: Path) -> dict:
    return {**TIERED_BROKER, "rsm.config.storage.backend": "fs", "rsm.config.storage.root": str(root)}


def offsets(broker, topic: str, partition: int, target: int) -> int | None:
    """ListOffsets ``target`` answered by ``broker`` for one partition (None on an error)."""
    body = {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [
        {"Name": topic, "Partitions": [{"PartitionIndex": partition, "CurrentLeaderEpoch": -1, "Timestamp": target}]}]}
    answer = request("127.0.0.1", broker.port, LIST_OFFSETS, body, version=9)
    p = answer["Topics"][0]["Partitions"][0]
    return None if p["ErrorCode"] else p["Offset"]


def leader_broker(cluster, topic: str, partition: int):
    """The live broker leading ``partition`` as the first live broker sees it (None: none yet)."""
    for b in cluster.brokers:
        if b.alive():
            try:
                parts = cluster.partitions(b, topic)
            except OSError:
                continue
            for p in parts:
                if p["PartitionIndex"] == partition and p["LeaderId"] >= 0:
                    return cluster.broker(p["LeaderId"])
            return None
    return None


def tiered_state(cluster, topic: str, partition: int) -> dict | None:
    """The leader's log start, local log start and highest tiered offset, or None if unknown right now."""
    leader = leader_broker(cluster, topic, partition)
    if leader is None or not leader.alive():
        return None
    values = {name: offsets(leader, topic, partition, t) for name, t in
              (("start", EARLIEST), ("local_start", EARLIEST_LOCAL), ("tiered", LATEST_TIERED))}
    return None if None in values.values() else values


def wait_tiered(cluster, topic: str, partitions: int, end_offsets: dict[int, int], timeout_s: float = 120) -> dict:
    """Wait until every partition has most of its data uploaded and gone locally."""
    def done():
        states = {p: tiered_state(cluster, topic, p) for p in range(partitions)}
        ok = all(s is not None and s["tiered"] >= end_offsets[p] // 2 and s["local_start"] > 0
                 for p, s in states.items())
        return states if ok else None
    return wait_for(done, timeout_s, f"segments of {topic} uploaded and deleted locally", interval_s=0.5)


def remote_listing(settings: dict, topic: str | None = None):
    """What remote storage holds, read with no broker (tierlog remote ls's source)."""
    return list_partitions(object_store_from_config(settings), topic)


def assert_no_overlap(listing) -> None:
    for p in listing:
        ranges = sorted((s.metadata.start_offset, s.metadata.end_offset) for s in p.segments)
        for (_s1, e1), (s2, _e2) in itertools.pairwise(ranges):
            assert s2 > e1, f"overlapping remote segments in {p.topic_id_partition}: {ranges}"


class MotoServer:
    """A moto S3 server process on 127.0.0.1 (path-style), with one bucket."""

    def __init__(self, root: Path):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.bucket = f"tierlog-{uuid.uuid4().hex[:10]}"
        self.log_path = root / "moto.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Self:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                                          str(self.port)], stdout=log, stderr=subprocess.STDOUT)
        client = boto3.client("s3", endpoint_url=self.endpoint, region_name=MOTO_REGION,
                              aws_access_key_id=MOTO_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=MOTO_CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
        deadline = time.monotonic() + 30
        while True:
            try:
                client.create_bucket(Bucket=self.bucket)
                return self
            except (BotoCoreError, ClientError):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"moto server did not start: {self.log_path.read_text()[-2000:]}") from None
                time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:     # a loaded machine, a GiB in its memory: it stops anyway
                self.proc.kill()
                self.proc.wait()

    def settings(self) -> dict:
        return {"rsm.config.storage.backend": "s3", "rsm.config.storage.s3.bucket.name": self.bucket,
                "rsm.config.storage.s3.prefix": "cluster/", "rsm.config.storage.s3.endpoint.url": self.endpoint,
                "rsm.config.storage.s3.region": MOTO_REGION, "rsm.config.storage.s3.path.style.access.enabled": "true"}


def with_moto_credentials(monkeypatch) -> None:
    """boto3's usual chain (the environment) in this process and the node processes it starts."""
    for key, value in MOTO_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", MOTO_REGION)
