"""``tierlog metadata quorum add-controller | remove-controller``: change the voters of a dynamic
controller quorum (KIP-853), as ``kafka-metadata-quorum.sh`` does.

- ``add-controller`` reads the joining controller's properties (``--command-config``, as
  Kafka's tool): its ``node.id``, its controller listener and the ``directory.id`` in the
  meta.properties of its metadata dir (``tierlog format --no-initial-controllers`` wrote it),
  and sends AddRaftVoter (80). The controller must run and have caught up as an observer;
  until then the leader answers REQUEST_TIMED_OUT and the command asks again until
  ``--timeout``.
- ``remove-controller --controller-id N --controller-directory-id D`` sends RemoveRaftVoter
  (81); ``tierlog metadata quorum --json`` shows each voter's directory id.

Both go to the quorum's leader: the command asks a ``--bootstrap-controller`` (any
controller's CONTROLLER listener; or ``--bootstrap-server``) with DescribeQuorum which node
leads and where (DescribeQuorum v2's Nodes), and sends the change there. One line on
success: the voter set after the change.
"""
from __future__ import annotations

import argparse
import time

from tierlog.cli.broker_wire import BrokerWire, security_of
from tierlog.cli.errors import CliError
from tierlog.clock import monotonic_s
from tierlog.config import ConfigError, NodeConfig
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, error_name
from tierlog.server.raft_replica import metadata_dir
from tierlog.storage.meta_properties import kafka_uuid_bytes, kafka_uuid_str, read_directory_id

__all__ = ["add_controller", "leader_address", "register", "remove_controller"]

METADATA_TOPIC = "__cluster_metadata"
RETRY_S = 0.5       # between AddRaftVoter attempts while the new controller catches up
_RETRIABLE = (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_CONTROLLER)


def register(actions, common) -> None:
    """The two actions under ``tierlog metadata quorum``; ``common`` adds the connection options."""
    add = actions.add_parser(
        "add-controller", help="make a running controller a voter of the dynamic quorum (AddRaftVoter)",
        description="Add the controller whose properties --command-config names (node.id, its CONTROLLER "
                    "listener, the directory.id of its metadata dir) to the voters. Start it first (formatted "
                    "with `tierlog format --no-initial-controllers`); it must have caught up as an observer.")
    common(add)
    add.set_defaults(func=run_add)
    remove = actions.add_parser(
        "remove-controller", help="remove a voter from the dynamic quorum (RemoveRaftVoter)",
        description="Remove voter (--controller-id, --controller-directory-id) from the quorum; "
                    "`tierlog metadata quorum --json` shows each voter's directory_id.")
    common(remove)
    remove.add_argument("--controller-id", type=int, required=True, metavar="N")
    remove.add_argument("--controller-directory-id", required=True, metavar="DIRECTORY_ID")
    remove.set_defaults(func=run_remove)


def run_add(args: argparse.Namespace) -> int:
    props = dict(args.command_config)
    if "node.id" not in props:
        raise CliError("add-controller: --command-config must name the new controller's properties file "
                       "(node.id, listeners, controller.listener.names, log.dirs)")
    try:
        config = NodeConfig(props)
    except ConfigError as e:
        raise CliError(f"--command-config: {e}") from None
    print(add_controller(_target(args), args.timeout, args, config))
    return 0


def run_remove(args: argparse.Namespace) -> int:
    try:
        directory_id = kafka_uuid_bytes(args.controller_directory_id)
    except ConfigError:
        raise CliError(f"--controller-directory-id: {args.controller_directory_id!r} is not a directory id") from None
    print(remove_controller(_target(args), args.timeout, args, args.controller_id, directory_id))
    return 0


def add_controller(bootstrap: str, timeout_s: float, args, config: NodeConfig) -> str:
    if "controller" not in config.roles or not config.controller_listeners:
        raise CliError(f"node {config.node_id} has no controller role and controller listener")
    meta = metadata_dir(config)
    directory_id = read_directory_id(meta)
    if directory_id is None:
        raise CliError(f"{meta}/meta.properties has no directory.id: format the new controller first "
                       "(tierlog format --no-initial-controllers)")
    listener = config.controller_listeners[0]
    host = listener.host or "localhost"
    body = {"ClusterId": None, "TimeoutMs": int(min(timeout_s, 60) * 1000), "VoterId": config.node_id,
            "VoterDirectoryId": directory_id, "AckWhenCommitted": True,
            "Listeners": [{"Name": listener.name, "Host": host, "Port": listener.port}]}
    voters = _change(bootstrap, timeout_s, args, ApiKey.ADD_RAFT_VOTER, body, f"add controller {config.node_id}")
    return (f"added controller {config.node_id} (directory.id {kafka_uuid_str(directory_id)}, "
            f"{listener.name}://{host}:{listener.port}); voters now {voters}")


def remove_controller(bootstrap: str, timeout_s: float, args, voter_id: int, directory_id: bytes) -> str:
    body = {"ClusterId": None, "VoterId": voter_id, "VoterDirectoryId": directory_id}
    voters = _change(bootstrap, timeout_s, args, ApiKey.REMOVE_RAFT_VOTER, body, f"remove controller {voter_id}")
    return f"removed controller {voter_id} (directory.id {kafka_uuid_str(directory_id)}); voters now {voters}"


def _target(args: argparse.Namespace) -> str:
    target = args.bootstrap_controller or args.bootstrap_server
    if not target:
        raise CliError("give --bootstrap-controller HOST:PORT (a controller's CONTROLLER listener)")
    return target


def _change(bootstrap: str, timeout_s: float, args, api_key: int, body: dict, what: str) -> str:
    """Send the change to the leader until it is done or ``timeout_s``; the voter ids after it."""
    deadline = monotonic_s() + timeout_s
    last = "no answer"
    while monotonic_s() < deadline:
        leader = leader_address(bootstrap, deadline - monotonic_s(), args)
        with BrokerWire(leader, max(0.1, deadline - monotonic_s()), security_of(args)) as wire:
            version = wire.version(api_key)
            if version is None:
                raise CliError(f"{wire.address} does not support API {api_key} (is the quorum dynamic?)")
            answer = wire.call(api_key, body, version, what)
            code = answer["ErrorCode"]
            if code == ErrorCode.NONE:
                return _voter_ids(wire)
        last = error_name(code) + (f" ({answer['ErrorMessage']})" if answer.get("ErrorMessage") else "")
        if code not in _RETRIABLE:
            raise CliError(f"{what}: {last}")
        time.sleep(min(RETRY_S, max(0.0, deadline - monotonic_s())))
    raise CliError(f"{what}: not done within {timeout_s:g}s: {last}")


def _describe(wire: BrokerWire) -> dict:
    version = wire.version(ApiKey.DESCRIBE_QUORUM)
    if version is None:
        raise CliError(f"{wire.address} does not support DescribeQuorum (API 55)")
    body = {"Topics": [{"TopicName": METADATA_TOPIC, "Partitions": [{"PartitionIndex": 0}]}]}
    return wire.call(ApiKey.DESCRIBE_QUORUM, body, version, "DescribeQuorum")


def leader_address(bootstrap: str, timeout_s: float, args) -> str:
    """HOST:PORT of the quorum leader's controller listener, as a controller names it."""
    with BrokerWire(bootstrap, max(0.1, timeout_s), security_of(args)) as wire:
        response = _describe(wire)
        part = (response.get("Topics") or [{}])[0].get("Partitions", [{}])[0]
        if part.get("ErrorCode") == ErrorCode.NONE:
            return wire.address
        leader = part.get("LeaderId", -1)
        for node in response.get("Nodes") or []:
            if node["NodeId"] == leader and node["Listeners"]:
                return f'{node["Listeners"][0]["Host"]}:{node["Listeners"][0]["Port"]}'
        return wire.address     # no leader known yet: ask again through it


def _voter_ids(wire: BrokerWire) -> str:
    part = _describe(wire)["Topics"][0]["Partitions"][0]
    return "[" + ",".join(str(v["ReplicaId"]) for v in part.get("CurrentVoters", [])) + "]"
