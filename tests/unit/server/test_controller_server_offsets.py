"""ControllerServer hands records to Raft in the order the controller counted them.

The controller predicts each record's offset (a broker's epoch *is* an offset),
so a tick's records must reach Raft before the next request's; a tick that
proposed from a task let a request overtake it ("records landed at 11, the
controller expected 12", seen under load in test_up).
"""
import asyncio
import random
from types import SimpleNamespace

from tierlog.controller.controller_config import ControllerConfig
from tierlog.controller.quorum_controller import QuorumController
from tierlog.metadata.image import MetadataImage
from tierlog.server.applied_offset import AppliedOffset
from tierlog.server.controller_server import ControllerServer

BROKER_REGISTRATION = 62
REGISTRATION = {"BrokerId": 4, "ClusterId": "c1", "IncarnationId": bytes(range(16)), "Listeners": [
    {"Name": "PLAINTEXT", "Host": "127.0.0.1", "Port": 9092, "SecurityProtocol": 0}], "Features": [], "Rack": None,
    "IsMigratingZkBroker": False, "LogDirs": [], "PreviousBrokerEpoch": -1}


class FakeDriver:
    """Raft as far as the server sees it: offsets given in propose order; everything commits at once."""

    def __init__(self):
        self.end = 0
        self.node = SimpleNamespace(log=self)

    @property
    def end_offset(self):                       # node.log.end_offset
        return self.end

    def propose(self, records, epoch=None):
        self.end += len(records)
        return self.end - 1


def _active_server(driver):
    qc = QuorumController(1, ControllerConfig(cluster_id="c1", max_idle_interval_ms=1), random.Random(1), 0)
    qc.on_leader_change(True, MetadataImage.empty("c1"), next_offset=0)
    applied = AppliedOffset()
    applied.advance(1 << 62)                    # everything commits and applies at once
    return ControllerServer(1, driver, applied, qc), qc


def test_a_tick_and_a_request_land_at_the_offsets_the_controller_counted():
    async def scenario():
        driver = FakeDriver()
        server, qc = _active_server(driver)
        server._tick()                         # an idle controller writes a NoOpRecord
        assert qc.next_offset == 1
        response = await server.submit(BROKER_REGISTRATION, 3, REGISTRATION)
        assert driver.end == qc.next_offset, "every record the controller counted reached Raft"
        return response
    response = asyncio.run(scenario())
    assert response["ErrorCode"] == 0 and response["BrokerEpoch"] == 1, response   # the epoch is its offset


def test_a_record_raft_wrote_on_its_own_is_skipped_by_the_controllers_next_one():
    """KIP-853: the Raft core writes a voter's endpoint update when that voter's Fetch reaches
    the leader's log end (raft/voter_changes.py), an offset the controller did not count."""
    async def scenario():
        driver = FakeDriver()
        server, qc = _active_server(driver)
        driver.end += 1                         # the VotersRecord at offset 0
        return await server.submit(BROKER_REGISTRATION, 3, REGISTRATION)
    response = asyncio.run(scenario())
    assert response["ErrorCode"] == 0 and response["BrokerEpoch"] == 1, response
