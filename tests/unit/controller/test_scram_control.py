"""SCRAM credentials on the controller: AlterUserScramCredentials (Kafka's ScramControlManager
rules and messages), the records in the image and in snapshots, DescribeUserScramCredentials'
answers, and the bootstrap records of a new cluster (tierlog format --add-scram)."""
import random

import pytest
from controller_helpers import Harness

from tierlog.controller.controller_config import ControllerConfig
from tierlog.controller.quorum_controller import QuorumController
from tierlog.metadata.bootstrap import (
    BootstrapError,
    decode_bootstrap,
    encode_bootstrap,
    read_bootstrap,
    write_bootstrap,
)
from tierlog.metadata.cluster_records import decode, encode
from tierlog.metadata.image import MetadataImage
from tierlog.metadata.scram import ScramMechanism, new_credential, salted_password
from tierlog.metadata.scram_records import (
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from tierlog.metadata.snapshot import load_snapshot, snapshot_records
from tierlog.protocol.errors import ErrorCode

ALTER = 51
SHA256, SHA512 = int(ScramMechanism.SCRAM_SHA_256), int(ScramMechanism.SCRAM_SHA_512)


def upsert(name, mechanism=SHA512, iterations=4096, password="pw", salt=b"salt-salt-salt"):
    m = ScramMechanism(mechanism) if mechanism in (1, 2) else ScramMechanism.SCRAM_SHA_256
    return {"Name": name, "Mechanism": mechanism, "Iterations": iterations, "Salt": salt,
            "SaltedPassword": salted_password(m, password, salt, max(iterations, 1))}


def alter(h, upsertions=(), deletions=()):
    r = h.call(ALTER, 0, {"Upsertions": list(upsertions), "Deletions": list(deletions)})
    return r, {x["User"]: (x["ErrorCode"], x["ErrorMessage"]) for x in r.response["Results"]}


def test_upsert_stores_keys_never_the_password_and_describe_answers():
    h = Harness()
    r, results = alter(h, [upsert("alice", SHA512, 8192, "alice-secret"), upsert("bob", SHA256)])
    assert results == {"alice": (0, None), "bob": (0, None)}
    record = next(x for x in r.records if x.name == "alice")
    expected = new_credential(ScramMechanism.SCRAM_SHA_512, "alice-secret", 8192, salt=b"salt-salt-salt")
    assert (record.salt, record.stored_key, record.server_key, record.iterations) == \
        (expected.salt, expected.stored_key, expected.server_key, 8192)
    assert b"alice-secret" not in b"".join(encode(x) for x in r.records)
    assert h.qc.image.scram.credential(ScramMechanism.SCRAM_SHA_512, "alice") == expected
    assert h.qc.image.scram.describe(["alice", "carol", "bob", "bob"]) == [
        {"User": "alice", "ErrorCode": 0, "ErrorMessage": None,
         "CredentialInfos": [{"Mechanism": SHA512, "Iterations": 8192}]},
        {"User": "carol", "ErrorCode": ErrorCode.RESOURCE_NOT_FOUND,
         "ErrorMessage": "Attempt to describe a user credential that does not exist: carol", "CredentialInfos": []},
        {"User": "bob", "ErrorCode": ErrorCode.DUPLICATE_RESOURCE,
         "ErrorMessage": "Cannot describe SCRAM credentials for the same user twice in a single request: bob",
         "CredentialInfos": []}]
    assert [x["User"] for x in h.qc.image.scram.describe(None)] == ["alice", "bob"]


def test_kafkas_errors():
    h = Harness()
    alter(h, [upsert("alice")])
    r, results = alter(h, [upsert("a", iterations=4095), upsert("b", iterations=16385), upsert("c", mechanism=3),
                           upsert("", SHA512), upsert("d"), upsert("d", SHA256), upsert("alice", SHA256)],
                       [{"Name": "alice", "Mechanism": SHA512}, {"Name": "e", "Mechanism": SHA512}])
    assert results == {
        "a": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "b": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "c": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "d": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        "alice": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        "e": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")}
    assert r.records == []
    r, results = alter(h, deletions=[{"Name": "alice", "Mechanism": SHA512}])
    assert results == {"alice": (0, None)} and r.records == [RemoveUserScramCredentialRecord("alice", SHA512)]
    assert len(h.qc.image.scram) == 0


def test_records_round_trip_and_snapshots_carry_the_credentials():
    h = Harness()
    alter(h, [upsert("alice"), upsert("bob", SHA256, 10000)])
    alter(h, [upsert("alice", SHA256)])
    for record in h.written:
        assert decode(encode(record)) == record
    assert encode(RemoveUserScramCredentialRecord("a", 1)) == bytes([1, 22, 0, 2, ord("a"), 1, 0])
    image = h.qc.image
    records = list(snapshot_records(image))
    assert sum(isinstance(x, UserScramCredentialRecord) for x in records) == 3
    assert load_snapshot(encode(x) for x in records).scram == image.scram


def _controller(bootstrap):
    return QuorumController(1, ControllerConfig(cluster_id="c1", max_idle_interval_ms=0), random.Random(1), 0,
                            bootstrap_records=bootstrap)


def test_bootstrap_records_go_first_on_a_new_cluster_only():
    cred = new_credential(ScramMechanism.SCRAM_SHA_512, "admin-secret")
    boot = [UserScramCredentialRecord("admin", SHA512, cred.salt, cred.stored_key, cred.server_key, 4096)]
    qc = _controller(boot)
    qc.on_leader_change(True, MetadataImage.empty("c1"), next_offset=1)
    from controller_helpers import registration
    result = qc.handle(62, 3, registration(1), 0)     # a broker registering first: the bootstrap still leads
    assert result.records[0] == boot[0] and result.base_offset == 1 and result.response["BrokerEpoch"] == 2
    assert not any(isinstance(x, UserScramCredentialRecord) for x in qc.tick(10))    # written once
    used = qc.image
    again = _controller(boot)
    again.on_leader_change(True, used, next_offset=used.high_watermark_offset)
    assert not any(isinstance(x, UserScramCredentialRecord) for x in again.tick(30))
    fresh = _controller(boot)
    fresh.on_leader_change(True, MetadataImage.empty("c1"), next_offset=0)
    assert fresh.tick(40) == boot                       # or at the first tick, when no request came first


def test_bootstrap_file(tmp_path):
    cred = new_credential(ScramMechanism.SCRAM_SHA_256, "x")
    boot = [UserScramCredentialRecord("admin", SHA256, cred.salt, cred.stored_key, cred.server_key, 4096)]
    assert read_bootstrap(tmp_path) == []
    path = write_bootstrap(tmp_path, boot)
    assert read_bootstrap(tmp_path) == boot and path.stat().st_mode & 0o077 == 0
    data = encode_bootstrap(boot)
    assert decode_bootstrap(data) == boot
    for bad in (b"junk", data[:-1], data[:20] + bytes([data[20] ^ 1]) + data[21:]):
        with pytest.raises(BootstrapError):
            decode_bootstrap(bad)
