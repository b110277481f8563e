"""Metadata (3) auto-creates a topic in the background: the broker owns that task and stops it on close."""
import asyncio
from types import SimpleNamespace

from tierlog.broker.apis import api_03_metadata
from tierlog.net.tasks import TaskSet


class _SlowChannel:
    def __init__(self):
        self.sent = asyncio.Event()
        self.cancelled: list[str] = []

    async def send(self, api_key, body, timeout_s, version):
        self.sent.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(body["Topics"][0]["Name"])
            raise


def test_the_create_request_is_a_task_of_the_broker_cancelled_on_close():
    async def main():
        broker = SimpleNamespace(controller_channel=_SlowChannel(), background=TaskSet("broker"))
        api_03_metadata.auto_create(broker, "fresh")
        owned = len(broker.background)
        await broker.controller_channel.sent.wait()
        await broker.background.close()
        return owned, broker.controller_channel.cancelled, len(broker.background)
    assert asyncio.run(main()) == (1, ["fresh"], 0)
