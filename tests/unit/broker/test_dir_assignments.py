"""The broker's AssignReplicasToDirs queue (KIP-858, Kafka's AssignmentsManager), sans-IO."""
from tierlog.broker.dir_assignments import MAX_ASSIGNMENTS_PER_REQUEST, DirAssignments
from tierlog.metadata.directories import UNASSIGNED
from tierlog.metadata.image import MetadataImage, PartitionInfo, TopicInfo
from tierlog.protocol.errors import ErrorCode

TID = b"\x01" * 16
DIR_A, DIR_B = b"\x0a" * 16, b"\x0b" * 16


def _image(n=2, dirs=(UNASSIGNED, DIR_A)):
    parts = tuple(PartitionInfo(i, 2, 0, (2, 1), (2, 1), directories=dirs) for i in range(n))
    return MetadataImage.empty("c").with_topic(TopicInfo("t", TID, parts))


def _answer(request, code=ErrorCode.NONE):
    return {"ErrorCode": 0, "Directories": [
        {"Id": d["Id"], "Topics": [{"TopicId": t["TopicId"], "Partitions": [
            {"PartitionIndex": p["PartitionIndex"], "ErrorCode": code} for p in t["Partitions"]]}
            for t in d["Topics"]]} for d in request["Directories"]]}


def test_queues_only_what_the_image_does_not_show_and_sends_it_grouped():
    image = _image()
    a = DirAssignments(node_id=2)
    assert a.observe(TID, image.topics["t"].partitions[0], DIR_B)
    assert a.observe(TID, image.topics["t"].partitions[1], DIR_B)
    assert not a.observe(TID, PartitionInfo(5, 2, 0, (2,), (2,), directories=(DIR_B,)), DIR_B)
    req = a.next_request(image, broker_epoch=7, now_ms=0)
    assert req == {"BrokerId": 2, "BrokerEpoch": 7, "Directories": [
        {"Id": DIR_B, "Topics": [{"TopicId": TID, "Partitions": [{"PartitionIndex": 0}, {"PartitionIndex": 1}]}]}]}
    assert a.next_request(image, 7, 0) is None                  # one in flight
    a.handle_response(_answer(req), now_ms=1)
    assert a.queued == 0 and a.next_deadline_ms() is None


def test_failures_are_retried_after_a_growing_backoff_and_obsolete_ones_dropped():
    image = _image()
    a = DirAssignments(node_id=2)
    a.observe(TID, image.topics["t"].partitions[0], DIR_B)
    a.next_request(image, 7, 0)
    a.handle_failure(now_ms=10)
    assert a.next_deadline_ms() == 110 and a.next_request(image, 7, 50) is None
    req = a.next_request(image, 7, 110)
    a.handle_response({"ErrorCode": ErrorCode.STALE_BROKER_EPOCH, "Directories": []}, now_ms=120)
    assert a.next_deadline_ms() == 320
    req = a.next_request(image, 7, 320)
    a.handle_response(_answer(req, ErrorCode.UNKNOWN_TOPIC_ID), now_ms=330)    # gone: given up
    assert a.queued == 0
    a.observe(TID, image.topics["t"].partitions[0], DIR_B)
    shown = _image(dirs=(DIR_B, DIR_A))                       # the image caught up meanwhile
    assert a.next_request(shown, 7, 10_000) is None and a.queued == 0


def test_a_request_carries_at_most_the_kafka_limit():
    n = MAX_ASSIGNMENTS_PER_REQUEST + 10
    image = _image(n)
    a = DirAssignments(node_id=2)
    for p in image.topics["t"].partitions:
        a.observe(TID, p, DIR_B)
    req = a.next_request(image, 7, 0)
    assert len(req["Directories"][0]["Topics"][0]["Partitions"]) == MAX_ASSIGNMENTS_PER_REQUEST
    assert a.queued == 10
