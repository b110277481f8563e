"""`tierlog reassign`: plan files, proposals, verdicts and the command line (no cluster needed)."""
import json
import random

import pytest

from tierlog.cli.errors import CliError
from tierlog.cli.main import main
from tierlog.cli.reassign_plan import (
    COMPLETE,
    FAILED,
    IN_PROGRESS,
    parse_plan,
    parse_plan_dirs,
    parse_topics,
    plan_text,
    propose,
    read_json,
    status,
)
from tierlog.controller.placement import UsableBroker


def _file(tmp_path, content, name="plan.json"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_plan_round_trip():
    data = {"version": 1, "partitions": [{"topic": "b", "partition": 1, "replicas": [5, 4]},
                                         {"topic": "a", "partition": 0, "replicas": [4], "log_dirs": ["any"]}]}
    plan = parse_plan(data, "p")
    assert plan == {("b", 1): (5, 4), ("a", 0): (4,)}
    assert json.loads(plan_text(plan)) == {"version": 1, "partitions": [
        {"topic": "a", "partition": 0, "replicas": [4]}, {"topic": "b", "partition": 1, "replicas": [5, 4]}]}
    assert parse_topics({"version": 1, "topics": [{"topic": "a"}, {"topic": "b"}]}, "t") == ["a", "b"]


@pytest.mark.parametrize("content, message", [
    ([1], 'expected {"version": 1, "partitions"'),
    ({"version": 2, "partitions": [{"topic": "a", "partition": 0, "replicas": [1]}]}, "unsupported version 2"),
    ({"partitions": []}, "no partitions listed"),
    ({"partitions": [{"topic": "a", "partition": 0}]}, "partitions[0] must be"),
    ({"partitions": [{"topic": "a", "partition": -1, "replicas": [1]}]}, "partitions[0] must be"),
    ({"partitions": [{"topic": "a", "partition": 0, "replicas": [True]}]}, "partitions[0] must be"),
    ({"partitions": [{"topic": "a", "partition": 0, "replicas": []}]}, "a-0 has an empty replica list"),
    ({"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 1]}]}, "a-0 lists a broker twice"),
    ({"partitions": [{"topic": "a", "partition": 0, "replicas": [1]}] * 2}, "a-0 is listed twice"),
    ({"partitions": [{"topic": "a", "partition": 0, "replicas": [1], "log_dirs": ["d"]}]}, "log_dirs"),
    ({"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d"]}]}, "log_dirs"),
])
def test_bad_plan_is_one_clear_error(content, message):
    with pytest.raises(CliError) as err:
        parse_plan(content, "plan.json")
    assert message in err.value.message and "\n" not in err.value.message


def test_log_dirs_name_replicas_to_move():
    plan, dirs = parse_plan_dirs({"partitions": [
        {"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d2", "any"]},
        {"topic": "b", "partition": 3, "replicas": [2], "log_dirs": ["any"]}]}, "plan.json")
    assert plan == {("a", 0): (1, 2), ("b", 3): (2,)}
    assert dirs == {("a", 0, 1): "/d2"}


def test_verify_judges_each_replica_log_dir_from_its_current_and_future_logs():
    from tierlog.cli.cmd_reassign import _dir_line, _dir_status
    assert _dir_status("/d2", "/d2", None) == "complete"
    assert _dir_status("/d2", "/d1", "/d2") == "in progress"
    assert _dir_status("/d2", "/d1", None) == "failed" and _dir_status("/d2", None, None) == "failed"
    assert _dir_line(("a", 0, 1), "in progress", "/d2", "/d1", "/d2") == \
        "Reassignment of replica a-0 on broker 1 from /d1 to /d2 is still in progress."
    assert "in no online log directory" in _dir_line(("a", 0, 1), "failed", "/d2", None, None)


def test_cancel_asks_each_replica_still_moving_to_stay_in_its_current_dir(monkeypatch):
    from tierlog.cli import cmd_reassign, reassign_log_dirs
    places = {("a", 0, 1): ("/d1", "/d2"), ("a", 1, 1): ("/d2", None), ("b", 0, 2): ("/d1", "/d2")}
    asked = {}
    monkeypatch.setattr(reassign_log_dirs, "broker_addresses", lambda wire: {1: "h:1", 2: "h:2"})
    monkeypatch.setattr(reassign_log_dirs, "states", lambda args, addresses, dirs, timeout: places)
    monkeypatch.setattr(reassign_log_dirs, "alter", lambda args, addresses, stay, timeout: (
        asked.update(stay), {("b", 0, 2): "KAFKA_STORAGE_ERROR"})[1])
    wire = type("Wire", (), {"remaining_s": lambda self: 5.0})()
    stopped, refused = cmd_reassign._cancel_log_dir_moves(None, wire, dict.fromkeys(places, "/d2"))
    assert asked == {("a", 0, 1): "/d1", ("b", 0, 2): "/d1"}      # the one already there is left alone
    assert stopped == [("a", 0, 1)] and refused == {("b", 0, 2): "KAFKA_STORAGE_ERROR"}


def test_unreadable_files(tmp_path):
    with pytest.raises(CliError, match="not valid JSON"):
        read_json(_file(tmp_path, "{nope"))
    with pytest.raises(CliError, match="cannot read"):
        read_json(tmp_path / "missing.json")
    with pytest.raises(CliError, match=r"topics\[0\] must be"):
        parse_topics({"topics": [{"name": "a"}]}, "t")


def test_propose_keeps_each_topics_replication_factor_on_the_given_brokers():
    current = {("a", 0): (1, 2), ("a", 1): (2, 3), ("b", 0): (1, 2, 3)}
    brokers = [UsableBroker(4), UsableBroker(5), UsableBroker(6)]
    proposed = propose(current, brokers, random.Random(1))
    assert set(proposed) == set(current)
    for key, replicas in proposed.items():
        assert len(replicas) == len(current[key]) and set(replicas) <= {4, 5, 6}
        assert len(set(replicas)) == len(replicas)
    with pytest.raises(CliError, match="cannot place topic 'b'"):
        propose(current, brokers[:2], random.Random(1))


def test_verify_verdicts():
    assert status((4, 5), (4, 5), ongoing=False) == COMPLETE
    assert status((4, 5), (4, 5, 2, 3), ongoing=True) == IN_PROGRESS
    assert status((4, 5), (2, 3), ongoing=False) == FAILED
    assert status((4, 5), None, ongoing=False) == FAILED
    assert status((4, 5), (4, 5, 2, 3), ongoing=False) == IN_PROGRESS     # this broker's metadata is behind
    assert status((4, 5), (5, 4), ongoing=False) == FAILED


def test_command_line_errors_are_one_line(tmp_path, capsys):
    assert main(["reassign", "--execute"]) == 2
    assert "--execute needs --reassignment-json-file" in capsys.readouterr().err
    assert main(["reassign", "--generate", "--broker-list", "1,2"]) == 2
    assert "--topics-to-move-json-file" in capsys.readouterr().err
    assert main(["reassign", "--generate", "--broker-list", "1,x"]) == 2
    assert "expected broker ids" in capsys.readouterr().err
    bad = _file(tmp_path, "{bad")
    assert main(["reassign", "--execute", "--reassignment-json-file", str(bad),
                 "--bootstrap-server", "127.0.0.1:1", "--timeout", "2"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tierlog: error: ")
    assert main(["reassign", "--list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach bootstrap server" in err[0]


class _NoWire:
    """Stands in for BrokerWire: `_cluster` is replaced, so nothing is sent."""

    def __init__(self, *args):
        pass

    @classmethod
    def from_args(cls, args):
        return cls()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_generate_refuses_a_replication_factor_above_the_broker_list_before_printing(tmp_path, capsys,
                                                                                     monkeypatch):
    from tierlog.cli import cmd_reassign

    brokers = [UsableBroker(4), UsableBroker(5), UsableBroker(6)]
    current = {("orders", 0): (4, 5, 6), ("orders", 1): (5, 6, 4), ("logs", 0): (4,)}
    monkeypatch.setattr(cmd_reassign, "BrokerWire", _NoWire)
    monkeypatch.setattr(cmd_reassign, "_cluster", lambda wire: (brokers, current))
    topics = _file(tmp_path, {"version": 1, "topics": [{"topic": "logs"}, {"topic": "orders"}]}, "topics.json")
    args = ["reassign", "--generate", "--topics-to-move-json-file", str(topics)]
    assert main([*args, "--broker-list", "4,5"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("tierlog: error: cannot place topic 'orders': its replication factor 3 needs 3 brokers "
                   "from --broker-list, got 2 (4,5)\n")
    assert main([*args, "--broker-list", "6,5,4"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("Current partition replica assignment\n")
