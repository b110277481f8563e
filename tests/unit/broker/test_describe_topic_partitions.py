"""DescribeTopicPartitions (75) from a metadata image: Kafka's selection and paging rules."""
from hypothesis import given, settings
from hypothesis import strategies as st

from tierlog.broker.apis.api_75_describe_topic_partitions import TopicAccess, describe
from tierlog.metadata.image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo
from tierlog.protocol.errors import ErrorCode

UNKNOWN, INVALID_TOPIC, INVALID_REQUEST = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                           ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.INVALID_REQUEST)


def _topic(name: str, count: int, n: int = 1) -> TopicInfo:
    parts = tuple(PartitionInfo(i, 1, 3 + i, (1, 2, 3), (1, 2, 3), elr=(), last_known_elr=())
                  for i in range(count))
    return TopicInfo(name, n.to_bytes(16, "big"), parts)


def _image(topics=(), brokers=(1, 2, 3), fenced=()) -> MetadataImage:
    infos = {b: BrokerInfo(b, "h", 9000 + b, fenced=b in fenced) for b in brokers}
    return MetadataImage("c", 1, infos, {t.name: t for t in topics})


def _req(names=(), limit=2000, cursor=None) -> dict:
    return {"Topics": [{"Name": n} for n in names], "ResponsePartitionLimit": limit,
            "Cursor": None if cursor is None else {"TopicName": cursor[0], "PartitionIndex": cursor[1]}}


def _pairs(response) -> list[tuple[str, int]]:
    return [(t["Name"], p["PartitionIndex"]) for t in response["Topics"] for p in t["Partitions"]]


def _cursor(response):
    c = response["NextCursor"]
    return None if c is None else (c["TopicName"], c["PartitionIndex"])


def test_empty_topics_means_every_topic_sorted_by_name():
    image = _image([_topic("b", 1, 2), _topic("a", 2, 1)])
    r = describe(image, _req(), 2000)
    assert [t["Name"] for t in r["Topics"]] == ["a", "b"]
    assert _pairs(r) == [("a", 0), ("a", 1), ("b", 0)] and r["NextCursor"] is None
    assert r["Topics"][0]["TopicId"] == (1).to_bytes(16, "big")


def test_partition_fields_come_from_the_image():
    p = PartitionInfo(0, 2, 7, (1, 2, 3, 4), (2,), elr=(3,), last_known_elr=(1,))
    image = _image([TopicInfo("t", bytes(16), (p,))], brokers=(1, 2, 3), fenced=(1,))
    [part] = describe(image, _req(["t"]), 2000)["Topics"][0]["Partitions"]
    assert part == {"ErrorCode": 0, "PartitionIndex": 0, "LeaderId": 2, "LeaderEpoch": 7,
                    "ReplicaNodes": [1, 2, 3, 4], "IsrNodes": [2], "EligibleLeaderReplicas": [3],
                    "LastKnownElr": [1], "OfflineReplicas": [1, 4],   # 1 fenced, 4 not registered
                    "LocalLogCoverage": [{"BrokerId": b, "LocalLogStartTimestamp": -1, "LocalLogSizeBytes": -1,
                                          "Eligible": True} for b in (1, 2, 3, 4)]}


def test_local_log_coverage_and_eligibility():
    """KIP-1303: reported coverage per replica; eligible under the effective thresholds
    (topic override > cluster-wide dynamic > the broker's default); unknown is eligible."""
    from tierlog.metadata.cluster_records import ReplicaLogCoverage
    from tierlog.metadata.leader_election import EligibilityThresholds
    cov = (ReplicaLogCoverage(1, 0, 5000), ReplicaLogCoverage(2, 9_000, 10))
    p = PartitionInfo(0, 1, 1, (1, 2, 3), (1, 2, 3), local_log=cov)
    image = _image([TopicInfo("t", bytes(16), (p,))], brokers=(1, 2, 3))

    def eligible(defaults, topic_configs=None):
        t = TopicInfo("t", bytes(16), (p,), topic_configs or {})
        part = describe(image.with_topic(t), _req(["t"]), 2000, defaults, 10_000)["Topics"][0]["Partitions"][0]
        return {c["BrokerId"]: c["Eligible"] for c in part["LocalLogCoverage"]}, part["LocalLogCoverage"]

    flags, entries = eligible(EligibilityThresholds(-1, 1000))
    assert flags == {1: True, 2: False, 3: True}
    assert entries[1] == {"BrokerId": 2, "LocalLogStartTimestamp": 9_000, "LocalLogSizeBytes": 10, "Eligible": False}
    assert eligible(EligibilityThresholds())[0] == {1: True, 2: True, 3: True}
    # a topic override wins over the broker default: 2 covers 1 s of local log
    assert eligible(EligibilityThresholds(-1, 1000),
                    {"leader.election.eligible.local.log.bytes": "-1",
                     "leader.election.eligible.local.log.ms": "500"})[0] == {1: True, 2: True, 3: True}


def test_empty_elr_is_null_and_an_unregistered_leader_is_none():
    p = PartitionInfo(0, 9, 1, (9,), (9,))
    [part] = describe(_image([TopicInfo("t", bytes(16), (p,))]), _req(), 2000)["Topics"][0]["Partitions"]
    assert part["EligibleLeaderReplicas"] is None and part["LastKnownElr"] is None
    assert part["LeaderId"] == -1 and part["OfflineReplicas"] == [9]


def test_named_unknown_and_illegal_topics_get_errors_in_name_order():
    r = describe(_image([_topic("b", 1)]), _req(["zz", "b", "a!"]), 2000)
    assert [(t["Name"], t["ErrorCode"]) for t in r["Topics"]] == [("a!", INVALID_TOPIC), ("b", 0), ("zz", UNKNOWN)]
    assert r["Topics"][0]["TopicId"] == bytes(16) and r["Topics"][0]["Partitions"] == []


def test_unknown_topics_take_none_of_the_limit():
    r = describe(_image([_topic("b", 2), _topic("d", 1)]), _req(["a", "b", "c", "d"], limit=3), 2000)
    assert _pairs(r) == [("b", 0), ("b", 1), ("d", 0)] and r["NextCursor"] is None


def test_a_topic_cut_short_names_its_first_partition_left_out():
    r = describe(_image([_topic("a", 5)]), _req(limit=2), 2000)
    assert _pairs(r) == [("a", 0), ("a", 1)] and _cursor(r) == ("a", 2)
    r = describe(_image([_topic("a", 5)]), _req(limit=2, cursor=("a", 2)), 2000)
    assert _pairs(r) == [("a", 2), ("a", 3)] and _cursor(r) == ("a", 4)


def test_limit_used_up_at_a_topic_end_points_at_the_next_topic_even_unknown():
    r = describe(_image([_topic("a", 2)]), _req(["a", "b"], limit=2), 2000)
    assert _pairs(r) == [("a", 0), ("a", 1)] and _cursor(r) == ("b", 0)
    assert [t["Name"] for t in r["Topics"]] == ["a"]
    r = describe(_image([_topic("a", 2)]), _req(["a", "b"], limit=2, cursor=("b", 0)), 2000)
    assert [(t["Name"], t["ErrorCode"]) for t in r["Topics"]] == [("b", UNKNOWN)] and r["NextCursor"] is None


def test_last_topic_exactly_filling_the_limit_leaves_no_cursor():
    r = describe(_image([_topic("a", 2)]), _req(limit=2), 2000)
    assert _pairs(r) == [("a", 0), ("a", 1)] and r["NextCursor"] is None


def test_the_broker_limit_caps_the_request_and_the_floor_is_one():
    image = _image([_topic("a", 10)])
    assert len(_pairs(describe(image, _req(limit=5000), 3))) == 3
    assert len(_pairs(describe(image, _req(limit=0), 2000))) == 1
    assert len(_pairs(describe(image, _req(limit=-7), 2000))) == 1


def test_cursor_skips_earlier_topics_and_applies_only_to_its_own_topic():
    image = _image([_topic("a", 3), _topic("b", 3), _topic("c", 3)])
    r = describe(image, _req(cursor=("b", 2)), 2000)
    assert _pairs(r) == [("b", 2), ("c", 0), ("c", 1), ("c", 2)]


def test_cursor_of_a_deleted_topic_starts_the_next_topic_at_zero():
    image = _image([_topic("a", 3), _topic("c", 3)])
    assert _pairs(describe(image, _req(cursor=("b", 2)), 2000)) == [("c", 0), ("c", 1), ("c", 2)]


def test_cursor_past_the_last_partition_answers_the_topic_without_partitions():
    r = describe(_image([_topic("a", 2)]), _req(["a"], cursor=("a", 5)), 2000)
    assert [(t["Name"], t["Partitions"]) for t in r["Topics"]] == [("a", [])] and r["NextCursor"] is None


def test_bad_cursor_is_invalid_request_for_every_named_topic():
    image = _image([_topic("a", 2), _topic("b", 2)])
    r = describe(image, _req(["a", "b"], cursor=("c", 0)), 2000)
    assert [(t["Name"], t["ErrorCode"], t["Partitions"]) for t in r["Topics"]] == [
        ("a", INVALID_REQUEST, []), ("b", INVALID_REQUEST, [])]
    r = describe(image, _req(["a"], cursor=("a", -1)), 2000)
    assert [t["ErrorCode"] for t in r["Topics"]] == [INVALID_REQUEST]
    assert describe(image, _req(cursor=("a", -1)), 2000)["Topics"] == []


def test_duplicate_names_are_answered_once():
    r = describe(_image([_topic("a", 1)]), _req(["a", "a"]), 2000)
    assert _pairs(r) == [("a", 0)]


@settings(max_examples=200, deadline=None)
@given(counts=st.lists(st.integers(0, 6), min_size=0, max_size=5), limit=st.integers(1, 8),
       cap=st.integers(1, 8), extra=st.lists(st.sampled_from(["a0", "m", "zz"]), max_size=2))
def test_following_next_cursor_visits_every_partition_once_in_order(counts, limit, cap, extra):
    topics = [_topic(f"t{i}", c, i + 1) for i, c in enumerate(counts)]
    image = _image(topics)
    expected = [(t.name, p.partition) for t in sorted(topics, key=lambda t: t.name) for p in t.partitions]
    names = [t.name for t in topics] + extra if extra else []
    seen, cursor = [], None
    for _ in range(len(expected) + len(names) + 2):
        r = describe(image, _req(names, limit, cursor), cap)
        page = _pairs(r)
        assert len(page) <= min(limit, cap)
        seen += page
        cursor = _cursor(r)
        if cursor is None:
            break
        assert page or r["Topics"], "a page with a cursor must make progress"
    assert cursor is None and seen == expected


def test_acls_hide_topics_and_give_the_operations():
    access = TopicAccess(lambda name: name != "secret", lambda name: 1 << 8)
    image = _image([_topic("open", 1, 1), _topic("secret", 1, 2)])
    everything = describe(image, _req(), 2000, access=access)
    assert [t["Name"] for t in everything["Topics"]] == ["open"]
    assert everything["Topics"][0]["TopicAuthorizedOperations"] == 1 << 8
    named = describe(image, _req(["secret", "missing-but-refused"]), 2000,
                     access=TopicAccess(lambda name: False, lambda name: 0))
    assert [t["ErrorCode"] for t in named["Topics"]] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED] * 2
