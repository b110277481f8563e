"""AlterPartitionReassignments (45) / ListPartitionReassignments (46) on the broker and a standby controller:
the answers without an active controller encode at every version."""
import pytest

from tierlog.broker.apis import REGISTRY
from tierlog.broker.apis.api_45_alter_partition_reassignments import (
    timed_out as alter_timed_out,
)
from tierlog.broker.apis.api_46_list_partition_reassignments import (
    timed_out as list_timed_out,
)
from tierlog.controller.quorum_controller import not_controller_response
from tierlog.protocol import ErrorCode, decode_response, encode_response

ALTER = {"TimeoutMs": 1, "AllowReplicationFactorChange": False, "Topics": [
    {"Name": "t", "Partitions": [{"PartitionIndex": 0, "Replicas": [4, 5]}, {"PartitionIndex": 2, "Replicas": None}]}]}


def _roundtrip(api_key, version, body):
    frame = b"".join(bytes(p) for p in encode_response(api_key, version, 5, body))
    return decode_response(api_key, version, frame)[1]


def test_registered_with_kafkas_versions():
    assert (REGISTRY[45].MIN_VERSION, REGISTRY[45].MAX_VERSION) == (0, 1)
    assert (REGISTRY[46].MIN_VERSION, REGISTRY[46].MAX_VERSION) == (0, 0)


@pytest.mark.parametrize("version", [0, 1])
def test_alter_times_out_partition_by_partition(version):
    got = _roundtrip(45, version, alter_timed_out(ALTER))
    assert got["ErrorCode"] == ErrorCode.REQUEST_TIMED_OUT
    parts = got["Responses"][0]["Partitions"]
    assert [(p["PartitionIndex"], p["ErrorCode"]) for p in parts] == [(0, ErrorCode.REQUEST_TIMED_OUT),
                                                                     (2, ErrorCode.REQUEST_TIMED_OUT)]
    assert _roundtrip(45, version, not_controller_response(45, version, ALTER))["ErrorCode"] == \
        ErrorCode.NOT_CONTROLLER


def test_list_times_out():
    body = {"TimeoutMs": 1, "Topics": None}
    assert _roundtrip(46, 0, list_timed_out(body))["ErrorCode"] == ErrorCode.REQUEST_TIMED_OUT
    assert _roundtrip(46, 0, not_controller_response(46, 0, body))["ErrorCode"] == ErrorCode.NOT_CONTROLLER
