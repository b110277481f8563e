"""What the soak checks once every fault has stopped and the cluster has converged.

Each check returns a list of anomalies (one line each); the soak fails on any.

- ``converged``: every node up, a quorum leader, every broker registered and unfenced in
  each broker's Metadata, every partition with a leader and its whole replica set in the ISR,
  every broker's view of the topics identical, every replica of the metadata log at the same
  end offset (DescribeQuorum: voters and observers), and every node's metadata image the same
  (offset and digest, ``tierlog_metadata_image_info``: server/image_digest.py).
- ``acknowledged``: each acknowledged record is in the log at its offset with its value (one
  acknowledged without an offset, librdkafka's implicit acknowledgement, somewhere in its partition); no
  value twice (idempotence); each producer's records in a partition in sequence order; offsets
  contiguous from the log start (the data topics have no markers and no compaction).
- ``groups``: committed offsets never move backwards, and every offset below a group's final
  committed offset was read by one of its members (a commit never skips an unread record).
- ``churn``: topics acknowledged as created exist unless acknowledged as deleted, and those
  acknowledged as deleted are gone.
The transactions are checked by tests/support/txn_anomalies.py.
"""
from __future__ import annotations

import time
import urllib.request
from collections import defaultdict

from cluster import request
from confluent_kafka import Consumer, TopicPartition
from soak_lab import METRICS_PORT, SoakCluster
from soak_workload import QUIET, Ack, Churn

from tierlog.protocol.api import ApiKey
from tierlog.server.image_digest import IMAGE_INFO

LATEST_TIERED = -5


def metadata(node, topics: list[str] | None = None) -> dict:
    body = {"Topics": None if topics is None else [{"Name": t, "TopicId": bytes(16)} for t in topics],
            "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False}
    return request(node.host, node.port, ApiKey.METADATA, body, version=12, timeout_s=5)


def view(resp: dict) -> tuple:
    """What a broker's Metadata answer says of the cluster, comparable between brokers."""
    brokers = tuple(sorted(b["NodeId"] for b in resp["Brokers"]))
    topics = tuple(sorted(
        (t["Name"], t["ErrorCode"], tuple(sorted((p["PartitionIndex"], p["LeaderId"], p["LeaderEpoch"],
                                                  tuple(p["ReplicaNodes"]), tuple(sorted(p["IsrNodes"])))
                                                 for p in t["Partitions"])))
        for t in resp["Topics"]))
    return brokers, topics      # not ControllerId: KRaft brokers name a broker of their choice there


def quorum(cluster: SoakCluster) -> dict | None:
    for c in cluster.controllers:
        try:
            resp = request(c.host, c.port, ApiKey.DESCRIBE_QUORUM, {"Topics": [
                {"TopicName": "__cluster_metadata", "Partitions": [{"PartitionIndex": 0}]}]}, timeout_s=3)
        except OSError:
            continue
        part = resp["Topics"][0]["Partitions"][0]
        if part["ErrorCode"] == 0:
            return part
    return None


def convergence_problems(cluster: SoakCluster) -> list[str]:
    """Empty once the cluster has converged (see the module docstring)."""
    problems = [f"node {n.node_id} is not running" for n in cluster.nodes.values() if not n.alive()]
    if problems:
        return problems
    q = quorum(cluster)
    if q is None:
        return ["no metadata quorum leader"]
    ends = {r["ReplicaId"]: r["LogEndOffset"] for r in q["CurrentVoters"] + q["Observers"]}
    if len(set(ends.values())) != 1 or set(ends) != set(cluster.nodes):
        problems.append(f"metadata log end offsets differ: {ends}")
    views = {}
    for b in cluster.brokers:
        try:
            views[b.node_id] = view(metadata(b))
        except (OSError, ConnectionError) as e:
            problems.append(f"broker {b.node_id} does not answer Metadata: {e}")
    for node_id, (brokers, topics) in views.items():
        if brokers != tuple(sorted(x.node_id for x in cluster.brokers)):
            problems.append(f"broker {node_id} sees brokers {brokers} (one fenced or unregistered)")
        for name, error, parts in topics:
            for index, leader, _, replicas, isr in parts:
                if leader < 0:
                    problems.append(f"{name}-{index} offline in broker {node_id}'s metadata")
                elif tuple(sorted(replicas)) != isr:
                    problems.append(f"{name}-{index} under-replicated: replicas {replicas} isr {isr}")
    images = {}
    for n in cluster.nodes.values():
        try:
            images[n.node_id] = image_of(n)
        except (OSError, ConnectionError) as e:
            problems.append(f"node {n.node_id}'s metadata image unknown: {e}")
    if len(set(images.values())) > 1:
        at = {}
        for node_id, image in images.items():
            at.setdefault(image[0], set()).add(image[1])
        split = [o for o, digests in at.items() if len(digests) > 1]
        problems.append(("DIVERGED at offset(s) %s: " % split if split else "metadata images at different offsets: ")
                        + str(images))
    if len(set(views.values())) > 1:
        problems.append("the brokers' metadata differ: " + "; ".join(
            f"{n}: brokers {v[0]}, {len(v[1])} topics" for n, v in views.items()))
    return problems


def image_of(node) -> tuple[int, str]:
    """(end offset, digest) of ``node``'s metadata image, from its metrics (server/image_digest.py)."""
    url = f"http://{node.host}:{METRICS_PORT}/metrics?name[]={IMAGE_INFO}"
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    for line in text.splitlines():
        if line.startswith(IMAGE_INFO + "{"):
            labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.index("}")].split(","))
            return int(labels["offset"].strip('"')), labels["digest"].strip('"')
    raise ConnectionError(f"node {node.node_id} reports no {IMAGE_INFO}")


def read_all(boot: str, topic: str, partitions: int, timeout_s: float = 120) -> dict[int, dict[int, bytes]]:
    """Every record of ``topic`` from its log start to the high watermark: partition -> {offset: value}."""
    c = Consumer({**QUIET, "bootstrap.servers": boot, "group.id": "soak-checker", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    try:
        highs = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: dict[int, dict[int, bytes]] = {p: {} for p in range(partitions)}
        deadline = time.monotonic() + timeout_s
        while any((max(out[p]) + 1 if out[p] else 0) < highs[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                raise AssertionError(f"read of {topic} did not reach the high watermarks {highs}")
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    out[m.partition()][m.offset()] = m.value()
        return out
    finally:
        c.close()


def acknowledged(topic: str, acks_by_producer: dict[str, list[Ack]], log: dict[int, dict[int, bytes]]) -> list[str]:
    out: list[str] = []
    values = {p: set(records.values()) for p, records in log.items()}
    for producer, acks in acks_by_producer.items():
        # librdkafka acknowledges some records without an offset: those of a request whose answer was
        # lost (a timeout, a broken connection) once a later request of the producer succeeds
        # (rd_kafka_dr_implicit_ack); such a record must be in its partition at some offset
        lost = [a for a in acks if (log.get(a.partition, {}).get(a.offset) != a.value if a.offset is not None
                                    else a.value not in values.get(a.partition, ()))]
        if lost:
            a = lost[0]
            out.append(f"{topic}: {len(lost)} of {len(acks)} records acknowledged to {producer} lost or changed, "
                       f"first {a.value!r} at {a.partition}@{a.offset} (log has "
                       f"{log.get(a.partition, {}).get(a.offset)!r})")
    for p, records in log.items():
        seen: dict[bytes, int] = {}
        last_seq: dict[str, tuple[int, int]] = {}
        offsets = sorted(records)
        if offsets and offsets != list(range(offsets[0], offsets[-1] + 1)):
            gaps = [o for o in range(offsets[0], offsets[-1] + 1) if o not in records]
            out.append(f"{topic}-{p}: offsets not contiguous, {len(gaps)} missing, first {gaps[:5]}")
        for off in offsets:
            value = records[off]
            if value in seen:
                out.append(f"{topic}-{p}: {value!r} at {seen[value]} and again at {off} (duplicate)")
            seen[value] = off
            name, _, seq_text = value.split(b"|", 1)[0].decode(errors="replace").rpartition(":")
            if not seq_text.isdigit():
                continue
            seq = int(seq_text)
            if name in last_seq and seq <= last_seq[name][0]:
                out.append(f"{topic}-{p}: {name} seq {seq} at {off} after seq {last_seq[name][0]} at "
                           f"{last_seq[name][1]} (order)")
            last_seq[name] = (seq, off)
    return out[:50]


def groups(seen: dict[str, list[tuple[float, dict[int, int]]]], reads: dict[str, set[tuple[int, int]]],
           final: dict[str, dict[int, int]], log_start: dict[int, int]) -> list[str]:
    out: list[str] = []
    for group, samples in seen.items():
        last: dict[int, tuple[float, int]] = {}
        for t, committed in samples:
            for p, off in committed.items():
                if p in last and off < last[p][1]:
                    out.append(f"group {group} partition {p}: committed offset {last[p][1]} at {last[p][0]:.1f}s "
                               f"went back to {off} at {t:.1f}s")
                last[p] = (t, off)
    for group, committed in final.items():
        for p, off in committed.items():
            unread = [o for o in range(log_start.get(p, 0), off) if (p, o) not in reads[group]]
            if unread:
                out.append(f"group {group} partition {p}: committed {off} but {len(unread)} offsets below it "
                           f"were never read by a member, first {unread[:5]}")
    return out


def churn(state: Churn, existing: set[str]) -> list[str]:
    out = []
    for name in sorted(state.created - state.deleted - state.uncertain):
        if name not in existing:
            out.append(f"topic {name} was created (acknowledged) but is missing")
    for name in sorted(state.deleted - state.uncertain):
        if name in existing:
            out.append(f"topic {name} was deleted (acknowledged) but still exists")
    return out


def by_partition(acks: list[Ack]) -> dict[int, list[Ack]]:
    out: dict[int, list[Ack]] = defaultdict(list)
    for a in acks:
        out[a.partition].append(a)
    return out


def tiered_offsets(cluster: SoakCluster, topic: str, partitions: int) -> dict[int, int | None]:
    """Each partition's highest tiered offset (ListOffsets LATEST_TIERED, KIP-1005) from its leader."""
    leaders = {p["PartitionIndex"]: p["LeaderId"] for t in metadata(cluster.brokers[0], [topic])["Topics"]
               for p in t["Partitions"]}
    out: dict[int, int | None] = {}
    for p in range(partitions):
        leader = cluster.nodes.get(leaders.get(p, -1))
        if leader is None:
            out[p] = None
            continue
        body = {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [{"Name": topic, "Partitions": [
            {"PartitionIndex": p, "CurrentLeaderEpoch": -1, "Timestamp": LATEST_TIERED}]}]}
        answer = request(leader.host, leader.port, ApiKey.LIST_OFFSETS, body, version=9)["Topics"][0]["Partitions"][0]
        out[p] = None if answer["ErrorCode"] else answer["Offset"]
    return out


def lost_object(verify_rows: list[list[str]], lost: list[tuple[int, int, str]], boot: str, topic: str,
                acks: list[Ack]) -> list[str]:
    """The segments the nemesis deleted from remote storage are exactly what ``tierlog remote verify``
    reports, a consumer at the first gets an error (not a silent skip), and every acknowledged
    record outside them is read back."""
    out: list[str] = []
    acks = [a for a in acks if a.offset is not None]        # the implicit ones cannot be placed
    reported = {(int(r[1]), int(r[2]), r[3]) for r in verify_rows}
    expected = {(start, end, "missing") for start, end, _ in lost}
    if reported != expected:
        out.append(f"{topic}: remote verify reports {sorted(reported)}, the nemesis lost {sorted(expected)}")
    if not lost:
        return out
    c = Consumer({**QUIET, "bootstrap.servers": boot, "group.id": "soak-lossy-check", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, lost[0][0])])
        deadline, first = time.monotonic() + 60, None
        while first is None and time.monotonic() < deadline:
            first = c.poll(0.5)
        if first is None or first.error() is None:
            out.append(f"{topic}: a consumer at the lost segment's offset {lost[0][0]} got "
                       f"{'nothing' if first is None else f'a record at {first.offset()}'}, not an error")
    finally:
        c.close()
    bounds = sorted((start, end) for start, end, _ in lost)
    windows, at = [], 0
    for start, end in bounds:
        windows.append((at, start))
        at = end + 1
    windows.append((at, max((a.offset + 1 for a in acks), default=at)))
    read: dict[int, bytes] = {}
    for start, end in windows:
        if end > start:
            read.update(read_range(boot, topic, 0, start, end))
    outside = [a for a in acks if not any(s <= a.offset <= e for s, e in bounds)]
    missing = [a for a in outside if read.get(a.offset) != a.value]
    if missing:
        out.append(f"{topic}: {len(missing)} of {len(outside)} acknowledged records outside the lost segments "
                   f"not read back, first at {missing[0].offset}")
    return out


def read_range(boot: str, topic: str, partition: int, start: int, end: int, timeout_s: float = 60) -> dict[int, bytes]:
    """Offsets [start, end) of one partition (fewer if the deadline passes first)."""
    c = Consumer({**QUIET, "bootstrap.servers": boot, "group.id": "soak-range", "enable.auto.commit": False})
    out: dict[int, bytes] = {}
    try:
        c.assign([TopicPartition(topic, partition, start)])
        deadline, last = time.monotonic() + timeout_s, start - 1
        while last < end - 1 and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    out[m.offset()] = m.value()
                    last = max(last, m.offset())
        return out
    finally:
        c.close()


def crashes(cluster: SoakCluster) -> list[str]:
    """Every distinct exception a node logged with its traceback (a request that failed unexpectedly,
    a task that died): the last line of each traceback, with how often and on which nodes."""
    seen: dict[str, set[int]] = {}
    counts: dict[str, int] = defaultdict(int)
    for n in cluster.nodes.values():
        try:
            lines = n.log_path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        in_traceback = False
        for i, line in enumerate(lines):
            if line.startswith("Traceback"):
                in_traceback = True
            elif in_traceback and line and not line.startswith((" ", "Traceback", "During handling", "The above")):
                in_traceback = False
                if i + 1 < len(lines) and lines[i + 1].startswith(("During handling", "The above")):
                    continue        # a chained exception: its last one is what counts
                seen.setdefault(line, set()).add(n.node_id)
                counts[line] += 1
    return [f"{counts[e]}x on nodes {sorted(nodes)}: {e}" for e, nodes in sorted(seen.items())]
