"""AlterPartitionSender: one request in flight; items queued meanwhile go out together."""
import asyncio

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
