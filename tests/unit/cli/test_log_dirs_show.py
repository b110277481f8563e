"""`tierlog log-dirs describe`'s table marks a replica's future log (a move between log dirs under way)."""
from tierlog.cli.cmd_log_dirs import _show, describe_document


def test_a_future_log_is_marked_in_its_target_dir(capsys):
    part = {"PartitionIndex": 0, "PartitionSize": 10, "OffsetLag": 0, "IsFutureKey": False}
    answers = {2: {"Results": [
        {"ErrorCode": 0, "LogDir": "/d1", "Topics": [{"Name": "t", "Partitions": [part]}]},
        {"ErrorCode": 0, "LogDir": "/d2", "Topics": [{"Name": "t", "Partitions": [
            {**part, "PartitionSize": 4, "OffsetLag": 7, "IsFutureKey": True}]}]}]}}
    _show(describe_document(answers, None))
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    assert rows == [["2", "/d1", "online", "t-0", "10", "0"], ["2", "/d2", "online", "t-0 (future)", "4", "7"]]
