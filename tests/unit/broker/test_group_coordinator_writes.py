"""The group coordinator shell's writes to __consumer_offsets: one batch per event-loop round,
and what a failed write does without a failover.

The writes of the requests that arrive together (several groups of one partition) are one
append, and each is answered once the high watermark passes that batch (Kafka's
CoordinatorRuntime).

A write is refused before it is appended when the partition's ISR is below
min.insync.replicas (Kafka's NOT_ENOUGH_REPLICAS, which a group request answers
as COORDINATOR_NOT_AVAILABLE), or is appended and not committed in time.  The
writes after it must not inherit that failure (they did, for good, until the
coordinator moved), a refused write must not stay in the shard's memory, and a
SyncGroup whose assignment was not written must not leave the group Stable on an
assignment a new coordinator would not know of.
"""
import asyncio

import pytest
from leaders import lead

from tierlog.broker.group_coordinator import OFFSETS_TOPIC, GroupCoordinator
from tierlog.broker.partition import AppendOrigin, Partition
from tierlog.config import NodeConfig
from tierlog.group import GroupState
from tierlog.metadata import PartitionInfo
from tierlog.protocol.errors import ErrorCode as E
from tierlog.records import decode_batches
from tierlog.storage import Log, LogConfig

NOW = 1_700_000_000_000


class Replicas:
    """``ReplicaManager.append_records`` over the real ``Partition.append_as_leader``: the ISR is the
    leader and follower 2 (min.insync.replicas 2).  With ``refuse`` set the ISR has shrunk to the
    leader alone, so the partition refuses the write before the log (NOT_ENOUGH_REPLICAS); with
    ``time_out`` set follower 2 does not fetch and the write is not committed in time; else it
    fetches the whole log at once."""

    def __init__(self):
        self.refuse = self.time_out = self.hold = False
        self.batches: list[bytes] = []          # every batch appended, in order
        self._partition_epoch = 0

    def set_isr(self, part, isr):
        self._partition_epoch += 1
        part.update_leader(PartitionInfo(0, 1, 1, (1, 2), isr, self._partition_epoch), -1, frozenset(), NOW)

    def append_records(self, part, records, origin, required_acks, timeout_ms):
        assert origin is AppendOrigin.COORDINATOR and required_acks == -1
        self.set_isr(part, (1,) if self.refuse else (1, 2))
        waiter = asyncio.get_running_loop().create_future()
        outcome = part.append_as_leader(records, origin, required_acks, NOW, waiter, timeout_ms)
        if not outcome.appended:
            return outcome, None
        self.batches.append(bytes(records))
        if self.hold:                           # parked until ``replicate``, as ReplicaManager parks it
            return outcome, waiter
        if self.time_out:
            waiter.set_result(E.REQUEST_TIMED_OUT)
        else:
            follower_fetch(part)
            assert part.high_watermark == outcome.end_offset
            waiter.set_result(E.NONE)
        return outcome, waiter


def follower_fetch(part, offset: int | None = None) -> None:
    """Follower 2 fetches the leader's log up to ``offset`` (its end by default): the high watermark follows."""
    end = part.log_end_offset if offset is None else offset
    return part.on_follower_fetch(2, end, NOW)


def replicate(part, offset: int | None = None) -> None:
    """``follower_fetch``, then the parked acks=all waiters the high watermark passed are answered
    (``ReplicaManager._apply``)."""
    for c in follower_fetch(part, offset).acks:
        c.token.set_result(c.error)


def _coordinator(tmp_path, log_props: dict | None = None, linger_ms: int = 0) -> tuple[GroupCoordinator, Replicas]:
    """Without ``linger_ms`` a batch is the writes of one event-loop round."""
    config = NodeConfig({"node.id": "1", "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
                         "group.coordinator.append.linger.ms": str(linger_ms)})
    log = Log.open(tmp_path / f"{OFFSETS_TOPIC}-0", LogConfig.from_props(log_props or {}), NOW)
    part = Partition(OFFSETS_TOPIC, 0, b"\x05" * 16, log, leader_id=1, leader_epoch=1)
    lead(part, min_isr=2)
    replicas = Replicas()
    coordinator = GroupCoordinator(config, replicas, lambda: NOW)
    coordinator.on_leader(part)
    return coordinator, replicas


def _run(tmp_path, scenario, log_props: dict | None = None, linger_ms: int = 0) -> None:
    """``scenario(coordinator, replicas)`` on a loaded coordinator, closed after."""
    async def main():
        coordinator, replicas = _coordinator(tmp_path, log_props, linger_ms)
        await _loaded(coordinator)
        try:
            await scenario(coordinator, replicas)
        finally:
            await coordinator.close()
    asyncio.run(main())


async def _loaded(coordinator) -> None:
    while coordinator.locate("g")[1] == E.COORDINATOR_LOAD_IN_PROGRESS:
        await asyncio.sleep(0)


def _commit(coordinator, offset: int, group: str = "g"):
    req = {"GroupId": group, "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
           "RetentionTimeMs": -1, "version": 8,
           "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": offset,
                                                    "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]}
    return coordinator.run(group, lambda shard, token, now: shard.commit_offsets(req, token, now),
                           lambda code: {"Topics": [{"Name": "t", "Partitions": [
                               {"PartitionIndex": 0, "ErrorCode": code}]}]})


def _code(resp) -> int:
    return resp["Topics"][0]["Partitions"][0]["ErrorCode"]


def test_a_failed_write_does_not_fail_the_writes_after_it(tmp_path):
    async def scenario(coordinator, replicas):
        replicas.time_out = True
        assert _code(await _commit(coordinator, 5)) == E.COORDINATOR_NOT_AVAILABLE
        replicas.time_out = False
        assert [_code(await _commit(coordinator, o)) for o in (6, 7)] == [E.NONE, E.NONE]
        assert coordinator.locate("g")[0].state.offsets.get("g", "t", 0).offset == 7
    _run(tmp_path, scenario)


def test_a_commit_that_timed_out_takes_effect_once_the_high_watermark_passes_it(tmp_path):
    async def scenario(coordinator, replicas):
        replicas.time_out = True
        assert _code(await _commit(coordinator, 5)) == E.COORDINATOR_NOT_AVAILABLE
        hosted = coordinator.locate("g")[0]
        assert hosted.state.offsets.get("g", "t", 0) is None
        follower_fetch(hosted.part)         # the follower caught up
        for _ in range(100):                # the late offsets are checked every LATE_CHECK_MS
            if hosted.state.offsets.get("g", "t", 0) is not None:
                break
            await asyncio.sleep(0.02)
        assert hosted.state.offsets.get("g", "t", 0).offset == 5
    _run(tmp_path, scenario)


def test_a_refused_write_reloads_the_shard_from_the_log(tmp_path):
    async def scenario(coordinator, replicas):
        assert _code(await _commit(coordinator, 4)) == E.NONE
        replicas.refuse = True
        assert _code(await _commit(coordinator, 5)) == E.COORDINATOR_NOT_AVAILABLE
        assert coordinator.locate("g")[1] == E.COORDINATOR_LOAD_IN_PROGRESS
        replicas.refuse = False
        await _loaded(coordinator)
        assert coordinator.locate("g")[0].state.offsets.get("g", "t", 0).offset == 4
        assert _code(await _commit(coordinator, 6)) == E.NONE
    _run(tmp_path, scenario)


def _join(coordinator, member: str):
    req = {"GroupId": "g", "SessionTimeoutMs": 10_000, "RebalanceTimeoutMs": 10_000, "MemberId": member,
           "GroupInstanceId": None, "ProtocolType": "consumer", "Protocols": [{"Name": "range", "Metadata": b"m"}],
           "client_id": "c", "client_host": "/127.0.0.1", "version": 5}
    return coordinator.run("g", lambda shard, token, now: shard.join(req, token, now),
                           lambda code: {"ErrorCode": code})


async def _stable_member(coordinator) -> tuple[str, int]:
    member = (await _join(coordinator, ""))["MemberId"]
    joined = await _join(coordinator, member)
    assert joined["ErrorCode"] == E.NONE and joined["Leader"] == member
    return member, joined["GenerationId"]


def _sync(coordinator, member: str, generation: int):
    sync = {"GroupId": "g", "GenerationId": generation, "MemberId": member,
            "GroupInstanceId": None, "Assignments": [{"MemberId": member, "Assignment": b"p0"}]}
    return coordinator.run("g", lambda shard, token, now: shard.sync(sync, token, now),
                           lambda code: {"ErrorCode": code, "Assignment": b""})


def _heartbeat(coordinator, member: str, generation: int):
    beat = {"GroupId": "g", "GenerationId": generation, "MemberId": member, "GroupInstanceId": None}
    return coordinator.run("g", lambda shard, token, now: shard.heartbeat(beat, token, now),
                           lambda code: {"ErrorCode": code})


def test_an_assignment_not_committed_in_time_is_taken_back_and_the_group_rebalances(tmp_path):
    async def scenario(coordinator, replicas):
        member, generation = await _stable_member(coordinator)
        replicas.time_out = True
        assert (await _sync(coordinator, member, generation))["ErrorCode"] == E.COORDINATOR_NOT_AVAILABLE
        await asyncio.sleep(0)
        group = coordinator.locate("g")[0].state.groups["g"]
        assert group.state is GroupState.PREPARING_REBALANCE
        assert group.members[member].assignment == b""
        assert (await _heartbeat(coordinator, member, generation))["ErrorCode"] == E.REBALANCE_IN_PROGRESS
    _run(tmp_path, scenario)


def test_a_member_whose_assignment_was_refused_must_join_again(tmp_path):
    async def scenario(coordinator, replicas):
        member, generation = await _stable_member(coordinator)
        replicas.refuse = True
        assert (await _sync(coordinator, member, generation))["ErrorCode"] == E.COORDINATOR_NOT_AVAILABLE
        replicas.refuse = False
        await _loaded(coordinator)          # nothing of the group reached the log
        assert (await _heartbeat(coordinator, member, generation))["ErrorCode"] == E.UNKNOWN_MEMBER_ID
    _run(tmp_path, scenario)


GROUPS = ("g", "h", "i")


def _batches(replicas) -> list[list]:
    """The records of each batch appended: [(key, value), ...] per batch."""
    return [[(r.key, r.value) for _, records in decode_batches(b) for r in records] for b in replicas.batches]


async def _one_round(*calls) -> list[asyncio.Task]:
    """Start ``calls`` (coroutines) together, as requests of one event-loop round, and let the round end."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    for _ in range(3):
        await asyncio.sleep(0)
    return tasks


def test_the_commits_of_one_round_are_one_append_answered_once_the_high_watermark_passes_it(tmp_path):
    async def scenario(coordinator, replicas):
        replicas.hold = True
        tasks = await _one_round(*(_commit(coordinator, 5, g) for g in GROUPS))
        assert [len(b) for b in _batches(replicas)] == [3]      # three groups' commits, one batch
        part = coordinator.locate("g")[0].part
        replicate(part, part.log_end_offset - 1)                # the high watermark short of the batch's end
        await asyncio.sleep(0)
        assert not any(t.done() for t in tasks)
        replicate(part)
        assert [_code(await t) for t in tasks] == [E.NONE] * 3
        shard = coordinator.locate("g")[0].state
        assert [shard.offsets.get(g, "t", 0).offset for g in GROUPS] == [5, 5, 5]
    _run(tmp_path, scenario)


def test_a_round_while_a_batch_is_in_flight_is_the_next_append_answered_after_it(tmp_path):
    async def scenario(coordinator, replicas):
        replicas.hold = True
        first = await _one_round(_commit(coordinator, 5, "g"))
        second = await _one_round(_commit(coordinator, 6, "h"), _commit(coordinator, 6, "i"))
        assert [len(b) for b in _batches(replicas)] == [1, 2]   # appended without waiting for the first
        replicate(coordinator.locate("g")[0].part)
        assert [_code(await t) for t in first + second] == [E.NONE] * 3
    _run(tmp_path, scenario)


def test_writes_within_the_linger_of_the_first_are_one_append(tmp_path):
    """group.coordinator.append.linger.ms: the batch opened by the first write takes the writes of
    later rounds until the linger ends (1 s here, so a slow machine cannot end it early)."""
    async def scenario(coordinator, replicas):
        replicas.hold = True
        first = await _one_round(_commit(coordinator, 5, "g"))
        second = await _one_round(_commit(coordinator, 6, "h"))
        assert _batches(replicas) == []                         # still lingering
        while not _batches(replicas):
            await asyncio.sleep(0.05)
        assert [len(b) for b in _batches(replicas)] == [2]      # two rounds, one batch
        replicate(coordinator.locate("g")[0].part)
        assert [_code(await t) for t in first + second] == [E.NONE] * 2
    _run(tmp_path, scenario, linger_ms=1000)


def test_a_round_larger_than_max_message_bytes_is_split_into_batches_that_fit(tmp_path):
    async def scenario(coordinator, replicas):
        tasks = await _one_round(*(_commit(coordinator, 5, g) for g in GROUPS))
        assert [_code(await t) for t in tasks] == [E.NONE] * 3
        assert [len(b) for b in _batches(replicas)] == [2, 1]
        assert all(len(b) <= 200 for b in replicas.batches)
    _run(tmp_path, scenario, {"max.message.bytes": "200"})


def test_a_refused_append_fails_every_commit_in_its_batch(tmp_path):
    async def scenario(coordinator, replicas):
        replicas.refuse = True
        tasks = await _one_round(*(_commit(coordinator, 5, g) for g in GROUPS))
        assert [_code(await t) for t in tasks] == [E.COORDINATOR_NOT_AVAILABLE] * 3
        assert replicas.batches == []
        replicas.refuse = False
        await _loaded(coordinator)
        assert [_code(await _commit(coordinator, 6, g)) for g in GROUPS] == [E.NONE] * 3
    _run(tmp_path, scenario)


def test_a_batch_not_committed_in_time_fails_every_commit_in_it(tmp_path):
    async def scenario(coordinator, replicas):
        replicas.time_out = True
        tasks = await _one_round(*(_commit(coordinator, 5, g) for g in GROUPS))
        assert [_code(await t) for t in tasks] == [E.COORDINATOR_NOT_AVAILABLE] * 3
        assert [len(b) for b in _batches(replicas)] == [3]
    _run(tmp_path, scenario)


def test_a_batch_in_flight_when_leadership_moves_answers_not_coordinator(tmp_path):
    async def scenario(coordinator, replicas):
        replicas.hold = True
        tasks = await _one_round(*(_commit(coordinator, 5, g) for g in GROUPS))
        coordinator.on_follower(coordinator.locate("g")[0].part)
        assert [_code(await t) for t in tasks] == [E.NOT_COORDINATOR] * 3
    _run(tmp_path, scenario)


def _txn_commit(coordinator, offset: int, group: str, metadata: str = ""):
    req = {"TransactionalId": "tx", "GroupId": group, "ProducerId": 7, "ProducerEpoch": 0, "GenerationId": -1,
           "MemberId": "", "GroupInstanceId": None,
           "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": offset,
                                                    "CommittedLeaderEpoch": -1, "CommittedMetadata": metadata}]}]}
    return coordinator.run(group, lambda shard, token, now: shard.txn_commit_offsets(req, token, now),
                           lambda code: {"Topics": [{"Name": "t", "Partitions": [
                               {"PartitionIndex": 0, "ErrorCode": code}]}]})


def test_a_txn_offset_commit_is_a_transactional_batch_of_its_own_after_the_rounds_batch(tmp_path):
    async def scenario(coordinator, replicas):
        tasks = await _one_round(_commit(coordinator, 5, "g"), _txn_commit(coordinator, 9, "h"),
                                 _commit(coordinator, 5, "i"))
        assert [_code(await t) for t in tasks] == [E.NONE] * 3
        headers = [h for b in replicas.batches for h, _ in decode_batches(b)]
        assert [(h.is_transactional, h.producer_id) for h in headers] == [(False, -1), (True, 7), (False, -1)]
        shard = coordinator.locate("g")[0].state
        assert shard.offsets.get("h", "t", 0) is None           # until its transaction's marker commits it
        shard.complete_txn(7, True)
        assert shard.offsets.get("h", "t", 0).offset == 9
    _run(tmp_path, scenario)


def test_a_txn_offset_commit_without_records_appends_nothing(tmp_path):
    async def scenario(coordinator, replicas):
        resp = await _txn_commit(coordinator, 9, "h", metadata="x" * 5000)     # over offset.metadata.max.bytes
        assert _code(resp) == E.OFFSET_METADATA_TOO_LARGE
        assert replicas.batches == []
    _run(tmp_path, scenario)


@pytest.mark.parametrize(("image_leader", "expected"), [(1, E.COORDINATOR_LOAD_IN_PROGRESS), (3, E.NOT_COORDINATOR),
                                                        (-1, E.NOT_COORDINATOR)])
def test_a_group_of_a_partition_the_image_gives_this_broker_before_its_election_arrives(image_leader, expected):
    """FindCoordinator answers from the newest image, which is applied to the coordinators in slices:
    until the election reaches this coordinator, a request it will serve is LOAD_IN_PROGRESS
    (clients retry it here), not NOT_COORDINATOR (librdkafka's committed() gives up on that)."""
    config = NodeConfig({"node.id": "1", "offsets.topic.num.partitions": "1"})
    coordinator = GroupCoordinator(config, Replicas(), lambda: NOW, image_leader=lambda topic, index: image_leader)
    assert coordinator.locate("g") == (None, expected)
