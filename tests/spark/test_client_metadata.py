"""The client while a topic is being created: LEADER_NOT_AVAILABLE, partitions without leaders.

A scripted broker (no network): Metadata answers go from "topic being created"
to "partitions without leaders" to "every partition led", as a broker answers
while the controller creates a topic.
"""
import pytest

from tierlog.client import cluster as cluster_mod
from tierlog.client.cluster import Cluster, KafkaError
from tierlog.protocol import ApiKey

BROKERS = [{"NodeId": 4, "Host": "127.0.0.1", "Port": 1}, {"NodeId": 5, "Host": "127.0.0.1", "Port": 2}]


def _topic(name, leaders, error=0):
    return {"ErrorCode": error, "Name": name, "Partitions": [
        {"ErrorCode": 0, "PartitionIndex": p, "LeaderId": lead, "LeaderEpoch": 0} for p, lead in enumerate(leaders)]}


class ScriptedBroker:
    """Answers Metadata from a script (the last answer repeats) and ListOffsets with offset 100 + partition."""

    def __init__(self, metadata):
        self.metadata = list(metadata)
        self.metadata_requests = 0
        self.list_offsets_to: list[int] = []

    def connection(self, node_id):
        broker = self

        class Conn:
            def request(self, api_key, version, body):
                if api_key == ApiKey.METADATA:
                    broker.metadata_requests += 1
                    topics = broker.metadata[0] if len(broker.metadata) == 1 else broker.metadata.pop(0)
                    return {"Brokers": BROKERS, "Topics": topics}
                if api_key == ApiKey.API_VERSIONS:
                    return {"ErrorCode": 0, "ApiKeys": [{"ApiKey": ApiKey.LIST_OFFSETS, "MinVersion": 1,
                                                         "MaxVersion": 11}]}
                assert api_key == ApiKey.LIST_OFFSETS
                broker.list_offsets_to.append(node_id)
                return {"Topics": [{"Name": t["Name"], "Partitions": [
                    {"PartitionIndex": p["PartitionIndex"], "ErrorCode": 0, "Offset": 100 + p["PartitionIndex"]}
                    for p in t["Partitions"]]} for t in body["Topics"]]}

            def close(self):
                pass

        return Conn()


@pytest.fixture
def scripted(monkeypatch):
    def make(*metadata, retry_timeout_s=5.0):
        broker = ScriptedBroker(metadata)
        monkeypatch.setattr(cluster_mod, "BlockingConnection",
                            lambda host, port, **kw: broker.connection({1: 4, 2: 5}.get(port, -99)))
        monkeypatch.setattr(cluster_mod.time, "sleep", lambda s: None)
        c = Cluster("127.0.0.1:1", retry_timeout_s=retry_timeout_s)
        return c, broker
    return make


def test_partitions_of_waits_while_the_topic_is_being_created(scripted):
    c, broker = scripted([_topic("events", [], error=5)], [_topic("events", [], error=5)],
                         [_topic("events", [4, 5, 4])])
    assert c.partitions_of(["events"]) == [("events", 0), ("events", 1), ("events", 2)]
    assert broker.metadata_requests == 3


def test_partitions_of_leaves_out_unknown_topics_at_once(scripted):
    c, broker = scripted([_topic("missing", [], error=3)])
    assert c.partitions_of(["missing"]) == []
    assert broker.metadata_requests == 1


def test_list_offsets_waits_for_leaders(scripted):
    c, broker = scripted([_topic("events", [4, -1, -1])], [_topic("events", [4, -1, 5])],
                         [_topic("events", [4, 5, 5])])
    tps = c.partitions_of(["events"])
    assert tps == [("events", 0), ("events", 1), ("events", 2)]
    assert c.list_offsets(tps, -1) == {("events", 0): 100, ("events", 1): 101, ("events", 2): 102}
    assert set(broker.list_offsets_to) == {4, 5}


def test_no_leader_past_the_retry_budget_is_a_kafka_error(scripted):
    c, _ = scripted([_topic("events", [-1])], retry_timeout_s=0.0)
    with pytest.raises(KafkaError, match="LEADER_NOT_AVAILABLE|no leader"):
        c.list_offsets(c.partitions_of(["events"]), -1)


def test_wait_for_leaders(scripted):
    c, broker = scripted([_topic("events", [], error=5)], [_topic("events", [4])], [_topic("events", [4, -1, 5])],
                         [_topic("events", [4, 5, 5])])
    c.wait_for_leaders({"events": 3}, timeout_s=5)
    assert broker.metadata_requests == 4
    c2, _ = scripted([_topic("events", [4, -1])])
    with pytest.raises(KafkaError, match="events-1: no leader"):
        c2.wait_for_leaders({"events": 2}, timeout_s=0)


def test_fetches_bigger_than_the_default_bound_raise_it_as_librdkafka_does():
    from tierlog.client import receive_message_max_bytes_for
    from tierlog.net.request_pipeline import RECEIVE_MESSAGE_MAX_BYTES
    assert receive_message_max_bytes_for(8 * 1024 * 1024) == RECEIVE_MESSAGE_MAX_BYTES
    assert receive_message_max_bytes_for(RECEIVE_MESSAGE_MAX_BYTES) == RECEIVE_MESSAGE_MAX_BYTES + 512
