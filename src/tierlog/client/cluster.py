"""Bootstrap servers + Metadata: who leads which partition, and their offsets.

Only the bootstrap list and Metadata answers are used to find partition
leaders, so the same code works against one node or a replicated cluster.
Requests go to the current leader; a retriable error (leader moved, election
under way) refreshes metadata and retries until ``retry_timeout_s`` passes.

KIP-951 "Client": a leader named by a Fetch error (``apply_leader_hint``, rule in
``client.leader_hint``) replaces the cached leader at once, and its endpoint from
NodeEndpoints is added to the cached brokers; the topic is marked stale and
refreshed later (``refresh_stale``), never before the retry. A Metadata answer
never overrides a cached leader with an older leader epoch (same topic id), so a
broker not yet caught up cannot send us back to the old leader.

Each node connection asks ApiVersions first, so requests use the highest
version both sides speak (``version_for``). Every connection is made with the
cluster's ``security`` (``net.client_security.client_security`` of the client's properties:
plaintext, or TLS with Kafka's ssl.* settings). ``isolation_level`` (Kafka's isolation.level:
READ_UNCOMMITTED or READ_COMMITTED) goes into its ListOffsets and Fetch requests. ``sent`` counts requests sent, by
(address, api key), ``leader_hints_taken`` the hints followed.
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

from tierlog.client.leader_hint import leader_update
from tierlog.clock import monotonic_s
from tierlog.net.blocking import BlockingConnection
from tierlog.net.request_pipeline import RECEIVE_MESSAGE_MAX_BYTES, PeerUnavailable
from tierlog.net.security import PLAINTEXT, Security
from tierlog.protocol import ApiKey, describe, is_retriable
from tierlog.protocol.errors import ErrorCode
from tierlog.records.aborted import READ_UNCOMMITTED

__all__ = ["EARLIEST", "LATEST", "Cluster", "KafkaError", "TopicPartition", "parse_bootstrap"]

METADATA_VERSION = 12       # Kafka 2.8+; topic names (v13 only adds a top-level error code)
LIST_OFFSETS_VERSION = 7    # Kafka 2.8+: timestamps, -1 latest, -2 earliest
LIST_OFFSETS_TIERED_VERSION = 9     # -5: the highest offset in remote storage (KIP-405)
DESCRIBE_CONFIGS_VERSIONS = (1, 4)  # v1: synonyms; v4: flexible
API_VERSIONS_VERSION = 3    # Kafka 2.4+
LATEST = -1                 # ListOffsets timestamp: the high watermark (exclusive end)
EARLIEST = -2               # ListOffsets timestamp: the log start offset
_NO_TOPIC_ID = bytes(16)

TopicPartition = tuple[str, int]


class KafkaError(Exception):
    """A Kafka error code that did not go away within the retry budget."""

    def __init__(self, code: int, what: str):
        super().__init__(f"{what}: {describe(code)} (error code {code})")
        self.code = code


@dataclass(frozen=True)
class PartitionInfo:
    leader: int
    leader_epoch: int


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``host:port,host:port`` as a list; raises ValueError naming the bad entry."""
    out = []
    for entry in servers.split(","):
        entry = entry.strip()
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bootstrap server {entry!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap servers given")
    return out


class Cluster:
    """Connections by node id, the latest Metadata answer, ListOffsets by leader."""

    def __init__(self, bootstrap_servers: str, *, client_id: str = "tierlog-spark",
                 timeout_s: float = 30.0, retry_timeout_s: float = 30.0,
                 receive_message_max_bytes: int = RECEIVE_MESSAGE_MAX_BYTES, security: Security = PLAINTEXT,
                 isolation_level: int = READ_UNCOMMITTED):
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.isolation_level = isolation_level        # of its ListOffsets and Fetch requests
        self.security = security
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.retry_timeout_s = retry_timeout_s
        self.receive_message_max_bytes = receive_message_max_bytes
        self.brokers: dict[int, tuple[str, int]] = {}
        self.partitions: dict[str, dict[int, PartitionInfo]] = {}
        self.topic_errors: dict[str, int] = {}     # topics whose last Metadata answer was an error
        self.topic_ids: dict[str, bytes] = {}
        self.sent: Counter = Counter()                # requests sent, by (address, api key)
        self.leader_hints_taken = 0
        self._stale: set[str] = set()                 # topics whose leaders came from a KIP-951 hint
        self._api_versions: dict[int, dict[int, tuple[int, int]]] = {}
        self._conns: dict[int, BlockingConnection] = {}
        self._any: BlockingConnection | None = None

    # -- connections ------------------------------------------------------------

    def _open(self, host: str, port: int) -> BlockingConnection:
        return BlockingConnection(host, port, client_id=self.client_id, timeout_s=self.timeout_s,
                                  receive_message_max_bytes=self.receive_message_max_bytes, sent=self.sent,
                                  security=self.security)

    def _any_connection(self) -> BlockingConnection:
        if self._any is not None:
            return self._any
        errors = []
        for host, port in self.bootstrap + list(self.brokers.values()):
            try:
                self._any = self._open(host, port)
                return self._any
            except PeerUnavailable as e:
                errors.append(f"{host}:{port}: {e.reason}")
        raise PeerUnavailable("cannot reach any bootstrap server (" + "; ".join(errors) + ")")

    def connection(self, node_id: int) -> BlockingConnection:
        conn = self._conns.get(node_id)
        if conn is None:
            if node_id not in self.brokers:
                self.refresh()
            if node_id not in self.brokers:       # no leader (-1), or a leader not (yet) registered
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"broker {node_id}")
            conn = self._open(*self.brokers[node_id])
            try:
                resp = conn.request(ApiKey.API_VERSIONS, API_VERSIONS_VERSION,
                                    {"ClientSoftwareName": "tierlog", "ClientSoftwareVersion": "1"})
            except PeerUnavailable:
                conn.close()
                raise
            self._api_versions[node_id] = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"])
                                           for k in resp["ApiKeys"]} if not resp["ErrorCode"] else {}
            self._conns[node_id] = conn
        return conn

    def version_for(self, node_id: int, api_key: int, lowest: int, highest: int) -> int:
        """The highest version of ``api_key`` in ``[lowest, highest]`` that ``node_id`` speaks (``lowest``
        if it did not say); KafkaError UNSUPPORTED_VERSION when the ranges do not meet."""
        theirs = self._api_versions.get(node_id, {}).get(api_key)
        if theirs is None:
            return lowest
        version = min(highest, theirs[1])
        if version < max(lowest, theirs[0]):
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"api key {api_key} on broker {node_id}")
        return version

    def drop_connection(self, node_id: int) -> None:
        self._api_versions.pop(node_id, None)
        conn = self._conns.pop(node_id, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
        if self._any is not None:
            self._any.close()
            self._any = None

    # -- metadata ---------------------------------------------------------------

    def refresh(self, topics: list[str] | None = None) -> None:
        """Fetch metadata for ``topics`` (None: every topic) and remember leaders."""
        body = {"Topics": None if topics is None else [{"TopicId": _NO_TOPIC_ID, "Name": t} for t in topics],
                "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False}
        try:
            resp = self._any_connection().request(ApiKey.METADATA, METADATA_VERSION, body)
        except PeerUnavailable:
            if self._any is not None:
                self._any.close()
            self._any = None
            resp = self._any_connection().request(ApiKey.METADATA, METADATA_VERSION, body)
        brokers = {b["NodeId"]: (b["Host"], b["Port"]) for b in resp["Brokers"]}
        for t in resp["Topics"]:
            name = t["Name"]
            self._stale.discard(name)
            if t["ErrorCode"]:
                self.partitions.pop(name, None)
                self.topic_ids.pop(name, None)
                self.topic_errors[name] = t["ErrorCode"]
                continue
            self.topic_errors.pop(name, None)
            fresh = {p["PartitionIndex"]: PartitionInfo(p["LeaderId"], p["LeaderEpoch"]) for p in t["Partitions"]}
            if self.topic_ids.get(name) == t.get("TopicId", _NO_TOPIC_ID):
                self._keep_newer_leaders(name, fresh, brokers)
            self.topic_ids[name] = t.get("TopicId", _NO_TOPIC_ID)
            self.partitions[name] = fresh
        self.brokers = brokers

    def _keep_newer_leaders(self, topic: str, fresh: dict[int, PartitionInfo], brokers: dict) -> None:
        """KIP-951 "Client": a cached leader with a newer epoch (from a hint) beats a stale Metadata answer."""
        for index, cached in self.partitions.get(topic, {}).items():
            answered = fresh.get(index)
            if answered is not None and cached.leader_epoch > answered.leader_epoch:
                fresh[index] = cached
                if cached.leader in self.brokers:
                    brokers.setdefault(cached.leader, self.brokers[cached.leader])

    def apply_leader_hint(self, tp: TopicPartition, error_code: int, current_leader: dict | None,
                          node_endpoints: list[dict] | None) -> bool:
        """KIP-951 "Client": take the new leader an error names (see ``client.leader_hint``); True when
        taken, so the caller retries at once; False: refresh metadata and back off as before."""
        cached = self.partitions.get(tp[0], {}).get(tp[1])
        update = leader_update(error_code, current_leader, -1 if cached is None else cached.leader_epoch,
                               self.brokers, node_endpoints or ())
        if update is None:
            return False
        if update.endpoint is not None and self.brokers.get(update.leader) != update.endpoint:
            self.drop_connection(update.leader)     # the endpoint moved: reconnect there
            self.brokers[update.leader] = update.endpoint
        self.partitions.setdefault(tp[0], {})[tp[1]] = PartitionInfo(update.leader, update.leader_epoch)
        self._stale.add(tp[0])
        self.leader_hints_taken += 1
        return True

    def refresh_stale(self) -> None:
        """The metadata refresh a taken hint asked for (KIP-951 "Client"), after the retry went out."""
        if self._stale:
            try:
                self.refresh(sorted(self._stale))
            except PeerUnavailable:
                pass            # no broker answers now: the topics stay stale, asked again next time

    def leader_epoch(self, tp: TopicPartition) -> int:
        info = self.partitions.get(tp[0], {}).get(tp[1])
        return -1 if info is None else info.leader_epoch

    def topics_matching(self, pattern: str) -> list[str]:
        self.refresh(None)
        rx = re.compile(pattern)
        return sorted(t for t in self.partitions if rx.fullmatch(t))

    def partitions_of(self, topics: list[str]) -> list[TopicPartition]:
        """Every partition of ``topics`` that exist (missing topics are left out).

        A topic answered with LEADER_NOT_AVAILABLE is being created (auto-creation, or a
        CreateTopics the broker has not applied yet): its partitions are waited for, up to
        ``retry_timeout_s``, rather than read as "no partitions". Partitions without a
        leader are listed; ListOffsets and Fetch wait for their leaders.
        """
        self.refresh(list(topics))
        deadline = monotonic_s() + self.retry_timeout_s
        while True:
            creating = [t for t in topics if self.topic_errors.get(t) == ErrorCode.LEADER_NOT_AVAILABLE]
            if not creating or monotonic_s() > deadline:
                break
            time.sleep(0.2)
            self.refresh(creating)
        return sorted((t, p) for t in topics for p in self.partitions.get(t, {}))

    def _known_leader(self, tp: TopicPartition) -> int | None:
        info = self.partitions.get(tp[0], {}).get(tp[1])
        if info is None or info.leader < 0 or info.leader not in self.brokers:
            return None
        return info.leader

    def leader(self, tp: TopicPartition) -> int:
        """The partition's leader; KafkaError (retriable) when it has none right now."""
        node = self._known_leader(tp)
        if node is None:
            self.refresh([tp[0]])
            node = self._known_leader(tp)
        if node is None:
            known = tp[0] in self.partitions and tp[1] in self.partitions[tp[0]]
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"partition {tp[0]}-{tp[1]}")
        return node

    def wait_for_leaders(self, topics: dict[str, int], timeout_s: float = 30.0) -> None:
        """Until Metadata shows each topic with (at least) its partition count, every one
        with a live leader; KafkaError naming what is missing after ``timeout_s``."""
        deadline = monotonic_s() + timeout_s
        while True:
            self.refresh(sorted(topics))
            missing = []
            for t, count in topics.items():
                parts = self.partitions.get(t, {})
                if len(parts) < count:
                    missing.append(f"{t}: {len(parts)} of {count} partitions")
                missing += [f"{t}-{p}: no leader" for p in sorted(parts)
                            if self._known_leader((t, p)) is None]
            if not missing:
                return
            if monotonic_s() > deadline:
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, "waiting for " + ", ".join(missing[:6]))
            time.sleep(0.2)

    # -- configs ----------------------------------------------------------------

    def describe_configs(self, node_id: int, resources: list[tuple[int, str]]) -> list[dict]:
        """DescribeConfigs of ``(resource type, name)`` pairs (2 topic, 4 broker) on ``node_id``: the
        answer's results, each with its ErrorCode and Configs (a broker answers only for itself)."""
        version = self.version_for(node_id, ApiKey.DESCRIBE_CONFIGS, *DESCRIBE_CONFIGS_VERSIONS)
        body = {"Resources": [{"ResourceType": kind, "ResourceName": name, "ConfigurationKeys": None}
                              for kind, name in resources],
                "IncludeSynonyms": False, "IncludeDocumentation": False}
        return self.connection(node_id).request(ApiKey.DESCRIBE_CONFIGS, version, body)["Results"]

    # -- offsets ----------------------------------------------------------------

    def list_offsets(self, tps: list[TopicPartition], timestamp: int | dict) -> dict[TopicPartition, int]:
        """Offset for each partition at ``timestamp`` (or per-partition timestamps).

        -1 LATEST gives the high watermark (the last stable offset at read_committed),
        -2 EARLIEST the log start; a real
        timestamp gives the first offset with a timestamp >= it, or -1 when none.
        """
        ts_of = timestamp if isinstance(timestamp, dict) else dict.fromkeys(tps, timestamp)
        out: dict[TopicPartition, int] = {}
        pending = list(tps)
        deadline = monotonic_s() + self.retry_timeout_s
        while pending:
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            retry: list[TopicPartition] = []
            last_error: tuple[int, str] = (ErrorCode.NONE, "")
            for tp in pending:
                try:
                    by_leader[self.leader(tp)].append(tp)
                except KafkaError as e:       # no leader yet (topic being created, election)
                    retry.append(tp)
                    last_error = (e.code, f"ListOffsets {tp[0]}-{tp[1]}: no leader")
            for node, group in by_leader.items():
                for tp, code, offset in self._list_offsets_on(node, group, ts_of):
                    if code == ErrorCode.NONE:
                        out[tp] = offset
                    elif is_retriable(code):
                        retry.append(tp)
                        last_error = (code, f"ListOffsets {tp[0]}-{tp[1]}")
                    else:
                        raise KafkaError(code, f"ListOffsets {tp[0]}-{tp[1]}")
            pending = retry
            if pending:
                if monotonic_s() > deadline:
                    raise KafkaError(*last_error)
                time.sleep(0.2)
                self.refresh(sorted({t for t, _ in pending}))
        return out

    def _list_offsets_on(self, node: int, group: list[TopicPartition], ts_of: dict):
        by_topic: dict[str, list[int]] = defaultdict(list)
        for t, p in group:
            by_topic[t].append(p)
        body = {"ReplicaId": -1, "IsolationLevel": self.isolation_level, "Topics": [
            {"Name": t, "Partitions": [{"PartitionIndex": p, "CurrentLeaderEpoch": -1, "Timestamp": ts_of[(t, p)]}
                                       for p in ps]} for t, ps in by_topic.items()]}
        try:
            version = LIST_OFFSETS_TIERED_VERSION if any(ts_of[tp] == -5 for tp in group) else LIST_OFFSETS_VERSION
            resp = self.connection(node).request(ApiKey.LIST_OFFSETS, version, body)
        except PeerUnavailable:
            self.drop_connection(node)
            yield from ((tp, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1) for tp in group)   # retry after a refresh
            return
        for t in resp["Topics"]:
            for p in t["Partitions"]:
                yield (t["Name"], p["PartitionIndex"]), p["ErrorCode"], p["Offset"]
