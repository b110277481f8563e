"""The group coordinator's timer of a share group (KIP-932): each
member that stops heartbeating is removed at its group.share.session.timeout.ms deadline, one
after another, without any other request re-arming the timer in between."""
import asyncio
import time

from leaders import lead

from tierlog.broker.group_coordinator import OFFSETS_TOPIC, GroupCoordinator
from tierlog.broker.partition import Partition
from tierlog.config import NodeConfig
from tierlog.group.consumer_group import TopicsView
from tierlog.protocol.errors import ErrorCode as E
from tierlog.storage import Log, LogConfig

NOW = 1_700_000_000_000
SESSION_MS = 45000                      # ShareGroup's group.share.session.timeout.ms
VIEW = TopicsView({"t": (b"\x01" * 16, 2)})
POLL_S = 10


class Replicas:
    """Appends the share group's records to the leader's log (an ISR of the leader alone, min.insync.replicas
    1, so each append is committed at once)."""

    def append_records(self, part, records, origin, required_acks, timeout_ms):
        waiter = asyncio.get_running_loop().create_future()
        outcome = part.append_as_leader(records, origin, required_acks, NOW, waiter, timeout_ms)
        if outcome.appended and not waiter.done():
            waiter.set_result(E.NONE)
        return outcome, waiter if outcome.appended else None


def _heartbeat(coordinator, member: str, topics):
    req = {"GroupId": "s", "MemberId": member, "MemberEpoch": 0, "RackId": None, "SubscribedTopicNames": topics,
           "client_id": "c", "client_host": "/h"}
    return coordinator.run("s", lambda shard, token, now: shard.share_heartbeat(req, token, now, VIEW),
                           lambda code: {"ErrorCode": code})


async def _until(predicate) -> None:
    deadline = time.monotonic() + POLL_S
    while not predicate():
        assert time.monotonic() < deadline, "the share group's timer did not fire"
        await asyncio.sleep(0.01)


def test_share_members_expire_one_after_another(tmp_path):
    clock = [NOW]

    async def main():
        config = NodeConfig({"node.id": "1", "offsets.topic.num.partitions": "1"})
        log = Log.open(tmp_path / f"{OFFSETS_TOPIC}-0", LogConfig.from_props({}), NOW)
        part = Partition(OFFSETS_TOPIC, 0, b"\x05" * 16, log, leader_id=1, leader_epoch=1)
        lead(part, min_isr=1)
        coordinator = GroupCoordinator(config, Replicas(), lambda: clock[0])
        coordinator.on_leader(part)
        while coordinator.locate("s")[1] == E.COORDINATOR_LOAD_IN_PROGRESS:
            await asyncio.sleep(0)
        try:
            assert (await _heartbeat(coordinator, "a", ["t"]))["ErrorCode"] == E.NONE
            clock[0] = NOW + 1000
            assert (await _heartbeat(coordinator, "b", ["t"]))["ErrorCode"] == E.NONE
            shard = coordinator.locate("s")[0].state
            clock[0] = NOW + SESSION_MS             # a's deadline, not b's
            assert (await _heartbeat(coordinator, "c", None))["ErrorCode"] == E.INVALID_REQUEST   # arms at once
            await _until(lambda: list(shard.share_groups["s"].members) == ["b"])
            clock[0] = NOW + 1000 + SESSION_MS      # b's deadline: its timer was armed when a expired
            await _until(lambda: not shard.share_groups["s"].members)       # an empty share group stays
        finally:
            await coordinator.close()
    asyncio.run(main())


def test_a_loaded_share_member_expires_without_any_request(tmp_path):
    """A new coordinator arms the timers of the share groups it loads: a member that died with the old
    coordinator is removed at the load plus its session timeout, with no heartbeat to arm it."""
    clock = [NOW]
    short = 300                             # group.share.session.timeout.ms, for a real timer to fire soon

    async def main():
        config = NodeConfig({"node.id": "1", "offsets.topic.num.partitions": "1",
                             "group.share.min.session.timeout.ms": "100", "group.share.session.timeout.ms": str(short)})
        log = Log.open(tmp_path / f"{OFFSETS_TOPIC}-0", LogConfig.from_props({}), NOW)
        part = Partition(OFFSETS_TOPIC, 0, b"\x05" * 16, log, leader_id=1, leader_epoch=1)
        lead(part, min_isr=1)
        old = GroupCoordinator(config, Replicas(), lambda: clock[0])
        old.on_leader(part)
        while old.locate("s")[1] == E.COORDINATOR_LOAD_IN_PROGRESS:
            await asyncio.sleep(0)
        assert (await _heartbeat(old, "a", ["t"]))["ErrorCode"] == E.NONE
        await old.close()
        clock[0] = NOW + 60_000                 # long past a's old deadline: only the load's counts
        new = GroupCoordinator(config, Replicas(), lambda: clock[0])
        new.on_leader(part)
        try:
            while new.locate("s")[1] == E.COORDINATOR_LOAD_IN_PROGRESS:
                await asyncio.sleep(0)
            hosted = new.locate("s")[0]
            assert list(hosted.state.share_groups["s"].members) == ["a"] and "s" in hosted.timers
            clock[0] += short                   # the load plus the session timeout
            await _until(lambda: not hosted.state.share_groups["s"].members)
        finally:
            await new.close()
    asyncio.run(main())
