"""`tierlog elect-leaders`: the JSON file, the outcome lines and the command line (no cluster needed)."""
import json

import pytest
from confluent_kafka import KafkaError

from tierlog.cli.cmd_elect_leaders import outcome, read_partitions_file
from tierlog.cli.errors import CliError
from tierlog.cli.main import main


def _file(tmp_path, content):
    path = tmp_path / "partitions.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_json_file_lists_partitions(tmp_path):
    path = _file(tmp_path, {"partitions": [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 3}]})
    assert read_partitions_file(path) == [("a", 0), ("b", 3)]


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ({"partition": []}, 'expected {"partitions"'),
    ([1, 2], 'expected {"partitions"'),
    ({"partitions": []}, "no partitions listed"),
    ({"partitions": [{"topic": "a"}]}, "partitions[0] must be"),
    ({"partitions": [{"topic": "a", "partition": -1}]}, "partitions[0] must be"),
    ({"partitions": [{"topic": "a", "partition": True}]}, "partitions[0] must be"),
    ({"partitions": [{"topic": "", "partition": 0}]}, "partitions[0] must be"),
    ({"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}, "a-0 is listed twice"),
])
def test_bad_json_file_is_one_clear_error(tmp_path, content, message):
    with pytest.raises(CliError) as err:
        read_partitions_file(_file(tmp_path, content))
    assert message in err.value.message and "\n" not in err.value.message


def test_missing_json_file(tmp_path):
    with pytest.raises(CliError, match="cannot read"):
        read_partitions_file(tmp_path / "nope.json")


def test_outcome_sorts_results_into_elected_not_needed_and_failed():
    results = {("t", 1): None, ("t", 0): None, ("u", 0): KafkaError(KafkaError.ELECTION_NOT_NEEDED),
               ("u", 1): KafkaError(KafkaError.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader is not available.")}
    elected, not_needed, failed = outcome(results)
    assert elected == ["t-0", "t-1"] and not_needed == ["u-0"]
    assert failed == [("u-1", "The preferred leader is not available. (PREFERRED_LEADER_NOT_AVAILABLE)")]


@pytest.mark.parametrize("argv, message", [
    (["--all-topic-partitions"], "one of the arguments --election-type --preferred --unclean is required"),
    (["--preferred"], "one of the arguments --topic --all-topic-partitions --path-to-json-file is required"),
    (["--preferred", "--unclean", "--all-topic-partitions"], "not allowed with argument"),
    (["--election-type", "sideways", "--all-topic-partitions"], "invalid choice"),
    (["--preferred", "--topic", "t", "--all-topic-partitions"], "not allowed with argument"),
    (["--preferred", "--all-topic-partitions", "--partition", "0"], "--partition needs --topic"),
    (["--preferred", "--topic", "t", "--partition", "-1"], "expected an integer >= 0"),
])
def test_bad_command_lines_are_usage_errors(capsys, argv, message):
    assert main(["elect-leaders", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tierlog: error: ") and message in err, err
