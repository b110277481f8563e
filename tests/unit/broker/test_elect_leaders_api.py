"""ElectLeaders (43) on the broker: the answer when no controller answers, at every version."""
import pytest

from tierlog.broker.apis import REGISTRY
from tierlog.broker.apis.api_43_elect_leaders import timed_out
from tierlog.protocol import ErrorCode, decode_response, encode_response


def _roundtrip(version, body):
    frame = b"".join(bytes(p) for p in encode_response(43, version, 5, body))
    return decode_response(43, version, frame)[1]


def test_registered_with_every_version():
    module = REGISTRY[43]
    assert (module.MIN_VERSION, module.MAX_VERSION) == (0, 2)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_named_partitions_time_out_one_by_one(version):
    body = timed_out({"ElectionType": 0, "TopicPartitions": [{"Topic": "t", "Partitions": [0, 3]}], "TimeoutMs": 1})
    got = _roundtrip(version, body)
    codes = [(r["PartitionId"], r["ErrorCode"]) for r in got["ReplicaElectionResults"][0]["PartitionResult"]]
    assert codes == [(0, ErrorCode.REQUEST_TIMED_OUT), (3, ErrorCode.REQUEST_TIMED_OUT)]
    if version >= 1:
        assert got["ErrorCode"] == 0


@pytest.mark.parametrize("version", [1, 2])
def test_every_partition_times_out_as_a_whole(version):
    got = _roundtrip(version, timed_out({"ElectionType": 1, "TopicPartitions": None, "TimeoutMs": 1}))
    assert got["ErrorCode"] == ErrorCode.REQUEST_TIMED_OUT and got["ReplicaElectionResults"] == []
