"""`tierlog transactions`: abort names one producer, checked before any connection; times print as UTC times."""
import pytest

from tierlog.cli.main import main
from tierlog.cli.render import epoch_ms_text


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


def test_timestamps_print_as_utc_times():
    assert epoch_ms_text(1_764_383_401_250) == "2025-11-29T02:30:01.250Z"
    assert epoch_ms_text(-1) == "-"      # Kafka's "none" (no transaction under way)
