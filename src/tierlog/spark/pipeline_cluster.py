"""The example pipeline's cluster and topics (``spark/pipeline.py``): a local ``tierlog up`` in a
temp dir when no ``--bootstrap`` is given, and the two topics it creates and checks."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tierlog.clock import monotonic_s
from tierlog.parent_watch import child_env

__all__ = ["CLIENT_LOGS", "TOPIC_PARTITIONS", "LocalCluster", "create_topics", "topics_of"]

# librdkafka's own lines from the pipeline's clients: warnings and errors, not its info lines (e.g. a
# client's telemetry subscription, KIP-714), which are not the pipeline's output
CLIENT_LOGS = {"log_level": 4}
TOPIC_PARTITIONS = {"events": 3, "results": 1}      # partitions each topic of the pipeline needs (at least)


class LocalCluster:
    """``tierlog up`` in a temp dir, until stop()."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="tierlog-pipeline-"))
        with open(self.dir / "cluster.log", "wb") as log:      # the child keeps its own handle
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tierlog.cli.main", "up", "--data-dir", str(self.dir / "data"),
                 "--listen", "127.0.0.1:0"],         # free ports below the ephemeral range
                stdout=subprocess.PIPE, stderr=log, text=True,
                start_new_session=True,       # Ctrl-C reaches us only; we stop the cluster ourselves
                env=child_env())              # ... and it stops by itself if we are killed
        self.bootstrap = self._wait_ready()

    def _wait_ready(self, timeout_s: float = 60) -> str:
        deadline = monotonic_s() + timeout_s
        while monotonic_s() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("bootstrap.servers="):
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()   # keep the pipe drained
                return line.strip().split("=", 1)[1]
            if not line and self.proc.poll() is not None:
                break
        log = (self.dir / "cluster.log").read_text(errors="replace")[-2000:]
        self.stop()
        raise SystemExit(f"pipeline: the local cluster did not start; its log ends with:\n{log}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def topics_of(args) -> dict[str, tuple[str, int]]:
    """The pipeline's topics: name -> (the option that names it, the partitions it needs)."""
    return {args.events_topic: ("--events-topic", TOPIC_PARTITIONS["events"]),
            args.results_topic: ("--results-topic", TOPIC_PARTITIONS["results"])}


def create_topics(bootstrap: str, topics: dict[str, tuple[str, int]], timeout_s: float = 60) -> None:
    """Create the pipeline's topics (if missing) and wait until Metadata shows every
    partition with a leader, so the streaming query starts with all of them. A topic that
    exists with fewer partitions is refused at once, naming the fix."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    from tierlog.client import Cluster, KafkaError

    admin = AdminClient({"bootstrap.servers": bootstrap, **CLIENT_LOGS})
    futures = admin.create_topics([NewTopic(name, parts, 1) for name, (_, parts) in topics.items()],
                                  operation_timeout=timeout_s / 2, request_timeout=timeout_s / 2)
    existing = []
    for name, fut in futures.items():
        try:
            fut.result(timeout_s)
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e) and "already exists" not in str(e):
                raise SystemExit(f"pipeline: cannot create topic {name}: {e}") from None
            existing.append(name)
    if existing:
        _check_partition_counts(admin, {name: topics[name] for name in existing}, timeout_s)
    cluster = Cluster(bootstrap, client_id="tierlog-pipeline", retry_timeout_s=timeout_s)
    try:
        cluster.wait_for_leaders({name: parts for name, (_, parts) in topics.items()}, timeout_s)
    except KafkaError as e:
        raise SystemExit(f"pipeline: the topics did not get leaders in {timeout_s:.0f} s: {e}") from None
    finally:
        cluster.close()


def _check_partition_counts(admin, topics: dict[str, tuple[str, int]], timeout_s: float) -> None:
    """SystemExit naming the fix when a topic that was there before has fewer partitions than it needs."""
    for name, (option, needed) in topics.items():
        found = admin.list_topics(name, timeout=timeout_s).topics[name]
        have = len(found.partitions)
        if found.error is None and have < needed:
            raise SystemExit(f"pipeline: topic {name} exists with {have} partition{'s' * (have != 1)}; "
                             f"the pipeline needs {needed}: delete it or pass {option} NAME")
