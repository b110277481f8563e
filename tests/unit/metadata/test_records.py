import pytest

from tierlog.metadata.cluster_records import (
    RECORD_TYPES,
    AccessControlEntryRecord,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    ReplicaLogCoverage,
    TopicRecord,
    UnfenceBrokerRecord,
    UnknownRecordError,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
    decode,
    encode,
)
from tierlog.metadata.feature_records import FeatureLevelRecord
from tierlog.metadata.quota_records import ClientQuotaRecord, EntityData
from tierlog.protocol.primitives import ProtocolError

TID = bytes(range(16))

SAMPLES = [
    RegisterBrokerRecord(1, b"\x09" * 16, 42, (BrokerEndpoint("PLAINTEXT", "h1", 9092, 0),
                                               BrokerEndpoint("SSL", "h1", 9093, 1)),
                         (BrokerFeature("metadata.version", 1, 20),), "rack-a", False, True,
                         False, (b"\x01" * 16,)),
    RegisterBrokerRecord(2),
    UnregisterBrokerRecord(3, 7),
    TopicRecord("orders", TID),
    PartitionRecord(4, TID, (1, 2, 3), (1, 2), (3,), (), 1, 1, 5, 9, (),
                    (3,), (2,), (ReplicaLogCoverage(1, 1000, 2000), ReplicaLogCoverage(2))),
    PartitionRecord(0, TID),
    ConfigRecord(2, "orders", "retention.ms", "1000"),
    ConfigRecord(4, "", "min.insync.replicas", None),
    PartitionChangeRecord(1, TID),
    PartitionChangeRecord(1, TID, (1,), 2, (1, 2), (), (2,), 0, None, (3,), (3,),
                          (ReplicaLogCoverage(1, 5, 6),)),
    FenceBrokerRecord(5, 77),
    UnfenceBrokerRecord(5, 77),
    RemoveTopicRecord(TID),
    ProducerIdsRecord(1, 2, 3000),
    BrokerRegistrationChangeRecord(1, 2, -1, 1),
    NoOpRecord(),
    UserScramCredentialRecord("alice", 2, b"salt", b"s" * 64, b"k" * 64, 8192),
    RemoveUserScramCredentialRecord("alice", 1),
    FeatureLevelRecord("transaction.version", 2),
    ClientQuotaRecord((EntityData("client-id", None), EntityData("user", "alice")), "producer_byte_rate", 1e6),
    AccessControlEntryRecord(TID, 2, "orders", 4, "User:alice", "*", 4, 3),
    RemoveAccessControlEntryRecord(TID),
]


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_round_trip(record):
    assert decode(encode(record)) == record


def test_every_api_key_has_a_sample():
    assert {type(r).API_KEY for r in SAMPLES} == set(RECORD_TYPES)
    assert sorted(RECORD_TYPES) == [0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 14, 15, 17, 18, 19, 20, 22]


def test_golden_framing():
    # frame version 1, api key, version, then the flexible body
    assert encode(FenceBrokerRecord(1, 5)) == bytes.fromhex(
        "010700" "00000001" "0000000000000005" "00")
    assert encode(NoOpRecord()) == bytes.fromhex("01140000")
    assert encode(TopicRecord("t", b"\x01" * 16)) == (
        bytes.fromhex("010200" "0274") + b"\x01" * 16 + b"\x00")
    # PartitionChangeRecord v2: only the Leader tag (1) is written, 4 bytes
    assert encode(PartitionChangeRecord(0, b"\x01" * 16, leader=3)) == (
        bytes.fromhex("010502" "00000000") + b"\x01" * 16 + bytes.fromhex("01" "01" "04" "00000003"))
    # ConfigRecord: null value = compact string 0
    assert encode(ConfigRecord(2, "t", "a", None)) == bytes.fromhex("010400" "02" "0274" "0261" "00" "00")


def test_coverage_is_a_tagged_field_kafka_can_skip():
    from tierlog.metadata.cluster_records import LOCAL_LOG_COVERAGE_TAG
    from tierlog.protocol.primitives import encode_uvarint
    plain = encode(PartitionChangeRecord(0, TID, isr=(1,)))
    with_cov = encode(PartitionChangeRecord(0, TID, isr=(1,),
                                            local_log_coverage=(ReplicaLogCoverage(1, 2, 3),)))
    assert encode_uvarint(LOCAL_LOG_COVERAGE_TAG) in with_cov[len(plain) - 8:]
    assert len(with_cov) > len(plain)


def test_older_versions_decode():
    r = PartitionRecord(0, TID, (1,), (1,), leader=1, leader_epoch=0, partition_epoch=0)
    assert decode(encode(r, version=0)) == r
    b = RegisterBrokerRecord(1, fenced=False)
    assert decode(encode(b, version=0)) == b


def test_unknown_api_key():
    with pytest.raises(UnknownRecordError, match="api key 99"):
        decode(bytes.fromhex("016300"))
    with pytest.raises(UnknownRecordError, match="frame version"):
        decode(bytes.fromhex("020700"))
    with pytest.raises(UnknownRecordError, match="version 9"):
        decode(bytes.fromhex("010709"))


def test_truncated_and_trailing():
    data = encode(FenceBrokerRecord(1, 5))
    with pytest.raises(ProtocolError):
        decode(data[:-3])
    with pytest.raises(ProtocolError, match="trailing"):
        decode(data + b"\x00")


def test_encode_rejects_non_records():
    with pytest.raises(TypeError):
        encode(object())
