"""A controller driven by hand with a fake clock, for the controller tests."""
import random

from tierlog.controller.controller_config import ControllerConfig
from tierlog.controller.quorum_controller import QuorumController
from tierlog.metadata.image import MetadataImage


def incarnation(broker_id: int, n: int = 0) -> bytes:
    return bytes([broker_id, n] + [7] * 14)


def registration(broker_id: int, rack=None, n: int = 0, cluster_id="c1") -> dict:
    return {"BrokerId": broker_id, "ClusterId": cluster_id, "IncarnationId": incarnation(broker_id, n),
            "Listeners": [{"Name": "PLAINTEXT", "Host": "127.0.0.1", "Port": 9000 + broker_id, "SecurityProtocol": 0}],
            "Features": [], "Rack": rack, "IsMigratingZkBroker": False, "LogDirs": [], "PreviousBrokerEpoch": -1}


def heartbeat(broker_id, epoch, offset, want_fence=False, want_shutdown=False) -> dict:
    return {"BrokerId": broker_id, "BrokerEpoch": epoch, "CurrentMetadataOffset": offset,
            "WantFence": want_fence, "WantShutDown": want_shutdown, "OfflineLogDirs": []}


class Harness:
    def __init__(self, **config):
        config.setdefault("cluster_id", "c1")
        config.setdefault("max_idle_interval_ms", 0)
        self.now = 0
        self.qc = QuorumController(3000, ControllerConfig(**config), random.Random(42), self.now)
        self.qc.on_leader_change(True, MetadataImage.empty("c1"), next_offset=0)
        self.epochs = {}
        self.written = []           # every record the controller wrote, in log order

    def call(self, api_key, version, request, commit=True):
        result = self.qc.handle(api_key, version, request, self.now)
        self.written.extend(result.records)
        if commit and result.records:
            self.qc.on_commit(result.last_offset)
        return result

    def register(self, broker_id, rack=None, n=0):
        r = self.call(62, 3, registration(broker_id, rack, n))
        assert r.response["ErrorCode"] == 0, r.response
        self.epochs[broker_id] = r.response["BrokerEpoch"]
        return r

    def heartbeat(self, broker_id, offset=None, **kw):
        offset = self.qc.next_offset - 1 if offset is None else offset
        return self.call(63, 1, heartbeat(broker_id, self.epochs[broker_id], offset, **kw))

    def start_brokers(self, n, racks=None):
        for b in range(1, n + 1):
            self.register(b, None if racks is None else f"r{b % racks}")
        for b in range(1, n + 1):
            r = self.heartbeat(b)
            assert r.response["IsFenced"] is False, r.response

    def create_topic(self, name, partitions=1, rf=1, configs=None, version=7):
        req = {"Topics": [{"Name": name, "NumPartitions": partitions, "ReplicationFactor": rf, "Assignments": [],
                           "Configs": [{"Name": k, "Value": v} for k, v in (configs or {}).items()]}],
               "timeoutMs": 1000, "validateOnly": False}
        return self.call(19, version, req)
