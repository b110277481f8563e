"""Each partition's log start, local log start and highest tiered offset, for `topics describe`.

Asked of each partition's leader with ListOffsets as a consumer: -2 EARLIEST
(the log start offset, remote storage included), -4 EARLIEST_LOCAL (v8+) and
-5 LATEST_TIERED (v9+, -1 when nothing is in remote storage). The leaders'
addresses come from a Metadata request on the bootstrap connection. A leader
that cannot be reached or answers an error leaves that partition's values
null (shown as ``?``); a broker too old for v9 leaves them all out.
"""

from __future__ import annotations

from collections import defaultdict

from tierlog.cli.broker_wire import BrokerWire
from tierlog.cli.errors import CliError
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.protocol.api import ApiKey

__all__ = ["FIELDS", "add_log_offsets", "broker_addresses"]

EARLIEST, EARLIEST_LOCAL, LATEST_TIERED = -2, -4, -5
FIELDS = {EARLIEST: "log_start_offset", EARLIEST_LOCAL: "local_log_start_offset", LATEST_TIERED: "highest_tiered_offset"}
MIN_LIST_OFFSETS_VERSION = 9
METADATA_VERSION = 12


def add_log_offsets(wire: BrokerWire, descriptions: list[dict]) -> None:
    """Set the three FIELDS on every partition of ``descriptions`` (None where unknown)."""
    version = wire.version(ApiKey.LIST_OFFSETS)
    if version is None or version < MIN_LIST_OFFSETS_VERSION or wire.version(ApiKey.METADATA) is None:
        return
    for description in descriptions:
        for p in description["partitions"]:
            p.update(dict.fromkeys(FIELDS.values()))
    by_leader: dict[int, list[tuple[str, dict]]] = defaultdict(list)
    for description in descriptions:
        for p in description["partitions"]:
            if p["leader"] is not None:
                by_leader[p["leader"]].append((description["topic"], p))
    if not by_leader:
        return
    addresses = broker_addresses(wire)
    for leader, partitions in by_leader.items():
        if leader in addresses:
            _ask_leader(wire, addresses[leader], partitions, version)


def broker_addresses(wire: BrokerWire) -> dict[int, str]:
    body = {"Topics": [], "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False}
    served = wire.version(ApiKey.METADATA)
    assert served is not None, "asked only of a broker serving Metadata"
    version = min(served, METADATA_VERSION)
    answer = wire.call(ApiKey.METADATA, body, version, "Metadata")
    return {b["NodeId"]: f"{b['Host']}:{b['Port']}" for b in answer["Brokers"]}


def _ask_leader(wire: BrokerWire, address: str, partitions: list[tuple[str, dict]], version: int) -> None:
    try:
        leader = BrokerWire(address, wire.remaining_s(), wire.security)
        leader.connect()
    except (CliError, TimeoutError):        # an unreachable leader leaves its partitions unknown
        return
    try:
        for target, field in FIELDS.items():
            _ask(leader, partitions, target, field, version)
    except (PeerUnavailable, TimeoutError):
        return
    finally:
        leader.close()


def _ask(leader: BrokerWire, partitions: list[tuple[str, dict]], target: int, field: str, version: int) -> None:
    topics: dict[str, list[dict]] = defaultdict(list)
    wanted = {}
    for topic, p in partitions:
        topics[topic].append({"PartitionIndex": p["partition"], "CurrentLeaderEpoch": -1, "Timestamp": target})
        wanted[(topic, p["partition"])] = p
    body = {"ReplicaId": -1, "IsolationLevel": 0,
            "Topics": [{"Name": name, "Partitions": parts} for name, parts in topics.items()]}
    answer = leader.request(ApiKey.LIST_OFFSETS, body, version)
    for t in answer["Topics"]:
        for r in t["Partitions"]:
            asked = wanted.get((t["Name"], r["PartitionIndex"]))
            if asked is not None and r["ErrorCode"] == 0:
                asked[field] = r["Offset"]
