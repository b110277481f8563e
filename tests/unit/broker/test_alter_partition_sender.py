"""AlterPartitionSender: one request in flight; items queued meanwhile go out together."""
import asyncio
import dataclasses

import pytest

from tierlog.broker.alter_partition_sender import AlterPartitionSender
from tierlog.net.tasks import TaskSet
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import AlterPartitionItem, IsrMember
from tierlog.replication.local_log_report import UNKNOWN_LOCAL_LOG

TID = b"\x07" * 16


def item(partition: int, leader_epoch: int = 1) -> AlterPartitionItem:
    return AlterPartitionItem(TID, partition, leader_epoch, 0, (IsrMember(1, 5, UNKNOWN_LOCAL_LOG),), "expand")


class Channel:
    """Answers each request when the test releases it; records what each request carried."""

    def __init__(self, fail: Exception | None = None):
        self.requests: list[list[int]] = []
        self.release = asyncio.Event()
        self.fail = fail

    async def send(self, api_key, body, timeout_s, version):
        parts = [p["PartitionIndex"] for t in body["Topics"] for p in t["Partitions"]]
        self.requests.append(parts)
        await self.release.wait()
        if self.fail:
            raise self.fail
        return {"ErrorCode": 0, "Topics": [{"TopicId": TID, "Partitions": [
            {"PartitionIndex": p, "ErrorCode": 0, "LeaderEpoch": 1, "PartitionEpoch": 1, "Isr": [1]}
            for p in parts]}]}


async def _run(channel: Channel, sends):
    tasks = TaskSet("test")
    sender = AlterPartitionSender(channel, 1, lambda: 5, 1.0, tasks)
    futs = [asyncio.ensure_future(sender.send(i)) for i in sends[:1]]
    await asyncio.sleep(0)              # the first request is in flight
    futs += [asyncio.ensure_future(sender.send(i)) for i in sends[1:]]
    await asyncio.sleep(0)
    channel.release.set()
    results = await asyncio.gather(*futs, return_exceptions=True)
    await tasks.close()
    return results


def test_items_queued_behind_a_request_go_out_in_one():
    channel = Channel()
    results = asyncio.run(_run(channel, [item(0), item(1), item(2), item(3)]))
    assert channel.requests == [[0], [1, 2, 3]]
    assert [error for error, _ in results] == [0, 0, 0, 0]
    assert [answer["PartitionIndex"] for _, answer in results] == [0, 1, 2, 3]


def test_a_newer_item_replaces_a_queued_one_for_the_same_partition():
    channel = Channel()
    results = asyncio.run(_run(channel, [item(0), item(1, leader_epoch=1), item(1, leader_epoch=2)]))
    assert channel.requests == [[0], [1]]
    assert results[1] == (ErrorCode.OPERATION_NOT_ATTEMPTED, {})
    assert results[2][0] == ErrorCode.NONE


def test_a_failed_request_fails_every_item_it_carried():
    channel = Channel(fail=TimeoutError("no answer"))
    results = asyncio.run(_run(channel, [item(0), item(1)]))
    assert all(isinstance(r, TimeoutError) for r in results)


def test_top_level_error_reaches_every_item():
    class Stale(Channel):
        async def send(self, *args):
            await super().send(*args)
            return {"ErrorCode": ErrorCode.STALE_BROKER_EPOCH, "Topics": []}

    results = asyncio.run(_run(Stale(), [item(0), item(1)]))
    assert results == [(ErrorCode.STALE_BROKER_EPOCH, {})] * 2


@pytest.mark.parametrize("n", [1, 5])
def test_every_item_is_answered(n):
    channel = Channel()
    results = asyncio.run(_run(channel, [item(i) for i in range(n)]))
    assert len(results) == n and sum(len(r) for r in channel.requests) == n


class Part:
    """Just enough of a Partition for ``propose``: it takes the answer or the failure."""

    topic, index = "t", 0

    def __init__(self):
        self.answers, self.failures = [], []

    def on_alter_partition_response(self, item, error, leader_epoch, partition_epoch, isr, now_ms):
        self.answers.append((error, leader_epoch, partition_epoch, isr))
        return "update"

    def on_alter_partition_failure(self, item, now_ms):
        self.failures.append(item)


def _propose(channel: Channel, reason: str = "expand"):
    async def scenario():
        tasks, part, applied = TaskSet("test"), Part(), []
        sender = AlterPartitionSender(channel, 1, lambda: 5, 1.0, tasks, clock_ms=lambda: 7)
        sender.propose(part, dataclasses.replace(item(0), reason=reason), lambda p, upd: applied.append(upd))
        await asyncio.sleep(0)
        channel.release.set()
        for _ in range(100):                # a few loop turns: the request, its answer, the partition's
            if part.answers or part.failures:
                break
            await asyncio.sleep(0)
        await tasks.close()
        return sender, part, applied
    return asyncio.run(scenario())


def test_a_proposal_hands_the_answer_to_the_partition_and_counts_isr_changes():
    sender, part, applied = _propose(Channel())
    assert part.answers == [(0, 1, 1, (1,))] and applied == ["update"]
    assert sender.isr_changes == {"shrink": 0, "expand": 1}
    sender, part, applied = _propose(Channel(), reason="report")        # a KIP-1303 report: not an ISR change
    assert sender.isr_changes == {"shrink": 0, "expand": 0} and applied == ["update"]


def test_a_failed_proposal_backs_the_partition_off():
    sender, part, applied = _propose(Channel(fail=TimeoutError("no answer")))
    assert len(part.failures) == 1 and not part.answers and not applied
