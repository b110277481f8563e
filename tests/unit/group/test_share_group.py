"""A share group's membership and the simple share assignor (``group/share_group.py``)."""
from tierlog.group.consumer_group import TopicsView
from tierlog.group.share_group import ShareGroup, simple_assign
from tierlog.protocol.errors import ErrorCode

T1, T2 = b"\x01" * 16, b"\x02" * 16
TOPICS = TopicsView({"t": (T1, 4), "u": (T2, 1)})


def test_simple_assignor_deals_partitions_and_shares_them_past_one_each():
    two = simple_assign({"a": ("t",), "b": ("t",)}, TOPICS)
    assert two == {"a": {T1: frozenset({0, 2})}, "b": {T1: frozenset({1, 3})}}
    six = simple_assign({m: ("t",) for m in "abcdef"}, TOPICS)
    assert all(len(a[T1]) == 1 for a in six.values())                  # every member gets one
    assert set().union(*(a[T1] for a in six.values())) == {0, 1, 2, 3}  # every partition read
    mixed = simple_assign({"a": ("t", "u"), "b": ("u",), "c": ("missing",)}, TOPICS)
    assert mixed == {"a": {T1: frozenset(range(4)), T2: frozenset({0})}, "b": {T2: frozenset({0})}, "c": {}}


def test_join_heartbeat_and_leave_move_the_epochs():
    g = ShareGroup("g", session_timeout_ms=1000)
    a = g.heartbeat("a", 0, ["t"], TOPICS, 0)
    assert (a.error, a.member_id, a.member_epoch, a.assignment) == (ErrorCode.NONE, "a", 1, {T1: frozenset(range(4))})
    again = g.heartbeat("a", 1, None, TOPICS, 10)
    assert (again.member_epoch, again.assignment) == (1, None)          # unchanged: not sent again
    b = g.heartbeat("b", 0, ["t"], TOPICS, 20)
    assert (b.member_epoch, b.assignment) == (2, {T1: frozenset({1, 3})})
    a2 = g.heartbeat("a", 1, None, TOPICS, 30)
    assert (a2.member_epoch, a2.assignment) == (2, {T1: frozenset({0, 2})})   # no revocation step
    assert g.heartbeat("a", 1, None, TOPICS, 40).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert g.heartbeat("zz", 2, None, TOPICS, 40).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert g.heartbeat("b", -1, None, TOPICS, 50).member_epoch == -1
    assert g.heartbeat("a", 2, None, TOPICS, 60).assignment == {T1: frozenset(range(4))}
    assert g.describe({T1: "t"})["Members"][0]["Assignment"] == {
        "TopicPartitions": [{"TopicId": T1, "TopicName": "t", "Partitions": [0, 1, 2, 3]}]}


def test_bad_heartbeats_get_kafkas_errors():
    g = ShareGroup("g", max_size=1)
    assert g.heartbeat("a", 0, None, TOPICS, 0).error == ErrorCode.INVALID_REQUEST     # a join names its topics
    assert g.heartbeat("a", -2, ["t"], TOPICS, 0).error == ErrorCode.INVALID_REQUEST
    assert g.heartbeat("a", 0, ["t"], TOPICS, 0).error == ErrorCode.NONE
    assert g.heartbeat("b", 0, ["t"], TOPICS, 0).error == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert g.heartbeat("", 0, ["t"], TopicsView({}), 0).error == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_a_silent_member_expires_at_its_session_deadline():
    g = ShareGroup("g", session_timeout_ms=1000)
    g.heartbeat("a", 0, ["t"], TOPICS, 0)
    g.heartbeat("b", 0, ["t"], TOPICS, 500)
    assert g.next_deadline_ms() == 1000
    assert g.expire(999) == [] and g.expire(1000) == ["a"]
    assert g.heartbeat("b", 2, None, TOPICS, 1100).assignment == {T1: frozenset(range(4))}
    assert g.expire(2500) == ["b"] and g.state == "Empty"


def test_a_grown_topic_is_a_new_assignment():
    g = ShareGroup("g")
    g.heartbeat("a", 0, ["t"], TOPICS, 0)
    grown = TopicsView({"t": (T1, 6)}, version=1)
    hb = g.heartbeat("a", 1, None, grown, 10)
    assert (hb.member_epoch, hb.assignment) == (2, {T1: frozenset(range(6))})
