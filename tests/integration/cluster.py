"""A multi-process tierlog cluster for integration tests: N controllers + M brokers.

Controllers are nodes 1..N (listener CONTROLLER), brokers N+1..N+M (listener
PLAINTEXT), all with the same cluster id and ``controller.quorum.voters``.
``request()`` speaks the Kafka protocol to any node with tierlog's own codec.
"""
from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nodeproc import NodeProcess, free_port, start_all, stop_all

from tierlog.protocol import APIS, decode_response, encode_request

DESCRIBE_QUORUM, METADATA = 55, 3
# Short timeouts so elections, fencing and ISR changes happen within a test's patience.
FAST_REPLICATION = {"controller.quorum.election.timeout.ms": "500", "controller.quorum.fetch.timeout.ms": "1000",
                    "broker.heartbeat.interval.ms": "300", "broker.session.timeout.ms": "2000",
                    "replica.lag.time.max.ms": "3000"}
METADATA_TOPIC = "__cluster_metadata"


def request(host: str, port: int, api_key: int, body: dict, version: int | None = None,
            timeout_s: float = 5.0) -> dict:
    """One request/response on a fresh connection."""
    v = APIS[api_key].max_version if version is None else version
    frame = encode_request(api_key, v, 1, "tierlog-tests", body)
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _read(s, 4))[0]
        _, resp = decode_response(api_key, v, _read(s, size))
    return resp


def _read(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def log_end_offset(partition_dir: Path) -> int:
    """The log end offset from the segment files: last batch base offset + last offset delta + 1."""
    end = 0
    for seg in sorted(partition_dir.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + 27 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            if length <= 0 or pos + 12 + length > len(data):
                break
            (delta,) = struct.unpack_from(">i", data, pos + 23)
            end = base + delta + 1
            pos += 12 + length
    return end


def wait_for(predicate, timeout_s: float = 30, what: str = "condition", interval_s: float = 0.1):
    """Poll ``predicate`` until it returns a truthy value (returned) or the deadline passes."""
    deadline, last_error = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (OSError, ConnectionError) as e:
            last_error = e
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}"
                         + (f" (last error: {last_error})" if last_error else ""))


class Cluster:
    def __init__(self, root: Path, controllers: int = 3, brokers: int = 3, props: dict | None = None):
        self.root = Path(root)
        cports = [free_port() for _ in range(controllers)]
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(cports))
        common = {"cluster.id": "tierlog-test-cluster", "controller.quorum.voters": voters,
                  "controller.listener.names": "CONTROLLER", **(props or {})}
        self.controllers = [
            NodeProcess(self.root / f"node-{i + 1}", i + 1, p,
                        {**common, "process.roles": "controller",
                         "listeners": f"CONTROLLER://127.0.0.1:{p}"})
            for i, p in enumerate(cports)]
        self.brokers = []
        for j in range(brokers):
            node_id, p = controllers + j + 1, free_port()
            self.brokers.append(NodeProcess(self.root / f"node-{node_id}", node_id, p,
                                            {**common, "process.roles": "broker",
                                             "listeners": f"PLAINTEXT://127.0.0.1:{p}"}))

    @property
    def nodes(self) -> list[NodeProcess]:
        return self.controllers + self.brokers

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers if b.alive())

    def logs_tail(self, lines: int = 40) -> str:
        """The last lines of every node's log, for a failing assertion's message."""
        return "\n".join(f"--- node {n.node_id} ---\n{n.log_tail(lines)}" for n in self.nodes)

    def start(self) -> Cluster:
        start_all(self.nodes)
        return self

    def stop(self) -> None:
        """The brokers side by side (each a controlled shutdown), then the controllers."""
        stop_all(self.brokers)
        stop_all(self.controllers)

    def controller(self, node_id: int) -> NodeProcess:
        return next(c for c in self.controllers if c.node_id == node_id)

    def broker(self, node_id: int) -> NodeProcess:
        return next(b for b in self.brokers if b.node_id == node_id)

    def quorum(self) -> dict:
        """DescribeQuorum's partition entry from the leader (only it answers without error)."""
        last = None
        for c in self.controllers:
            if not c.alive():
                continue
            try:
                resp = request("127.0.0.1", c.port, DESCRIBE_QUORUM,
                               {"Topics": [{"TopicName": METADATA_TOPIC, "Partitions": [{"PartitionIndex": 0}]}]})
            except OSError:
                continue
            last = resp["Topics"][0]["Partitions"][0]
            if last["ErrorCode"] == 0:
                return last
        if last is None:
            raise ConnectionError("no live controller answered")
        return last

    def leader_id(self) -> int | None:
        part = self.quorum()
        return part["LeaderId"] if part["ErrorCode"] == 0 and part["LeaderId"] >= 0 else None

    def wait_leader(self, timeout_s: float = 20, not_id: int | None = None) -> int:
        def elected():
            leader = self.leader_id()
            return leader if leader is not None and leader != not_id else None
        return wait_for(elected, timeout_s, "a metadata quorum leader")

    def metadata(self, broker: NodeProcess, topics: list[str] | None = None) -> dict:
        body = {"Topics": None if topics is None else [{"Name": t, "TopicId": bytes(16)} for t in topics],
                "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False}
        return request("127.0.0.1", broker.port, METADATA, body, version=12)

    def partitions(self, broker: NodeProcess, topic: str) -> list[dict]:
        """``topic``'s partitions in ``broker``'s Metadata answer, by index; [] while it does not know the topic."""
        topics = self.metadata(broker, [topic])["Topics"]
        if not topics or topics[0]["ErrorCode"] != 0:
            return []
        return sorted(topics[0]["Partitions"], key=lambda p: p["PartitionIndex"])

    def live_partitions(self, topic: str, count: int) -> list[dict]:
        """``topic``'s partitions from the first live broker that knows all ``count`` of them ([] if none)."""
        for b in self.brokers:
            if not b.alive():
                continue
            try:
                ps = self.partitions(b, topic)
            except OSError:
                continue
            if len(ps) == count:
                return ps
        return []


@contextmanager
def running(cluster: Cluster) -> Iterator[Cluster]:
    """Start ``cluster``; on the way out stop every node it started, also when starting failed."""
    try:
        yield cluster.start()
    finally:
        cluster.stop()
