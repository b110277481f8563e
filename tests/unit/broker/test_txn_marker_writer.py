"""``txn_marker_writer``: the wire's markers become ``TxnMarker``s and back; a partition's markers
of several producers go in one append, each answered with its own code, and a marker waits for
the write's replication."""
import asyncio

from tierlog.broker.txn_marker_writer import TxnMarker, marker_of, result_of, write_markers
from tierlog.protocol.errors import ErrorCode

WIRE = {"ProducerId": 7, "ProducerEpoch": 2, "TransactionResult": True, "CoordinatorEpoch": 3,
        "TransactionVersion": 2, "Topics": [{"Name": "a", "PartitionIndexes": [0, 1]},
                                            {"Name": "b", "PartitionIndexes": [4]}]}


def test_the_wire_marker_and_its_answer():
    marker = marker_of(WIRE)
    assert marker == TxnMarker(7, 2, True, 3, 2, (("a", 0), ("a", 1), ("b", 4)))
    errors = {("a", 0): 0, ("a", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER, ("b", 4): 0}
    assert result_of(marker, errors) == {"ProducerId": 7, "Topics": [
        {"Name": "a", "Partitions": [{"PartitionIndex": 0, "ErrorCode": 0},
                                     {"PartitionIndex": 1, "ErrorCode": ErrorCode.NOT_LEADER_OR_FOLLOWER}]},
        {"Name": "b", "Partitions": [{"PartitionIndex": 4, "ErrorCode": 0}]}]}


class Replicas:
    """Appends markers: the second producer's is fenced; the write waits for replication."""

    def __init__(self):
        self.writes = []

    def append_markers(self, part, batches, timeout_ms):
        self.writes.append((part, len(batches)))
        fut = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(fut.set_result, ErrorCode.NONE)
        return [ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH][:len(batches)], fut


def test_one_append_per_partition_and_each_markers_code():
    def led(topic, index):
        return (None, ErrorCode.NOT_LEADER_OR_FOLLOWER) if topic == "b" else ((topic, index), ErrorCode.NONE)
    replicas, committed = Replicas(), []
    first = TxnMarker(7, 2, True, 3, 2, (("a", 0), ("b", 4)))
    second = TxnMarker(8, 1, False, 3, 2, (("a", 0),))
    errors = asyncio.run(write_markers(replicas, led, [first, second], 1000, 0,
                                       lambda part, pid, commit: committed.append((part, pid, commit))))
    assert replicas.writes == [(("a", 0), 2)]
    assert errors == [{("a", 0): ErrorCode.NONE, ("b", 4): ErrorCode.NOT_LEADER_OR_FOLLOWER},
                      {("a", 0): ErrorCode.INVALID_PRODUCER_EPOCH}]
    assert committed == [(("a", 0), 7, True)]


class SettledReplicas:
    """Appends markers whose replication each partition settles: at once within the append
    (``now``), or later from the loop, with that partition's code."""

    def __init__(self, now: dict, later: dict):
        self.now, self.later = now, later

    def append_markers(self, part, batches, timeout_ms):
        fut = asyncio.get_running_loop().create_future()
        if part in self.now:
            fut.set_result(self.now[part])
        else:
            asyncio.get_running_loop().call_soon(fut.set_result, self.later[part])
        return [ErrorCode.NONE] * len(batches), fut


def test_each_partition_answers_its_replications_code_whenever_it_settles():
    replicas = SettledReplicas(now={("a", 0): ErrorCode.NOT_ENOUGH_REPLICAS, ("a", 1): ErrorCode.NONE},
                               later={("a", 2): ErrorCode.REQUEST_TIMED_OUT, ("a", 3): ErrorCode.NONE})
    committed = []
    marker = TxnMarker(7, 2, True, 3, 2, (("a", 0), ("a", 1), ("a", 2), ("a", 3)))
    errors = asyncio.run(write_markers(replicas, lambda t, i: ((t, i), ErrorCode.NONE), [marker], 1000, 0,
                                       lambda part, pid, commit: committed.append(part)))
    assert errors == [{("a", 0): ErrorCode.NOT_ENOUGH_REPLICAS, ("a", 1): ErrorCode.NONE,
                       ("a", 2): ErrorCode.REQUEST_TIMED_OUT, ("a", 3): ErrorCode.NONE}]
    assert sorted(committed) == [("a", 1), ("a", 3)]        # only a committed marker reaches the groups


def test_a_lone_partition_settled_within_its_append_answers_that_code():
    replicas = SettledReplicas(now={("a", 0): ErrorCode.NOT_ENOUGH_REPLICAS}, later={})
    marker = TxnMarker(7, 2, True, 3, 2, (("a", 0),))

    async def answered():       # the answers as the handler encodes them, right when they return
        return [dict(e) for e in await write_markers(replicas, lambda t, i: ((t, i), ErrorCode.NONE), [marker],
                                                     1000, 0)]
    assert asyncio.run(answered()) == [{("a", 0): ErrorCode.NOT_ENOUGH_REPLICAS}]
