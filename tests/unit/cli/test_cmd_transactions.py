"""`tierlog transactions abort`: which producer it names, checked before any connection."""
import pytest

from tierlog.cli.main import main


@pytest.mark.parametrize("argv, message", [
    (["--start-offset", "4", "--producer-id", "7"], "not both"),
    (["--producer-id", "7", "--producer-epoch", "0"], "all of --producer-id, --producer-epoch and --coordinator-epoch"),
    ([], "abort needs --start-offset"),
])
def test_abort_names_one_producer(capsys, argv, message):
    assert main(["transactions", "abort", "--topic", "t", "--partition", "0", "--bootstrap-server", "127.0.0.1:1",
                 *argv]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tierlog: error: ") and message in err, err
