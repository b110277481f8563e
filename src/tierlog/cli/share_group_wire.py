"""The share-group requests of `tierlog share-groups` (KIP-932), sent over tierlog's own connection
(`BrokerWire`): librdkafka has no share-group admin APIs.

A group's requests go to its coordinator (FindCoordinator key type 0, as for any group), asked
again while the coordinator moves or loads (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS) until --timeout; ListGroups (type ``share``) goes to every broker.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from tierlog.cli.broker_wire import BrokerWire, security_of
from tierlog.cli.errors import CliError
from tierlog.cli.transactions_partition import version_of
from tierlog.clock import monotonic_s
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode, error_name

__all__ = ["ShareGroupWire"]

GROUP_KEY_TYPE = 0
SHARE = "share"
_MOVING = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                     ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
_BACKOFF_S = 0.2


class ShareGroupWire:
    """The share-group calls of one command, within its --timeout."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.deadline = monotonic_s() + args.timeout

    def _wire(self, address: str | None = None) -> BrokerWire:
        remaining = max(self.deadline - monotonic_s(), 0.001)
        return BrokerWire(address or self.args.bootstrap_server, remaining, security_of(self.args))

    def brokers(self) -> list[str]:
        with self._wire() as wire:
            body = {"Topics": [], "AllowAutoTopicCreation": False, "IncludeClusterAuthorizedOperations": False,
                    "IncludeTopicAuthorizedOperations": False}
            meta = wire.call(ApiKey.METADATA, body, min(version_of(wire, ApiKey.METADATA, "Metadata"), 12), "Metadata")
        return [f"{b['Host']}:{b['Port']}" for b in sorted(meta["Brokers"], key=lambda b: b["NodeId"])]

    def list_groups(self, states: list[str]) -> list[dict[str, Any]]:
        """Every share group of the cluster: {group, state}."""
        listed: dict[str, str] = {}
        for address in self.brokers():
            with self._wire(address) as wire:
                resp = wire.call(ApiKey.LIST_GROUPS, {"StatesFilter": states, "TypesFilter": [SHARE]},
                                 version_of(wire, ApiKey.LIST_GROUPS, "ListGroups"), "ListGroups")
            if resp["ErrorCode"] and resp["ErrorCode"] not in _MOVING:
                raise CliError(f"ListGroups at {address} failed: {error_name(resp['ErrorCode'])}")
            listed |= {g["GroupId"]: g["GroupState"] for g in resp["Groups"] if g.get("GroupType", SHARE) == SHARE}
        return [{"group": g, "state": s} for g, s in sorted(listed.items())]

    def at_coordinator(self, group: str, api_key: int, body: dict, name: str,
                       error_of: Callable[[dict], int]) -> dict:
        """``body`` sent to the group's coordinator; asked again while the coordinator moves or loads."""
        while True:
            address, found = self._coordinator(group)
            resp = None
            if address is not None:
                with self._wire(address) as wire:
                    resp = wire.call(api_key, body, version_of(wire, api_key, name), name)
            code = error_of(resp) if resp is not None else found
            if code not in _MOVING:
                return resp if resp is not None else {"ErrorCode": code}
            if monotonic_s() + _BACKOFF_S >= self.deadline:
                raise CliError(f"{name} of group {group!r}: no coordinator answered in time ({error_name(code)})")
            time.sleep(_BACKOFF_S)

    def _coordinator(self, group: str) -> tuple[str | None, int]:
        with self._wire() as wire:
            version = version_of(wire, ApiKey.FIND_COORDINATOR, "FindCoordinator")
            body = {"KeyType": GROUP_KEY_TYPE, "Key": group, "CoordinatorKeys": [group]}
            resp = wire.call(ApiKey.FIND_COORDINATOR, body, version, "FindCoordinator")
        found = resp["Coordinators"][0] if version >= 4 else resp
        if found["ErrorCode"]:
            return None, found["ErrorCode"]
        return f"{found['Host']}:{found['Port']}", ErrorCode.NONE

    def describe(self, group: str) -> dict:
        """ShareGroupDescribe's DescribedGroup."""
        resp = self.at_coordinator(group, ApiKey.SHARE_GROUP_DESCRIBE,
                                   {"GroupIds": [group], "IncludeAuthorizedOperations": False},
                                   "ShareGroupDescribe", lambda r: r["Groups"][0]["ErrorCode"])
        return resp["Groups"][0] if "Groups" in resp else {"ErrorCode": resp["ErrorCode"], "GroupId": group}

    def start_offsets(self, group: str) -> dict:
        """DescribeShareGroupOffsets of every share-partition the group has state for."""
        resp = self.at_coordinator(group, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                                   {"Groups": [{"GroupId": group, "Topics": None}]},
                                   "DescribeShareGroupOffsets", lambda r: r["Groups"][0]["ErrorCode"])
        return resp["Groups"][0] if "Groups" in resp else {"ErrorCode": resp["ErrorCode"], "Topics": []}

    def alter(self, group: str, offsets: dict[tuple[str, int], int]) -> dict:
        topics: dict[str, list[dict]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append({"PartitionIndex": partition, "StartOffset": offset})
        body = {"GroupId": group, "Topics": [{"TopicName": t, "Partitions": ps} for t, ps in topics.items()]}
        return self.at_coordinator(group, ApiKey.ALTER_SHARE_GROUP_OFFSETS, body, "AlterShareGroupOffsets",
                                   lambda r: r["ErrorCode"])

    def delete(self, group: str) -> int:
        resp = self.at_coordinator(group, ApiKey.DELETE_GROUPS, {"GroupsNames": [group]}, "DeleteGroups",
                                   lambda r: r["Results"][0]["ErrorCode"])
        return resp["Results"][0]["ErrorCode"] if "Results" in resp else resp["ErrorCode"]
