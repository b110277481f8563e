"""The partition leaders' way to the share coordinator (KIP-932; Kafka's DefaultStatePersister).

A share-partition's state lives on the leader of its ``__share_group_state`` partition (the key
"group:topicId:partition" hashed, ``ShareCoordinator.partition_for``).  That broker is found in
the metadata image; when it is this one the coordinator is called in process, otherwise over the
inter-broker route with Kafka's APIs: InitializeShareGroupState (83), ReadShareGroupState (84),
WriteShareGroupState (85), DeleteShareGroupState (86), ReadShareGroupStateSummary (87), one
share-partition per request (a leader's writes to one share-partition go one after another).

The coordinator moving or loading (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS), an unreachable node or a topic not created yet are retried with
backoff for at most ``SHARE_STATE_RETRY_MS``; then the last error is the answer.  ``missing_topic``
is called when ``__share_group_state`` does not exist (the caller creates it).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from tierlog.group.share_state_records import SharePartitionKey
from tierlog.net.client import DEFAULT_ROUTE, PeerRoute, PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

from .share_coordinator import SHARE_STATE_TOPIC, ShareCoordinator

__all__ = ["SHARE_STATE_RETRY_MS", "SharePersister"]

log = logging.getLogger(__name__)

SHARE_STATE_RETRY_MS = 10_000       # longest one share-state call retries a moving or loading coordinator
SHARE_STATE_REQUEST_TIMEOUT_S = 5.0
_BACKOFF_MS = (50, 100, 200, 400, 800)
_RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT})
_Call = Callable[[], Awaitable[tuple[int, dict[str, Any] | None]]]


class SharePersister:
    def __init__(self, node_id: int, image_fn: Callable, coordinator: ShareCoordinator,
                 missing_topic: Callable[[], None], clock_ms: Callable[[], int], route: PeerRoute = DEFAULT_ROUTE):
        self.node_id = node_id
        self._image_fn = image_fn
        self._coordinator = coordinator
        self._missing_topic = missing_topic
        self._clock_ms = clock_ms
        self._route = route
        self._peers = route.peers(f"tierlog-share-state-{node_id}")

    # -- Kafka's persister calls ------------------------------------------------------------------
    async def initialize(self, spk: SharePartitionKey, state_epoch: int, start_offset: int) -> int:
        fields = {"StateEpoch": state_epoch, "StartOffset": start_offset}
        error, _ = await self._call(spk, ApiKey.INITIALIZE_SHARE_GROUP_STATE, fields,
                                    lambda: _no_answer(self._coordinator.initialize_state(spk, state_epoch,
                                                                                          start_offset)))
        return error

    async def read(self, spk: SharePartitionKey, leader_epoch: int) -> tuple[int, dict[str, Any] | None]:
        """(error, {StateEpoch, StartOffset, StateBatches})."""
        return await self._call(spk, ApiKey.READ_SHARE_GROUP_STATE, {"LeaderEpoch": leader_epoch},
                                lambda: self._coordinator.read_state(spk, leader_epoch))

    async def write(self, spk: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: list[dict[str, Any]]) -> int:
        fields = {"StateEpoch": state_epoch, "LeaderEpoch": leader_epoch, "StartOffset": start_offset,
                  "StateBatches": batches}
        error, _ = await self._call(spk, ApiKey.WRITE_SHARE_GROUP_STATE, fields,
                                    lambda: _no_answer(self._coordinator.write_state(
                                        spk, state_epoch, leader_epoch, start_offset, batches)))
        return error

    async def delete(self, spk: SharePartitionKey) -> int:
        error, _ = await self._call(spk, ApiKey.DELETE_SHARE_GROUP_STATE, {},
                                    lambda: _no_answer(self._coordinator.delete_state(spk)))
        return error

    async def read_summary(self, spk: SharePartitionKey) -> tuple[int, dict[str, Any] | None]:
        """(error, {StateEpoch, LeaderEpoch, StartOffset})."""
        return await self._call(spk, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, {"LeaderEpoch": -1},
                                lambda: self._coordinator.read_state_summary(spk))

    # -- routing and retries ------------------------------------------------------------------------
    async def _call(self, spk: SharePartitionKey, api_key: int, fields: dict[str, Any],
                    local: _Call) -> tuple[int, dict[str, Any] | None]:
        deadline = self._clock_ms() + SHARE_STATE_RETRY_MS
        attempt = 0
        while True:
            leader = self._coordinator_node(spk)
            if leader == self.node_id:
                error, answer = await local()
            elif leader < 0:
                error, answer = ErrorCode.COORDINATOR_NOT_AVAILABLE, None
            else:
                error, answer = await self._remote(leader, spk, api_key, fields)
            if error not in _RETRIABLE or self._clock_ms() >= deadline:
                return error, answer
            await asyncio.sleep(_BACKOFF_MS[min(attempt, len(_BACKOFF_MS) - 1)] / 1000)
            attempt += 1

    def _coordinator_node(self, spk: SharePartitionKey) -> int:
        topic = self._image_fn().topics.get(SHARE_STATE_TOPIC)
        if topic is None:
            self._missing_topic()
            return -1
        index = self._coordinator.partition_for(spk)
        return topic.partitions[index].leader if index < len(topic.partitions) else -1

    async def _remote(self, node: int, spk: SharePartitionKey, api_key: int,
                      fields: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        body = {"GroupId": spk.group,
                "Topics": [{"TopicId": spk.topic_id, "Partitions": [{"Partition": spk.partition, **fields}]}]}
        try:
            broker = self._image_fn().brokers.get(node)
            address = self._route.address(broker) if broker is not None else None
            if address is None:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
            self._peers.set_address(node, *address)
            resp = await self._peers.request(node, api_key, body, SHARE_STATE_REQUEST_TIMEOUT_S, 0)
        except (PeerUnavailable, TimeoutError, OSError) as e:
            log.info("share coordinator at node %d unreachable for %s: %s", node, spk, e)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        for result in resp["Results"]:
            for p in result["Partitions"]:
                return p["ErrorCode"], p
        return ErrorCode.UNKNOWN_SERVER_ERROR, None

    def close(self) -> None:
        self._peers.close()


async def _no_answer(call: Awaitable[int]) -> tuple[int, None]:
    return await call, None
