"""KIP-853: a voter restarted on another port, in the sans-IO core (UpdateRaftVoter, LeaderEndpoints).

The shape CI hit in tests/integration/test_dynamic_quorum.py: controller 2 restarts on a new
port, the leader writes the VotersRecord moving it and dies before anyone fetched it; controller
2 then wins (its log was the longest) while controller 3 still lists it at the old port. Before
the fix 3 could not fetch from 2 (it had no other address), 2 could not commit its epoch, and
every election gave the same result: no working leader ever again.
"""

import random

from raft_harness import Cluster

from tierlog.raft import RaftNode
from tierlog.raft.messages import BeginQuorumEpochRequest
from tierlog.raft.types import Err
from tierlog.raft.voters import Endpoint, Voter, VoterSet

DIRS = {i: bytes([i]) * 16 for i in (1, 2, 3)}
OLD = {i: (Endpoint("CONTROLLER", "127.0.0.1", 9000 + i),) for i in (1, 2, 3)}
NEW2 = (Endpoint("CONTROLLER", "127.0.0.1", 9102),)
FORMATTED = VoterSet(Voter(i, DIRS[i], OLD[i]) for i in (1, 2, 3))

class MovingCluster(Cluster):
    """Three voters formatted at OLD; ``serving`` says where each serves when (re)started."""

    def __init__(self):
        self.serving = dict(OLD)
        super().__init__(voters=3)

    def make_node(self, i) -> RaftNode:
        return RaftNode(i, FORMATTED, self.logs[i], self.snaps[i], self.stores[i], self.config,
                        random.Random(self.rng.random()), self.now, directory_id=DIRS[i], endpoints=self.serving[i])

    def listed(self, on: int, voter: int):
        return self.nodes[on].voter_set.get(voter).endpoints

    def committed_everywhere(self, voter: int, endpoints) -> bool:
        live = [n for i, n in self.nodes.items() if i not in self.down]
        return all(n.voter_set.get(voter).endpoints == endpoints
                   and n.high_watermark > n.voter_log.history.latest_offset for n in live)


def _moved_and_lost(lagging: int | None = None) -> tuple[MovingCluster, int]:
    """Controller 2 restarts at NEW2 and asks the leader to list it; the leader writes the
    VotersRecord and is killed before anyone fetched it (``lagging`` missed the last entry before)."""
    c = MovingCluster()
    old_leader = c.elect().node_id
    c.commit([b"before"])
    moved, third = (i for i in (1, 2, 3) if i != old_leader)   # the moved one is not the leader
    c.serving[moved] = NEW2
    c.stop(moved)
    c.start(moved)
    leader = c.nodes[old_leader]
    c.run_until(lambda: c.nodes[moved].leader_and_epoch.leader_id == old_leader
                and c.nodes[moved].log.end_offset == leader.log.end_offset)
    assert c.nodes[moved].endpoints_to_update() == NEW2       # it asks the leader to list the new port
    if lagging is not None:
        c.isolated.add(third)
        c.commit([b"the third voter misses this"])
        c.isolated.discard(third)
    error, _ = leader.update_voter(moved, DIRS[moved], NEW2, c.now)
    assert error == Err.NONE and c.listed(old_leader, moved) == NEW2
    c.queue.clear()                                           # nobody fetched it: the leader is killed
    c.stop(old_leader)
    return c, moved


def test_a_moved_voter_that_wins_lists_its_new_port_and_the_others_reach_it_there():
    c, moved = _moved_and_lost(lagging=3)
    third = next(i for i in (1, 2, 3) if i not in c.down and i != moved)
    assert c.listed(third, moved) == OLD[moved]              # the third voter never saw the move...
    assert c.elect().node_id == moved                         # ...and its log is shorter
    # BeginQuorumEpoch v1 told it where the new leader serves (the shell reaches it there)
    assert c.nodes[third].quorum.state.leader_endpoints == NEW2 == c.nodes[third].leader_endpoints()
    # and the moved leader lists its own endpoints at the start of its epoch: it commits
    c.run_until(lambda: c.committed_everywhere(moved, NEW2))
    assert c.nodes[moved].endpoints_to_update() is None
    assert dict(c.nodes[moved].describe(c.now).nodes)[moved] == (("CONTROLLER", "127.0.0.1", 9102),)


def test_a_lost_update_is_asked_again_of_whichever_voter_leads_next():
    c, moved = _moved_and_lost()
    new_leader = c.elect()
    if new_leader.node_id != moved:
        assert c.listed(moved, moved) == OLD[moved]           # the record is gone everywhere
        assert c.nodes[moved].endpoints_to_update() == NEW2   # so it asks the new leader

    def ask_again():                                          # server/voter_update.py's loop
        update = c.nodes[moved].endpoints_to_update()
        if update is not None and new_leader.high_watermark > new_leader.log.start_offset:
            new_leader.update_voter(moved, DIRS[moved], update, c.now)
        return c.committed_everywhere(moved, NEW2)
    c.run_until(ask_again)


def test_the_leader_writes_an_endpoint_update_only_once_the_voter_holds_its_whole_log():
    """Written while the moved voter lags, the record could be lost with the leader while the
    third voter holds entries the moved one lacks: it would refuse the moved one its vote and
    could not reach it (it lists the old port) to ask for its own: no leader, ever."""
    c = MovingCluster()
    leader = c.elect()
    moved = next(i for i in (1, 2, 3) if i != leader.node_id)
    c.commit([b"before"])
    leader.propose([b"not fetched by the moved voter yet"], c.now)
    assert leader.update_voter(moved, DIRS[moved], NEW2, c.now) == (Err.REQUEST_TIMED_OUT, None)
    assert c.listed(leader.node_id, moved) == OLD[moved]
    # written the moment the voter's next Fetch reaches the leader's log end, not asked again
    c.run_until(lambda: c.committed_everywhere(moved, NEW2))
    assert leader.update_voter(moved, DIRS[moved], NEW2, c.now) == (Err.NONE, None)   # nothing left to do


def test_begin_quorum_epoch_meant_for_another_directory_is_refused():
    c = MovingCluster()
    leader = c.elect()
    follower = c.nodes[next(i for i in (1, 2, 3) if i != leader.node_id)]
    wiped = BeginQuorumEpochRequest("t", leader.node_id, leader.epoch, follower.node_id, bytes(16 * [9]), OLD[1])
    assert follower.handle_request(leader.node_id, wiped, c.now).response.error == Err.INVALID_VOTER_KEY
