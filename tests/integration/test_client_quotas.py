"""Client quotas over sockets: `tierlog configs --entity-type ...` (kafka-configs.sh's form)
and DescribeClientQuotas / AlterClientQuotas on the wire (confluent-kafka and kafka-python
have no client quota APIs); the quotas live in the metadata log and survive a restart."""
import json

import pytest
from cluster import request, wait_for
from test_cli import ok, one_error_line, tierlog

pytestmark = pytest.mark.integration

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, INVALID_REQUEST = 48, 49, 42


def _quotas(bootstrap: str, *entity: str) -> list:
    return json.loads(ok("configs", *entity, "--describe", "--json", "--bootstrap-server", bootstrap).stdout)["entries"]


def test_cli_sets_describes_and_deletes_quotas_which_survive_a_restart(node):
    b = node.bootstrap
    ok("configs", "--entity-type", "users", "--entity-name", "alice", "--alter",
       "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152", "--bootstrap-server", b)
    ok("configs", "--entity-type", "users", "--entity-default", "--alter",
       "--add-config", "request_percentage=50", "--bootstrap-server", b)
    ok("configs", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-default",
       "--alter", "--add-config", "controller_mutation_rate=5", "--bootstrap-server", b)
    ok("configs", "--entity-type", "ips", "--entity-name", "127.0.0.1", "--alter",
       "--add-config", "connection_creation_rate=100", "--bootstrap-server", b)

    users = _quotas(b, "--entity-type", "users")
    assert users == [{"entity": {"user": None}, "quotas": {"request_percentage": 50.0}},
                     {"entity": {"user": "alice"}, "quotas": {"consumer_byte_rate": 2097152.0,
                                                              "producer_byte_rate": 1048576.0}}]
    pair = _quotas(b, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients")
    assert pair == [{"entity": {"client-id": None, "user": "alice"}, "quotas": {"controller_mutation_rate": 5.0}}]
    text = ok("configs", "--entity-type", "users", "--entity-name", "alice", "--describe",
              "--bootstrap-server", b).stdout.decode()
    assert text == ("Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, "
                    "producer_byte_rate=1048576.0\n")

    ok("configs", "--entity-type", "users", "--entity-name", "alice", "--alter",
       "--delete-config", "consumer_byte_rate", "--bootstrap-server", b)
    assert _quotas(b, "--entity-type", "users", "--entity-name", "alice") == [
        {"entity": {"user": "alice"}, "quotas": {"producer_byte_rate": 1048576.0}}]

    node.restart()
    wait_for(lambda: _quotas(node.bootstrap, "--entity-type", "ips") == [
        {"entity": {"ip": "127.0.0.1"}, "quotas": {"connection_creation_rate": 100.0}}], 30, "quotas after a restart")
    assert len(_quotas(node.bootstrap, "--entity-type", "users")) == 2


@pytest.mark.parametrize(("add", "words"), [
    ("producer_byte_rate=-1", "must be a positive number"),
    ("no_such_quota=1", "Invalid quota key no_such_quota"),
    ("producer_byte_rate=1.5", "whole number"),
])
def test_cli_bad_values_are_one_line_errors(shared_node, add, words):
    result = tierlog("configs", "--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config", add,
                     "--bootstrap-server", shared_node.bootstrap)
    assert words in one_error_line(result)


def test_cli_usage_errors(shared_node):
    b = shared_node.bootstrap
    assert "--entity-name or --entity-default" in one_error_line(
        tierlog("configs", "--entity-type", "users", "--alter", "--add-config", "producer_byte_rate=1",
                "--bootstrap-server", b))
    assert "not a valid IP" in one_error_line(
        tierlog("configs", "--entity-type", "ips", "--entity-name", "nope", "--alter",
                "--add-config", "connection_creation_rate=1", "--bootstrap-server", b))


def test_wire_validation_and_filters(shared_node):
    port = shared_node.port

    def alter(entity: list, ops: list, validate_only=False):
        body = {"Entries": [{"Entity": [{"EntityType": t, "EntityName": n} for t, n in entity],
                             "Ops": [{"Key": k, "Value": v, "Remove": r} for k, v, r in ops]}],
                "ValidateOnly": validate_only}
        return request("127.0.0.1", port, ALTER_CLIENT_QUOTAS, body, version=1)["Entries"][0]

    bad = alter([("user", "w"), ("ip", None)], [("producer_byte_rate", 1.0, False)])
    assert bad["ErrorCode"] == INVALID_REQUEST and "cannot be combined" in bad["ErrorMessage"]
    assert alter([("user", "w")], [("producer_byte_rate", 10.0, False)], validate_only=True)["ErrorCode"] == 0
    assert alter([("client-id", "w-app")], [("request_percentage", 12.5, False)])["ErrorCode"] == 0

    def describe(components, strict, version=0):
        return request("127.0.0.1", port, DESCRIBE_CLIENT_QUOTAS, {"Components": components, "Strict": strict},
                       version=version)
    exact = describe([{"EntityType": "client-id", "MatchType": 0, "Match": "w-app"}], True)
    assert exact["ErrorCode"] == 0 and exact["Entries"] == [
        {"Entity": [{"EntityType": "client-id", "EntityName": "w-app"}],
         "Values": [{"Key": "request_percentage", "Value": 12.5}]}]
    # validate only wrote nothing
    assert describe([{"EntityType": "user", "MatchType": 0, "Match": "w"}], False, 1)["Entries"] == []
    twice = describe([{"EntityType": "user", "MatchType": 2, "Match": None}] * 2, False)
    assert twice["ErrorCode"] == INVALID_REQUEST and "more than once" in twice["ErrorMessage"]
