"""`tierlog acls` without a cluster: kafka-acls.sh's options, the --producer / --consumer sets,
usage errors as one line."""
import argparse

import pytest
from confluent_kafka.admin import AclOperation, ResourceType

from tierlog.cli import cmd_acls
from tierlog.cli.errors import UsageError


def _args(*argv):
    parser = argparse.ArgumentParser()
    cmd_acls.register(parser.add_subparsers())
    args = parser.parse_args(["acls", *argv])
    if args.action != "list" and args.resource_pattern_type is None:
        args.resource_pattern_type = "literal"
    return args


def test_operations_take_kafkas_names():
    args = _args("--add", "--allow-principal", "User:a", "--operation", "Read", "--operation", "DescribeConfigs",
                 "--operation", "idempotent-write", "--topic", "t")
    assert args.operation == [AclOperation.READ, AclOperation.DESCRIBE_CONFIGS, AclOperation.IDEMPOTENT_WRITE]


def test_producer_and_consumer_sets():
    args = _args("--add", "--allow-principal", "User:a", "--producer", "--consumer", "--idempotent",
                 "--topic", "t", "--group", "g")
    ops = cmd_acls._operations_by_resource(args, cmd_acls._resources(args))
    assert ops[(ResourceType.TOPIC, "t")] == {AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE,
                                              AclOperation.READ}
    assert ops[(ResourceType.GROUP, "g")] == {AclOperation.READ}
    assert ops[(ResourceType.BROKER, "kafka-cluster")] == {AclOperation.IDEMPOTENT_WRITE}


def test_entries_default_to_every_host():
    args = _args("--add", "--allow-principal", "User:a", "--deny-principal", "User:b", "--deny-host", "10.0.0.1",
                 "--topic", "t")
    assert [(p, h, perm.name) for p, h, perm in cmd_acls._entries(args)] == [
        ("User:a", "*", "ALLOW"), ("User:b", "10.0.0.1", "DENY")]


@pytest.mark.parametrize("argv", [
    ["--add", "--topic", "t"],                                        # no principal
    ["--add", "--allow-principal", "User:a"],                         # no resource
    ["--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"],   # --consumer needs --group
    ["--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
    ["--remove", "--allow-principal", "User:a"],
])
def test_usage_errors(argv):
    args = _args(*argv)
    with pytest.raises(UsageError):
        cmd_acls._check(args, cmd_acls._resources(args))


def test_bad_principal_and_operation_are_argparse_errors():
    with pytest.raises(SystemExit):
        _args("--add", "--allow-principal", "alice", "--topic", "t")
    with pytest.raises(SystemExit):
        _args("--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t")


def test_list_filters_and_output(capsys):
    args = _args("--list", "--topic", "t", "--principal", "User:a")
    assert cmd_acls._list_filters(args, cmd_acls._resources(args)) == [
        {"ResourceTypeFilter": 2, "ResourceNameFilter": "t", "PatternTypeFilter": 1, "PrincipalFilter": "User:a",
         "HostFilter": None, "Operation": 1, "PermissionType": 1}]
    answer = {"Resources": [{"ResourceType": 2, "ResourceName": "t", "PatternType": 3, "Acls": [
        {"Principal": "User:a", "Host": "*", "Operation": 3, "PermissionType": 3}]}]}
    cmd_acls._print_grouped(cmd_acls._described(answer), "Current ACLs for resource")
    out = capsys.readouterr().out
    assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:" in out
    assert "(principal=User:a, host=*, operation=READ, permissionType=ALLOW)" in out


def test_the_removal_prompt_names_resources_as_kafka_acls_does(monkeypatch):
    """The cluster resource is CLUSTER (Kafka's name), not confluent-kafka's BROKER."""
    args = _args("--remove", "--allow-principal", "User:a", "--operation", "Alter", "--topic", "t", "--cluster")
    prompts = []
    monkeypatch.setattr(cmd_acls.sys, "stdin", argparse.Namespace(isatty=lambda: True))
    monkeypatch.setattr("builtins.input", lambda prompt: prompts.append(prompt) or "y")
    cmd_acls._confirm(args, cmd_acls._resources(args))
    [prompt] = prompts
    assert prompt == ("Are you sure you want to remove ACLs from "
                      "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL), "
                      "ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)? (y/n) ")
