"""`topics describe` from DescribeTopicPartitions: pages merged, errors, reassignments, columns.

The broker side is the real handler's pure rule (``describe``) over a small
metadata image, behind a fake `BrokerWire`, so the CLI follows cursors the
way a real broker sets them.
"""
import argparse
import socket

import pytest

from tierlog.broker.apis.api_75_describe_topic_partitions import (
    describe as broker_describe,
)
from tierlog.cli import broker_wire
from tierlog.cli.errors import CliError
from tierlog.cli.topic_partitions import describe_partitions, topic_id_text
from tierlog.cli.topics_describe import _columns
from tierlog.metadata.image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo


def _image() -> MetadataImage:
    def topic(name, n, count):
        return TopicInfo(name, n.to_bytes(16, "big"), tuple(
            PartitionInfo(i, 1, 2, (1, 2, 3), (1,), elr=(2,), last_known_elr=()) for i in range(count)))
    brokers = {b: BrokerInfo(b, "h", 9000 + b, fenced=b == 3) for b in (1, 2, 3)}
    return MetadataImage("c", 1, brokers, {"big": topic("big", 1, 5), "small": topic("small", 2, 1)})


class FakeWire:
    """Answers 75 with the broker's rule (at most ``limit`` partitions a page) and 46 from ``ongoing``."""

    def __init__(self, limit=2, ongoing=None, serves_46=True):
        self.image, self.limit, self.ongoing = _image(), limit, ongoing or []
        self.versions = {75: (0, 0), **({46: (0, 0)} if serves_46 else {})}
        self.calls, self.address = [], "fake:1"

    def version(self, key):
        return 0 if key in self.versions else None

    def remaining_s(self):
        return 10.0

    def call(self, key, body, version, what):
        self.calls.append((key, dict(body)))
        if key == 75:
            return broker_describe(self.image, body, self.limit)
        return {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Topics": self.ongoing}


def test_pages_are_followed_and_merged_per_topic():
    wire = FakeWire(limit=2)
    [big, small] = describe_partitions(wire, [])
    assert [p["partition"] for p in big["partitions"]] == [0, 1, 2, 3, 4]
    assert [p["partition"] for p in small["partitions"]] == [0]
    assert len([c for c in wire.calls if c[0] == 75]) == 3
    p = big["partitions"][0]
    assert (p["leader"], p["leader_epoch"], p["isr"], p["elr"], p["last_known_elr"], p["offline"]) == (
        1, 2, [1], [2], [], [3])
    assert big["topic_id"] == topic_id_text((1).to_bytes(16, "big")) and len(big["topic_id"]) == 22


def test_named_topics_come_back_in_the_order_asked():
    assert [d["topic"] for d in describe_partitions(FakeWire(), ["small", "big"])] == ["small", "big"]


def test_unknown_topics_are_one_clear_error():
    with pytest.raises(CliError, match="topic 'nope' does not exist"):
        describe_partitions(FakeWire(), ["big", "nope"])
    with pytest.raises(CliError, match="topics do not exist: nope, zz"):
        describe_partitions(FakeWire(), ["nope", "zz"])
    with pytest.raises(CliError, match="INVALID_TOPIC_EXCEPTION"):
        describe_partitions(FakeWire(), ["bad name!"])


def test_a_repeated_cursor_stops_with_an_error():
    wire = FakeWire()
    wire.call = lambda key, body, version, what: {
        "Topics": [], "NextCursor": {"TopicName": "big", "PartitionIndex": 1}}
    with pytest.raises(CliError, match="repeated its cursor"):
        describe_partitions(wire, [])


def test_ongoing_reassignments_fill_adding_and_removing():
    ongoing = [{"Name": "big", "Partitions": [{"PartitionIndex": 3, "Replicas": [1, 2, 3, 4],
                                               "AddingReplicas": [4], "RemovingReplicas": [3]}]}]
    [big, small] = describe_partitions(FakeWire(ongoing=ongoing), [])
    assert [(p["adding"], p["removing"]) for p in big["partitions"]][2:4] == [([], []), ([4], [3])]
    assert small["partitions"][0]["adding"] == []
    [big, _] = describe_partitions(FakeWire(serves_46=False), [])
    assert big["partitions"][0]["adding"] is None


def test_columns_follow_what_the_source_carries():
    [big, _] = describe_partitions(FakeWire(), [])
    headings = [h for h, _ in _columns(big["partitions"])]
    assert headings == ["Partition", "Leader", "LeaderEpoch", "Replicas", "Isr", "Elr", "Offline"]
    row = [cell(big["partitions"][0]) for _, cell in _columns(big["partitions"])]
    assert row == ["0", "1", "2", "1,2,3", "1", "2", "3"]
    old = [{"partition": 0, "leader": None, "replicas": [1], "isr": [], "leader_epoch": None, "elr": None,
            "last_known_elr": None, "offline": None, "adding": None, "removing": None}]
    assert [h for h, _ in _columns(old)] == ["Partition", "Leader", "Replicas", "Isr"]
    assert [cell(old[0]) for _, cell in _columns(old)] == ["0", "none", "1", "-"]


@pytest.mark.parametrize("settings, expected", [
    ([], True), ([("security.protocol", "PLAINTEXT")], True), ([("security.protocol", "SSL")], True),
    ([("sasl.mechanism", "PLAIN")], False), ([("security.protocol", "SASL_SSL")], False),
    ([("security.protocol", "SASL_PLAINTEXT"), ("sasl.mechanism", "PLAIN"), ("sasl.username", "a"),
      ("sasl.password", "b")], True),
    ([("security.protocol", "SASL_PLAINTEXT"), ("sasl.mechanism", "SCRAM-SHA-256"), ("sasl.username", "a"),
      ("sasl.password", "b")], True),
    ([("security.protocol", "SASL_PLAINTEXT"), ("sasl.mechanism", "SCRAM-SHA-1"), ("sasl.username", "a"),
      ("sasl.password", "b")], False),
    ([("ssl.ca.location", "/x")], False), ([("linger.ms", "5")], True)])   # ssl.* without SSL: refused
def test_own_connection_in_plaintext_tls_and_sasl(settings, expected):
    assert broker_wire.usable(argparse.Namespace(command_config=settings)) is expected


@pytest.fixture
def unused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_bootstrap_is_one_line(unused_port):
    wire = broker_wire.BrokerWire(f"127.0.0.1:{unused_port}", 5.0)
    with pytest.raises(CliError, match=rf"^cannot reach bootstrap server 127.0.0.1:{unused_port} \("):
        wire.connect()


def test_local_log_coverage_and_eligibility_columns():
    """KIP-1303: each replica's reported coverage and whether an election prefers it."""
    import time

    from tierlog.metadata.cluster_records import ReplicaLogCoverage
    from tierlog.metadata.leader_election import EligibilityThresholds
    now = int(time.time() * 1000)
    cov = (ReplicaLogCoverage(1, now - 7_200_000, 3 * 1024 * 1024), ReplicaLogCoverage(2, now - 5_000, 10))
    part = PartitionInfo(0, 1, 2, (1, 2, 3), (1, 2, 3), local_log=cov)
    wire = FakeWire()
    wire.image = MetadataImage("c", 1, wire.image.brokers, {"t": TopicInfo("t", (5).to_bytes(16, "big"), (part,))})
    wire.call = lambda key, body, version, what: (
        broker_describe(wire.image, body, 10, EligibilityThresholds(-1, 1000), now) if key == 75
        else {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Topics": []})
    [t] = describe_partitions(wire, ["t"])
    [p] = t["partitions"]
    assert p["local_log"] == [
        {"replica": 1, "start_timestamp": now - 7_200_000, "size_bytes": 3 * 1024 * 1024, "eligible": True},
        {"replica": 2, "start_timestamp": now - 5_000, "size_bytes": 10, "eligible": False},
        {"replica": 3, "start_timestamp": -1, "size_bytes": -1, "eligible": True}]
    cells = {h: cell(p) for h, cell in _columns(t["partitions"])}
    assert cells["LocalLog"].split(" ")[0] == "1:3.0MiB/2h" and cells["LocalLog"].endswith("3:?/?")
    assert cells["NotEligible"] == "2"
