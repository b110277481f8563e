"""AddRaftVoter / RemoveRaftVoter at the active controller (server/voter_changes.py), over a
real RaftDriver and RaftNode of a one-voter dynamic quorum (KIP-853): Kafka's refusals,
and an add answered only once the new voter set is committed."""

import asyncio
import random
from types import SimpleNamespace

from tierlog.net.client import PeerUnavailable
from tierlog.protocol import ErrorCode
from tierlog.raft import (
    FetchRequest,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    RaftConfig,
    RaftNode,
    wire,
)
from tierlog.raft.voters import Endpoint, Voter, VoterSet
from tierlog.server.raft_driver import RaftDriver, wall_clock_ms
from tierlog.server.voter_changes import add_raft_voter, remove_raft_voter

CONFIG = RaftConfig(cluster_id="t", election_timeout_ms=100, append_linger_ms=0)
D1, D2, D9 = (bytes([i]) * 16 for i in (1, 2, 9))
LISTENERS = [{"Name": "CONTROLLER", "Host": "localhost", "Port": 9095}]
HEADER = SimpleNamespace(principal=None, client_host="127.0.0.1")


class _NoPeers:
    def set_address(self, node_id, host, port):
        pass

    async def request(self, *a, **kw):
        raise PeerUnavailable("no peers in this test")


async def _until(check, what):
    deadline = asyncio.get_running_loop().time() + 10
    while not check():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.01)


async def _leader():
    voters = VoterSet([Voter(1, D1, (Endpoint("CONTROLLER", "localhost", 9093),))])
    node = RaftNode(1, voters, MemoryLog(), MemorySnapshotStore(), MemoryQuorumStateStore(), CONFIG,
                    random.Random(1), wall_clock_ms(), directory_id=D1)
    driver = RaftDriver(_NoPeers(), 1.0, node, asyncio.Queue())
    driver.start()
    await _until(lambda: node.is_leader and node.high_watermark == node.log.end_offset > 0, "a committed leader")
    return SimpleNamespace(driver=driver, authorizer=None, quorum_controller=None,
                           change_voters=driver.change_voters), node


async def _fetch_at_end(driver, node, replica_id):
    """Observer ``replica_id`` fetches at the leader's log end (it holds everything)."""
    log = node.log
    req = FetchRequest("t", replica_id, node.epoch, log.end_offset, log.last_fetched_epoch(), log.start_offset, 0,
                       1 << 20)
    await driver.handle(*wire.request_to_dict(req))


def _add(voter_id, directory, **extra):
    return {"ClusterId": "t", "TimeoutMs": 5000, "VoterId": voter_id, "VoterDirectoryId": directory,
            "Listeners": LISTENERS, **extra}


def test_refusals_follow_kafkas_rules():
    async def run():
        server, node = await _leader()
        try:
            async def add(req):
                return (await add_raft_voter(server, HEADER, req))["ErrorCode"]
            assert await add(_add(2, D2)) == ErrorCode.REQUEST_TIMED_OUT       # never caught up as an observer
            assert await add(_add(1, D1)) == ErrorCode.DUPLICATE_VOTER
            assert await add(_add(2, bytes(16))) == ErrorCode.INVALID_REQUEST  # no directory id
            assert await add(_add(2, D2, Listeners=[])) == ErrorCode.INVALID_REQUEST
            assert await add(_add(2, D2, ClusterId="other")) == ErrorCode.INCONSISTENT_CLUSTER_ID
            removed = await remove_raft_voter(server, HEADER, {"ClusterId": "t", "VoterId": 1, "VoterDirectoryId": D9})
            assert removed["ErrorCode"] == ErrorCode.VOTER_NOT_FOUND          # the wiped disk's directory
            last = await remove_raft_voter(server, HEADER, {"ClusterId": None, "VoterId": 1, "VoterDirectoryId": D1})
            assert last["ErrorCode"] == ErrorCode.VOTER_NOT_FOUND             # never the last voter
        finally:
            await server.driver.stop()
    asyncio.run(run())


def test_add_is_answered_once_the_new_set_is_committed():
    async def run():
        server, node = await _leader()
        try:
            await _fetch_at_end(server.driver, node, 2)
            answer = asyncio.ensure_future(add_raft_voter(server, HEADER, _add(2, D2)))
            await _until(lambda: node.voters == {1, 2}, "the VotersRecord written")
            await asyncio.sleep(0)
            assert not answer.done()                # 2 of 2 must hold it: voter 2 has not fetched it
            await _fetch_at_end(server.driver, node, 2)
            result = await asyncio.wait_for(answer, 10)
            assert result["ErrorCode"] == ErrorCode.NONE and node.voter_set.get(2).directory_id == D2
        finally:
            await server.driver.stop()
    asyncio.run(run())
