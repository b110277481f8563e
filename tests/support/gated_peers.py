"""A fake inter-broker route for the senders that batch requests per node: one peer node whose
requests are recorded and held until the test opens ``gate``, then answered by ``answer(body)``
(or refused with a connection reset while ``down``)."""
from __future__ import annotations

import asyncio
from collections.abc import Callable


class GatedPeers:
    def __init__(self, node_id: int, api_key: int, answer: Callable[[dict], dict]):
        self.node_id = node_id
        self.api_key = api_key
        self.answer = answer
        self.requests: list[tuple[int, dict]] = []      # (version, body) in the order sent
        self.gate = asyncio.Event()
        self.down = False

    def set_address(self, node_id, host, port):
        pass

    async def request(self, node_id, api_key, body, timeout_s, version):
        assert (node_id, api_key) == (self.node_id, self.api_key)
        self.requests.append((version, body))
        await self.gate.wait()
        if self.down:
            raise ConnectionResetError("the peer went away")
        return self.answer(body)

    def close(self):
        pass


class GatedRoute:
    """The route handing out one ``GatedPeers``, at a fixed address."""

    def __init__(self, peers: GatedPeers):
        self.p = peers

    def address(self, broker):
        return ("127.0.0.1", 9092)

    def peers(self, client_id):
        return self.p
