"""`tierlog configs --entity-type client-metrics`: kafka-configs.sh's --add-config form and the
one-line refusals before anything is sent."""

import argparse

import pytest

from tierlog.cli.cmd_client_metrics import parse_add_config, run_client_metrics
from tierlog.cli.errors import CliError


def test_lists_go_in_brackets():
    assert parse_add_config(["metrics=[org.apache.kafka.producer., org.apache.kafka.consumer.],interval.ms=1000",
                             "match=[client_id=a.*,client_software_name=librdkafka]"]) == {
        "metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.", "interval.ms": "1000",
        "match": "client_id=a.*,client_software_name=librdkafka"}
    assert parse_add_config(["metrics=*"]) == {"metrics": "*"}


@pytest.mark.parametrize("text", ["metrics=[a,b", "interval.ms", "=5"])
def test_malformed_add_config(text):
    with pytest.raises(CliError):
        parse_add_config([text])


def _args(**kw):
    base = {"entity_type": ["client-metrics"], "entity_names": [], "describe": False, "alter": False,
            "add_config": [], "delete_config": []}
    return argparse.Namespace(**(base | kw))


@pytest.mark.parametrize(("args", "message"), [
    (_args(entity_type=["client-metrics", "users"]), "goes alone"),
    (_args(entity_names=["a", "b"], describe=True), "one --entity-name"),
    (_args(), "one of --describe or --alter"),
    (_args(alter=True, add_config=["interval.ms=1000"]), "needs --entity-name"),
])
def test_refusals_before_connecting(args, message):
    with pytest.raises(CliError, match=message):
        run_client_metrics(args)
