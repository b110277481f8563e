"""The controller role of a process: the controller listener's APIs and the glue
between the Raft replica, the metadata loader and the sans-IO QuorumController.

Requests that change metadata go to ``QuorumController.handle``; its records are
proposed to Raft at the offsets the controller expects, in the epoch it is active
in, and the response leaves once they are committed and applied on this node
(``AppliedOffset``), or NOT_CONTROLLER if leadership moved meanwhile. The node's
CommitApplier (commit_applier.py) calls the ``on_*`` hooks in log order.
Quorum RPCs (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot) go
to the Raft driver; DescribeQuorum is answered from the replica's view.
With an authorizer (``authorizer.class.name``), only principals allowed CLUSTER_ACTION on
the cluster (the nodes: super users) may send the controller's and the quorum's requests:
others get CLUSTER_AUTHORIZATION_FAILED (quorum requests: the connection closes).
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from tierlog.clock import wall_clock_ms
from tierlog.controller.quorum_controller import (
    SUPPORTED_APIS,
    QuorumController,
    not_controller_response,
)
from tierlog.metadata import cluster_records as metadata_records
from tierlog.metadata.acls import CLUSTER_NAME, AclOperation, ResourceType
from tierlog.metadata.authorizer import Authorizer
from tierlog.metadata.feature_records import api_versions_features
from tierlog.net.server import CloseConnection
from tierlog.net.tasks import TaskSet
from tierlog.protocol import APIS, ApiKey, ErrorCode
from tierlog.raft import wire
from tierlog.raft.types import LeaderAndEpoch, NotLeaderError

from .applied_offset import AppliedOffset, NotLeaderAnymore
from .raft_driver import RaftDriver
from .voter_changes import add_raft_voter, remove_raft_voter, update_raft_voter

if TYPE_CHECKING:
    from tierlog.protocol.typed.api_versions import (
        ApiVersionsRequest,
        ApiVersionsResponse,
    )
    from tierlog.protocol.typed.describe_quorum import (
        DescribeQuorumRequest,
        DescribeQuorumResponse,
    )

__all__ = ["CONTROLLER_APIS", "ControllerServer", "describe_quorum_response"]

log = logging.getLogger(__name__)
COMMIT_TIMEOUT_S = 15.0
RAFT_APIS = (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT)


class ControllerServer:
    """Context of the controller listener's handlers (``api_versions`` for ApiVersions)."""

    def __init__(self, node_id: int, driver: RaftDriver, applied: AppliedOffset, quorum_controller: QuorumController,
                 authorizer: Authorizer | None = None):
        self.node_id = node_id
        self.authorizer = authorizer        # KIP-801: only nodes (CLUSTER_ACTION) may use this listener
        self.driver = driver
        self._applied = applied
        self.quorum_controller = quorum_controller
        self._epoch: int | None = None      # the quorum epoch it is active in: Raft refuses its records in another
        self.api_versions = [{"ApiKey": k, "MinVersion": m.MIN_VERSION, "MaxVersion": m.MAX_VERSION}
                             for k, m in sorted(CONTROLLER_APIS.items())]
        self._tasks = TaskSet(f"controller {node_id}")        # the ticker

    # -- committed metadata (called by the node's CommitApplier, in log order) -----------

    def on_committed_image(self, image, last_offset: int) -> None:
        if self.quorum_controller.active:
            self.quorum_controller.on_commit(last_offset)
        else:
            self.quorum_controller.load_image(image)

    def on_snapshot_loaded(self, image) -> None:
        if not self.quorum_controller.active:
            self.quorum_controller.load_image(image)

    def on_leader_change(self, leader: LeaderAndEpoch, image) -> None:
        active = leader.leader_id == self.node_id
        next_offset = self.driver.node.log.end_offset if active else None
        self.quorum_controller.on_leader_change(active, image, next_offset)
        self._epoch = leader.epoch if active else None
        self._applied.fail_waiting(NotLeaderAnymore("leadership of the metadata quorum moved"))
        log.info("metadata quorum leader is %s (epoch %d)%s", leader.leader_id, leader.epoch,
                 "; this node is the active controller" if active else "")

    # -- requests -----------------------------------------------------------------------

    async def request(self, api_key: int, version: int, body: Mapping[str, Any]) -> Any:
        """A request from this process's own broker role, served without a socket."""
        result = CONTROLLER_APIS[api_key].handle(self, _Header(api_key, version), body)
        return await result if inspect.isawaitable(result) else result

    async def submit(self, api_key: int, version: int, request: Mapping[str, Any]) -> Any:
        self._past_raft_records()
        result = self.quorum_controller.handle(api_key, version, request, wall_clock_ms())
        response = result.response
        assert response is not None             # every request gets an answer
        if not result.records:
            return response
        try:
            await self._append(result.records, result.base_offset)
        except (TimeoutError, NotLeaderError, NotLeaderAnymore) as e:
            log.info("api %d not committed (%s); answering NOT_CONTROLLER", api_key, type(e).__name__)
            return not_controller_response(api_key, version, request)
        return response

    async def _append(self, records: list, base_offset: int) -> None:
        await self._applied.wait(self._propose(records, base_offset), COMMIT_TIMEOUT_S)

    def _propose(self, records: list, base_offset: int) -> int:
        """Hand records to Raft at once: the controller already counted them at ``base_offset``, so
        nothing may be proposed in between (a deferred propose would let the next request's records
        take those offsets)."""
        last = self.driver.propose([metadata_records.encode(r) for r in records], self._epoch)
        assert last == base_offset + len(records) - 1, \
            f"metadata records landed at {last - len(records) + 1}, the controller expected {base_offset}"
        return last

    def change_voters(self, change: Callable[[int], tuple[int, int | None]]) -> tuple[int, int | None]:
        """A KIP-853 voter change at the Raft leader (``RaftDriver.change_voters``): the VotersRecord
        takes an offset the controller did not count, so its next records move past it."""
        error, offset = self.driver.change_voters(change)
        if offset is not None and self.quorum_controller.active:
            self.quorum_controller.skip_to(self.driver.node.log.end_offset)
        return error, offset

    def start_ticker(self) -> None:
        self._tasks.spawn(self._ticker(), name=f"controller-tick-{self.node_id}")

    async def _ticker(self) -> None:
        while True:
            deadline = self.quorum_controller.next_deadline_ms()
            now = wall_clock_ms()
            delay = 0.1 if deadline is None else max(0.01, min(0.5, (deadline - now) / 1000))
            await asyncio.sleep(delay)
            try:
                self._tick()
            except Exception:
                log.exception("controller tick failed")

    def _past_raft_records(self) -> None:
        """The Raft core writes a VotersRecord on its own when a voter's endpoint update waited for
        its Fetch (raft/voter_changes.py): the controller's next records move past it."""
        end = self.driver.node.log.end_offset
        if self.quorum_controller.active and end > self.quorum_controller.next_offset:
            self.quorum_controller.skip_to(end)

    def _tick(self) -> None:
        self._past_raft_records()
        now = wall_clock_ms()
        base = self.quorum_controller.next_offset
        records = self.quorum_controller.tick(now)
        if records:
            try:
                self._propose(records, base)     # now, not in a task: see _propose
            except NotLeaderError:
                pass                             # the leader change drops the pending image too

    async def stop(self) -> None:
        """Cancel and await the ticker."""
        await self._tasks.close()


def describe_quorum_response(server, request: DescribeQuorumRequest) -> DescribeQuorumResponse:
    """DescribeQuorum (55) from this replica's view; non-leaders answer NOT_LEADER_OR_FOLLOWER."""
    return wire.describe_quorum_to_dict(server.driver.node.describe(wall_clock_ms()))


class _Header(NamedTuple):
    api_key: int
    api_version: int


class _Api:
    """One controller-listener API: key, version range and handler (the module shape
    RequestDispatcher expects)."""

    def __init__(self, key: int, lo: int, hi: int, handle):
        self.API_KEY, self.MIN_VERSION, self.MAX_VERSION = key, lo, hi
        self.handle = handle


def node_may_call(server, header) -> bool:
    """The controller listener serves the nodes (Kafka's ControllerApis: CLUSTER_ACTION on the
    cluster; brokers forward clients' admin requests after checking them, as their own
    principal). A request of this process's own broker role (no principal) is trusted."""
    principal = getattr(header, "principal", None)
    if server.authorizer is None or principal is None:
        return True
    acls = server.quorum_controller.committed_image.acls
    return server.authorizer.authorize(acls, principal, header.client_host, AclOperation.CLUSTER_ACTION,
                                       ResourceType.CLUSTER, CLUSTER_NAME)


def _raft_handler(server, header, request):
    if not node_may_call(server, header):
        raise CloseConnection(f"{header.principal} may not send quorum requests (CLUSTER_ACTION)")
    return server.driver.handle(header.api_key, request)


def _controller_handler(server, header, request):
    if not node_may_call(server, header):
        return not_controller_response(header.api_key, header.api_version, request,
                                       ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return server.submit(header.api_key, header.api_version, request)


def _api_versions(server, header, request: ApiVersionsRequest) -> ApiVersionsResponse:
    image = server.quorum_controller.committed_image
    return {"ErrorCode": ErrorCode.NONE, "ApiKeys": server.api_versions, "ThrottleTimeMs": 0,
            **api_versions_features(image.features, image.provenance.last_contained_offset,
                                    server.driver.node.kraft_version)}


def _registry() -> dict:
    reg = {ApiKey.API_VERSIONS: _Api(ApiKey.API_VERSIONS, 0, 4, _api_versions),
           ApiKey.DESCRIBE_QUORUM: _Api(ApiKey.DESCRIBE_QUORUM, 0, APIS[ApiKey.DESCRIBE_QUORUM].max_version,
                                 lambda s, h, r: describe_quorum_response(s, r))}
    for key in RAFT_APIS:      # we send one version of each (tierlog.raft.wire.VERSIONS), accept MIN_VERSIONS up
        reg[key] = _Api(key, wire.MIN_VERSIONS.get(key, wire.VERSIONS[key]), wire.VERSIONS[key], _raft_handler)
    for key, (lo, hi) in SUPPORTED_APIS.items():
        reg[key] = _Api(key, lo, hi, _controller_handler)
    for key, handler in ((ApiKey.ADD_RAFT_VOTER, add_raft_voter), (ApiKey.REMOVE_RAFT_VOTER, remove_raft_voter),
                         (ApiKey.UPDATE_RAFT_VOTER, update_raft_voter)):    # KIP-853
        reg[key] = _Api(key, APIS[key].min_version, APIS[key].max_version, handler)
    return reg


CONTROLLER_APIS = _registry()
