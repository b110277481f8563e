"""A dynamic quorum's addresses (server/quorum_endpoints.py through RaftDriver): the voters'
endpoints from the set in effect, the leader's from a Fetch answer's NodeEndpoints and from
BeginQuorumEpoch v1's LeaderEndpoints; a
static quorum's peer map and answers are left as they were."""

import asyncio
import random

from tierlog.protocol import ErrorCode
from tierlog.raft import (
    BeginQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    RaftConfig,
    RaftNode,
    wire,
)
from tierlog.raft.voters import Endpoint, Voter, VoterSet
from tierlog.server.raft_driver import RaftDriver, wall_clock_ms

CONFIG = RaftConfig(cluster_id="t", election_timeout_ms=100, append_linger_ms=0)
D1, D2 = bytes([1]) * 16, bytes([2]) * 16
LEADER_EP = Endpoint("CONTROLLER", "c1.example", 9093)


class _Peers:
    """Records the peer map; answers every Fetch with 'the leader is 1' and its endpoint."""

    def __init__(self, addresses=None):
        self.addresses = dict(addresses or {})
        self.asked: list[int] = []

    def set_address(self, node_id, host, port):
        self.addresses[node_id] = (host, port)

    async def request(self, dest, api_key, body, timeout_s, version):
        self.asked.append(dest)
        await asyncio.sleep(0.01)
        _, answer = wire.response_to_dict(FetchResponse(ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, 3))
        answer["NodeEndpoints"] = [{"NodeId": 1, "Host": "c1.example", "Port": 9093, "Rack": None}]
        return answer


def _node(node_id, voters, **kw):
    return RaftNode(node_id, voters, MemoryLog(), MemorySnapshotStore(), MemoryQuorumStateStore(), CONFIG,
                    random.Random(1), wall_clock_ms(), **kw)


async def _until(check, what):
    deadline = asyncio.get_running_loop().time() + 10
    while not check():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.01)


async def _fetch_answer(driver, node):
    req = FetchRequest("t", 2, node.epoch, 0, -1, 0, 0, 1 << 20)
    return await driver.handle(*wire.request_to_dict(req))


def test_a_dynamic_leader_names_its_endpoint_in_fetch_answers():
    async def run():
        node = _node(1, VoterSet([Voter(1, D1, (LEADER_EP,))]), directory_id=D1)
        peers = _Peers()
        driver = RaftDriver(peers, 1.0, node, asyncio.Queue(), "controller")
        driver.start()
        try:
            await _until(lambda: node.is_leader, "a leader")
            body = await _fetch_answer(driver, node)
            assert body["NodeEndpoints"] == [{"NodeId": 1, "Host": "c1.example", "Port": 9093, "Rack": None}]
            assert peers.addresses == {}                                  # not itself
        finally:
            await driver.stop()
    asyncio.run(run())


def test_the_voters_are_peers_at_their_controller_endpoint_and_a_moved_leader_where_it_says():
    async def run():
        other = Endpoint("REPLICATION", "c1.example", 9999)
        node = _node(2, VoterSet([Voter(1, D1, (other, LEADER_EP)), Voter(2, D2, (Endpoint("CONTROLLER", "c2", 1),))]),
                     directory_id=D2)
        peers = _Peers()
        driver = RaftDriver(peers, 1.0, node, asyncio.Queue())
        driver.start()
        try:
            await _until(lambda: 1 in peers.addresses, "voter 1 in the peer map")
            assert peers.addresses == {1: ("c1.example", 9093)}
            # KIP-853: voter 1 leads from another port, and this voter missed the VotersRecord saying so:
            # BeginQuorumEpoch v1's LeaderEndpoints win over what the voter set lists
            moved = (Endpoint("CONTROLLER", "c1.example", 9193),)
            await driver.handle(*wire.request_to_dict(BeginQuorumEpochRequest("t", 1, 5, 2, D2, moved)))
            assert node.leader_and_epoch.leader_id == 1 and peers.addresses[1] == ("c1.example", 9193)
            body = await _fetch_answer(driver, node)   # a follower names the leader where it serves
            assert body["NodeEndpoints"] == [{"NodeId": 1, "Host": "c1.example", "Port": 9193, "Rack": None}]
        finally:
            await driver.stop()
    asyncio.run(run())


def test_an_observer_that_knows_only_bootstrap_servers_learns_the_leaders_address():
    async def run():
        node = _node(3, VoterSet([]), directory_id=bytes([3]) * 16, bootstrap_ids=(-2,))
        peers = _Peers({-2: ("bootstrap.example", 9093)})
        driver = RaftDriver(peers, 1.0, node, asyncio.Queue())
        driver.start()
        try:
            await _until(lambda: 1 in peers.addresses, "the leader's address")
            assert peers.addresses[1] == ("c1.example", 9093) and peers.asked[0] == -2
            await _until(lambda: 1 in peers.asked, "a Fetch to the leader itself")
        finally:
            await driver.stop()
    asyncio.run(run())


def test_a_static_quorum_keeps_its_peer_map_and_sends_no_endpoints():
    async def run():
        # as node.py builds it: controller.quorum.voters with endpoints, kraft.version 0
        node = _node(1, VoterSet([Voter(1, endpoints=(LEADER_EP,))]), kraft_version=0)
        peers = _Peers({5: ("broker.example", 9092)})
        driver = RaftDriver(peers, 1.0, node, asyncio.Queue())
        driver.start()
        try:
            await _until(lambda: node.is_leader, "a leader")
            body = await _fetch_answer(driver, node)
            assert body["NodeEndpoints"] == []
            driver._endpoints.learn({"NodeEndpoints": [{"NodeId": 1, "Host": "elsewhere", "Port": 1}]})
            assert peers.addresses == {5: ("broker.example", 9092)}
        finally:
            await driver.stop()
    asyncio.run(run())
