"""The part of a broker the Fetch handler (``broker/apis/api_01_fetch``) uses, for handler tests
without a node: partitions by key, a real fetch session cache, no ACLs, no remote storage."""
from __future__ import annotations

import random
from types import SimpleNamespace

from tierlog.broker.fetch_session import FetchSessionCache
from tierlog.protocol.errors import ErrorCode


class FakeReplicas:
    """The replica manager's part the handler calls; subclasses say what a follower fetch and a park do."""

    def __init__(self, parts):
        self.parts = {p.key: p for p in parts}

    def get(self, topic, index):
        return self.parts.get((topic, index))

    def apply_round(self, moved, session_id=0):
        pass

    def on_follower_fetch(self, part, replica_id, fetched, epoch, moved):
        return ErrorCode.NONE

    def on_replica_fetch(self, replica_id):
        pass

    def must_answer_now(self, replica_id, holds):
        return False

    async def wait(self, keys, timeout_s, replica_id=None, view=None):     # the fetch purgatory's
        pass


class FakeBroker:
    node_id, remote, fetch_max_bytes, fetch_wait_max_ms = 1, None, 1 << 20, 500
    authorizer = None       # no ACL checks

    def __init__(self, replicas: FakeReplicas):
        self.replicas = replicas
        self.fetch_sessions = FetchSessionCache(10, random.Random(1))
        self.image = SimpleNamespace(topics={}, brokers={})

    @property
    def fetch_purgatory(self):
        """The fake replicas also park fetches (``wait``)."""
        return self.replicas

    def led_partition(self, topic, index):
        part = self.replicas.get(topic, index)
        return (part, ErrorCode.NONE) if part else (None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def endpoint(self, node_id):
        return None
