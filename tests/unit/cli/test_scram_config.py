"""Kafka's textual SCRAM credential form (kafka-configs.sh --add-config, kafka-storage.sh --add-scram)."""
import pytest

from tierlog.cli.errors import CliError
from tierlog.cli.scram_config import parse_scram_config, parse_scram_mechanisms
from tierlog.metadata.scram import ScramMechanism


def test_entries():
    entries = parse_scram_config('SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password="a,b]c"]',
                                 "--add-config", need_name=False)
    assert [(e.mechanism, e.name, e.password, e.iterations) for e in entries] == [
        (ScramMechanism.SCRAM_SHA_256, None, "alice-secret", 8192), (ScramMechanism.SCRAM_SHA_512, None, "a,b]c", 4096)]
    admin, = parse_scram_config("SCRAM-SHA-512=[name=admin,password=pw-42]", "--add-scram", need_name=True)
    assert (admin.name, admin.password) == ("admin", "pw-42") and "pw-42" not in repr(admin)
    assert parse_scram_mechanisms("SCRAM-SHA-256,SCRAM-SHA-512", "--delete-config") == list(ScramMechanism)


@pytest.mark.parametrize(("text", "need_name", "message"), [
    ("SCRAM-SHA-1=[password=x]", False, "unknown SCRAM mechanism"),
    ("SCRAM-SHA-512=[password=x,iterations=4000]", False, "iterations must be 4096..16384"),
    ("SCRAM-SHA-512=[iterations=4096]", False, "needs password"),
    ("SCRAM-SHA-512=[password=x]", True, "needs name=USER"),
    ("SCRAM-SHA-512=[name=a,password=x]", False, "--entity-name"),
    ("SCRAM-SHA-512=password=x", False, r"want MECHANISM=\["),
    ("SCRAM-SHA-512=[password=\"x]", False, "unbalanced"),
    ("SCRAM-SHA-512=[salt=x,password=secret-value]", False, "want name|password|iterations"),
])
def test_errors_are_one_line_without_the_password(text, need_name, message):
    with pytest.raises(CliError, match=message) as e:
        parse_scram_config(text, "--add-config", need_name)
    assert "secret-value" not in str(e.value)
