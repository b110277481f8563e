"""Kafka's error-code table."""

import pytest

from tierlog.protocol import ErrorCode, describe, is_retriable


@pytest.mark.parametrize("name,code", [
    ("NONE", 0), ("UNKNOWN_SERVER_ERROR", -1), ("OFFSET_OUT_OF_RANGE", 1),
    ("CORRUPT_MESSAGE", 2), ("UNKNOWN_TOPIC_OR_PARTITION", 3), ("INVALID_FETCH_SIZE", 4),
    ("LEADER_NOT_AVAILABLE", 5), ("NOT_LEADER_OR_FOLLOWER", 6), ("REQUEST_TIMED_OUT", 7),
    ("MESSAGE_TOO_LARGE", 10), ("UNSUPPORTED_VERSION", 35), ("TOPIC_ALREADY_EXISTS", 36),
    ("FENCED_LEADER_EPOCH", 74), ("INVALID_RECORD", 87), ("SNAPSHOT_NOT_FOUND", 98),
    ("POSITION_OUT_OF_RANGE", 99), ("OFFSET_MOVED_TO_TIERED_STORAGE", 109),
    ("TRANSACTION_ABORTABLE", 120),
])
def test_kafka_names_and_codes(name, code):
    assert ErrorCode[name] == code


def test_table_is_complete_through_120():
    assert {int(e) for e in ErrorCode} >= set(range(-1, 121))


@pytest.mark.parametrize("code,retriable", [
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, True), (ErrorCode.FENCED_LEADER_EPOCH, True),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True), (ErrorCode.CORRUPT_MESSAGE, True),
    (ErrorCode.OFFSET_OUT_OF_RANGE, False), (ErrorCode.UNSUPPORTED_VERSION, False),
    (ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE, False), (ErrorCode.NONE, False), (12345, False),
])
def test_is_retriable(code, retriable):
    assert is_retriable(code) is retriable


def test_every_code_has_a_description():
    assert all(describe(code) for code in ErrorCode)
    assert len({describe(code) for code in ErrorCode}) == len(ErrorCode)
    assert "4242" in describe(4242)


def test_kafka_python_knows_no_code_we_lack_and_agrees_on_retriability():
    errors = pytest.importorskip("kafka.errors")
    pending, theirs = [errors.BrokerResponseError], {}
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if isinstance(getattr(cls, "errno", None), int):
            theirs[cls.errno] = bool(cls.retriable)
    assert set(theirs) <= {int(e) for e in ErrorCode}
    # Kafka's CorruptRecordException is a RetriableException; kafka-python
    # marks it non-retriable. We follow Kafka.
    disagree = {code for code, retriable in theirs.items() if retriable != is_retriable(code)}
    assert disagree == {ErrorCode.CORRUPT_MESSAGE}
