"""KIP-951 "Client" in tierlog's own client: which leader hints are taken, and what the cache keeps.

``leader_update`` is the rule alone; ``Cluster.apply_leader_hint`` applies it to
the cached leaders and brokers, and ``Cluster.refresh`` must not undo a taken
hint with a Metadata answer that carries an older leader epoch.
"""
import pytest

from tierlog.client.cluster import Cluster, PartitionInfo
from tierlog.client.leader_hint import LeaderUpdate, leader_update
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode

NOT_LEADER, FENCED = ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH
KNOWN = {1: ("h1", 9091), 2: ("h2", 9092)}
TOPIC_ID = bytes(range(16))


def _hint(leader, epoch):
    return {"LeaderId": leader, "LeaderEpoch": epoch}


def _endpoint(node, host="new-host", port=7777):
    return {"NodeId": node, "Host": host, "Port": port, "Rack": None}


# -- the rule -------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [NOT_LEADER, FENCED])
def test_a_complete_newer_hint_for_a_known_node_is_taken(code):
    assert leader_update(code, _hint(2, 6), 5, KNOWN) == LeaderUpdate(2, 6, None)


@pytest.mark.parametrize("hint", [_hint(-1, 6), _hint(2, -1), _hint(-1, -1), None, {}])
def test_an_incomplete_hint_is_not_taken(hint):
    assert leader_update(NOT_LEADER, hint, 5, KNOWN, [_endpoint(2)]) is None


@pytest.mark.parametrize("epoch", [4, 5])
def test_an_older_or_equal_epoch_is_not_taken(epoch):
    assert leader_update(NOT_LEADER, _hint(2, epoch), 5, KNOWN, [_endpoint(2)]) is None


def test_any_epoch_is_newer_than_an_unknown_one():
    assert leader_update(FENCED, _hint(1, 0), -1, KNOWN) == LeaderUpdate(1, 0, None)


def test_other_errors_carry_no_hint():
    for code in (ErrorCode.NONE, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.LEADER_NOT_AVAILABLE):
        assert leader_update(code, _hint(2, 6), 5, KNOWN) is None


def test_an_unknown_node_without_node_endpoints_is_not_taken():
    assert leader_update(NOT_LEADER, _hint(3, 6), 5, KNOWN) is None
    assert leader_update(NOT_LEADER, _hint(3, 6), 5, KNOWN, [_endpoint(4)]) is None   # someone else's


def test_an_unknown_node_given_in_node_endpoints_is_taken_with_its_endpoint():
    assert leader_update(NOT_LEADER, _hint(3, 6), 5, KNOWN, [_endpoint(4, port=1), _endpoint(3)]) == \
        LeaderUpdate(3, 6, ("new-host", 7777))


def test_node_endpoints_override_a_known_node():
    assert leader_update(NOT_LEADER, _hint(2, 6), 5, KNOWN, [_endpoint(2, "moved", 1)]) == \
        LeaderUpdate(2, 6, ("moved", 1))


# -- the cache ------------------------------------------------------------------------------------

@pytest.fixture
def cluster():
    c = Cluster("127.0.0.1:1")
    c.brokers = dict(KNOWN)
    c.partitions = {"t": {0: PartitionInfo(1, 5), 1: PartitionInfo(1, 5)}}
    c.topic_ids = {"t": TOPIC_ID}
    return c


def test_a_taken_hint_moves_the_leader_and_marks_the_topic_stale(cluster):
    assert cluster.apply_leader_hint(("t", 0), NOT_LEADER, _hint(2, 6), [])
    assert cluster.leader(("t", 0)) == 2 and cluster.leader_epoch(("t", 0)) == 6
    assert cluster.partitions["t"][1] == PartitionInfo(1, 5)           # only the partition the hint named
    assert cluster._stale == {"t"}


def test_a_hint_for_a_new_node_adds_its_endpoint(cluster):
    assert cluster.apply_leader_hint(("t", 0), FENCED, _hint(3, 6), [_endpoint(3)])
    assert cluster.brokers[3] == ("new-host", 7777) and cluster.leader(("t", 0)) == 3


@pytest.mark.parametrize("hint, endpoints", [(_hint(2, 5), []), (_hint(2, 4), []), (_hint(-1, 6), []),
                                             (_hint(3, 6), [])])
def test_a_hint_not_taken_leaves_the_cache_alone(cluster, hint, endpoints):
    assert not cluster.apply_leader_hint(("t", 0), NOT_LEADER, hint, endpoints)
    assert cluster.partitions["t"][0] == PartitionInfo(1, 5) and cluster.brokers == KNOWN
    assert not cluster._stale


class _MetadataAnswers:
    """A connection that answers each Metadata request with the next scripted answer (and counts them)."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked = 0

    def request(self, api_key, version, body):
        assert api_key == ApiKey.METADATA
        self.asked += 1
        return self.answers.pop(0)


def _metadata(leader, epoch, brokers=KNOWN, topic_id=TOPIC_ID):
    return {"Brokers": [{"NodeId": n, "Host": h, "Port": p} for n, (h, p) in brokers.items()],
            "Topics": [{"ErrorCode": 0, "Name": "t", "TopicId": topic_id, "Partitions": [
                {"PartitionIndex": 0, "LeaderId": leader, "LeaderEpoch": epoch}]}]}


def test_a_stale_metadata_answer_does_not_undo_a_taken_hint(cluster):
    assert cluster.apply_leader_hint(("t", 0), NOT_LEADER, _hint(3, 6), [_endpoint(3)])
    cluster._any = _MetadataAnswers(_metadata(1, 5), _metadata(3, 7, {**KNOWN, 3: ("h3", 9093)}))
    cluster.refresh_stale()
    assert cluster.partitions["t"][0] == PartitionInfo(3, 6)            # the broker had not caught up
    assert cluster.brokers[3] == ("new-host", 7777) and not cluster._stale
    cluster.refresh(["t"])
    assert cluster.partitions["t"][0] == PartitionInfo(3, 7) and cluster.brokers[3] == ("h3", 9093)


def test_a_recreated_topic_takes_the_metadata_answer_whatever_its_epochs(cluster):
    cluster._any = _MetadataAnswers(_metadata(2, 0, topic_id=bytes(16 * [7])))
    cluster.refresh(["t"])
    assert cluster.partitions["t"][0] == PartitionInfo(2, 0)


def test_refresh_stale_asks_nothing_without_a_taken_hint(cluster):
    cluster._any = conn = _MetadataAnswers()
    cluster.refresh_stale()
    assert conn.asked == 0
