"""`tierlog groups`: argument parsing and offset planning (no cluster needed)."""
import argparse
import time
from datetime import UTC, datetime

import pytest
from confluent_kafka import ConsumerGroupState

from tierlog.cli.cmd_groups import parse_states
from tierlog.cli.errors import UsageError
from tierlog.cli.groups_reset import strategy_of
from tierlog.cli.main import build_parser
from tierlog.cli.offset_reset_plan import (
    PartitionOffsets,
    Strategy,
    TopicSelection,
    parse_datetime_ms,
    parse_topic,
    plan,
)


def _p(committed, log_start=10, log_end=50, partition=0, topic="t", for_timestamp=None):
    return PartitionOffsets(topic, partition, committed, log_start, log_end, for_timestamp)


def _new(strategy, *partitions):
    return [r.new_offset for r in plan(strategy, list(partitions))]


# --- planning ---------------------------------------------------------------


def test_earliest_and_latest_are_the_log_bounds():
    assert _new(Strategy("to-earliest"), _p(30), _p(None, partition=1)) == [10, 10]
    assert _new(Strategy("to-latest"), _p(30), _p(None, partition=1)) == [50, 50]


@pytest.mark.parametrize("n, expected", [(25, 25), (10, 10), (50, 50), (3, 10), (-5, 10), (99, 50)])
def test_to_offset_is_clamped_to_the_log(n, expected):
    assert _new(Strategy("to-offset", n), _p(30)) == [expected]


@pytest.mark.parametrize("shift, expected", [(5, 35), (-5, 25), (-20, 10), (-1000, 10), (20, 50), (1000, 50), (0, 30)])
def test_shift_by_moves_the_committed_offset_within_the_log(shift, expected):
    assert _new(Strategy("shift-by", shift), _p(30)) == [expected]


def test_shift_by_a_committed_offset_already_outside_the_log_is_clamped():
    assert _new(Strategy("shift-by", 0), _p(5)) == [10]      # log start moved past the commit
    assert _new(Strategy("shift-by", 1), _p(70)) == [50]


def test_shift_by_without_a_committed_offset_is_an_error():
    with pytest.raises(ValueError, match="no committed offset"):
        plan(Strategy("shift-by", 1), [_p(30), _p(None, partition=1)])


def test_to_datetime_takes_the_offset_for_the_timestamp_else_the_log_end():
    strategy = Strategy("to-datetime", 1_700_000_000_000)
    assert _new(strategy, _p(30, for_timestamp=17)) == [17]
    assert _new(strategy, _p(30, for_timestamp=-1)) == [50]       # no record that late
    assert _new(strategy, _p(None, for_timestamp=None)) == [50]


def test_plan_is_sorted_and_keeps_the_current_offsets():
    resets = plan(Strategy("to-latest"), [_p(3, partition=2), _p(None, topic="a"), _p(7, partition=0)])
    assert [(r.topic, r.partition, r.current_offset, r.new_offset) for r in resets] == [
        ("a", 0, None, 50), ("t", 0, 7, 50), ("t", 2, 3, 50)]
    assert resets[0].as_json() == {"topic": "a", "partition": 0, "current_offset": None, "new_offset": 50,
                                   "log_start_offset": 10, "log_end_offset": 50}


# --- value parsers ------------------------------------------------------------


def test_topic_selection():
    assert parse_topic("orders") == TopicSelection("orders", None)
    assert parse_topic("orders:2,0,2") == TopicSelection("orders", (2, 0))
    for bad in ("", ":1", "t:", "t:a", "t:1,,2", "t:-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_topic(bad)


@pytest.mark.parametrize("text, expected", [
    ("2024-05-01T12:30:45.123Z", datetime(2024, 5, 1, 12, 30, 45, 123000, UTC)),
    ("2024-05-01T12:30:45.123+02:00", datetime(2024, 5, 1, 10, 30, 45, 123000, UTC)),
    ("2024-05-01T12:30:45.123-05:30", datetime(2024, 5, 1, 18, 0, 45, 123000, UTC)),
    ("2024-05-01T12:30:45Z", datetime(2024, 5, 1, 12, 30, 45, tzinfo=UTC)),
])
def test_datetime_with_a_zone(text, expected):
    assert parse_datetime_ms(text) == int(expected.timestamp() * 1000)


@pytest.fixture
def zone_plus_0530(monkeypatch):
    """The process's local zone is +05:30 (POSIX TZ names the offset west of UTC)."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_datetime_without_a_zone_is_local_time(zone_plus_0530):
    assert parse_datetime_ms("2024-05-01T12:30:45.123") == int(
        datetime(2024, 5, 1, 7, 0, 45, 123000, UTC).timestamp() * 1000)


@pytest.mark.parametrize("bad", ["yesterday", "2024-13-01T00:00:00.000", "1700000000000", ""])
def test_bad_datetime(bad):
    with pytest.raises(argparse.ArgumentTypeError, match="YYYY-MM-DDTHH:mm:SS.sss"):
        parse_datetime_ms(bad)


def test_states():
    assert parse_states("stable,Empty") == {ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY}
    assert parse_states("PreparingRebalance") == {ConsumerGroupState.PREPARING_REBALANCING}
    with pytest.raises(argparse.ArgumentTypeError, match="unknown group state 'Busy'"):
        parse_states("Stable,Busy")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_states(",")


# --- the command line ---------------------------------------------------------


def _parse(*argv):
    return build_parser().parse_args(["groups", *argv])


def test_reset_offsets_defaults_to_a_dry_run():
    args = _parse("reset-offsets", "--group", "g", "--topic", "t:1", "--topic", "u", "--shift-by", "-3")
    assert not args.execute
    assert args.topic == [TopicSelection("t", (1,)), TopicSelection("u", None)]
    assert strategy_of(args) == Strategy("shift-by", -3)
    assert _parse("reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--execute").execute


@pytest.mark.parametrize("argv, expected", [
    (("--to-earliest",), Strategy("to-earliest")),
    (("--to-latest",), Strategy("to-latest")),
    (("--to-offset", "42"), Strategy("to-offset", 42)),
    (("--to-datetime", "2024-05-01T00:00:00.000Z"), Strategy("to-datetime", 1714521600000)),
])
def test_reset_targets(argv, expected):
    assert strategy_of(_parse("reset-offsets", "--group", "g", "--all-topics", *argv)) == expected


@pytest.mark.parametrize("argv, message", [
    (("--group", "g", "--all-topics"), "one of the arguments --to-earliest"),
    (("--group", "g", "--to-latest"), "one of the arguments --topic --all-topics is required"),
    (("--group", "g", "--all-topics", "--topic", "t", "--to-latest"), "not allowed with argument"),
    (("--group", "g", "--all-topics", "--to-latest", "--to-earliest"), "not allowed with argument"),
    (("--group", "g", "--all-topics", "--to-latest", "--dry-run", "--execute"), "not allowed with argument"),
    (("--all-topics", "--to-latest"), "--group"),
    (("--group", "g", "--all-topics", "--to-offset", "x"), "invalid int value"),
    (("--group", "g", "--all-topics", "--to-datetime", "noon"), "bad date-time 'noon'"),
])
def test_bad_reset_command_lines_are_one_line_usage_errors(argv, message):
    with pytest.raises(UsageError) as caught:
        _parse("reset-offsets", *argv)
    assert message in caught.value.message and "\n" not in caught.value.message


def test_describe_views_are_exclusive_and_a_group_is_required():
    args = _parse("describe", "a", "b", "--members", "--json")
    assert args.groups == ["a", "b"] and args.members and not args.state and args.json
    with pytest.raises(UsageError, match="not allowed with argument"):
        _parse("describe", "a", "--members", "--state")
    with pytest.raises(UsageError, match="required"):
        _parse("describe")
    with pytest.raises(UsageError, match="required"):
        _parse("delete")
    assert _parse("list", "--state", "Empty").state == {ConsumerGroupState.EMPTY}
