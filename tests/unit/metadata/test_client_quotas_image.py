"""Client quotas: ClientQuotaRecord's framing, the image built from records and snapshots,
KIP-55's precedence, AlterClientQuotas' validation and DescribeClientQuotas' filters."""
from __future__ import annotations

import pytest

from tierlog.controller.quota_control import alter_client_quotas
from tierlog.metadata.client_quotas import (
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    check_filter,
)
from tierlog.metadata.cluster_records import decode, encode
from tierlog.metadata.delta import MetadataDelta
from tierlog.metadata.image import MetadataImage
from tierlog.metadata.quota_records import ClientQuotaRecord, EntityData
from tierlog.metadata.snapshot import load_snapshot, snapshot_records
from tierlog.protocol.errors import ErrorCode


def _entry(entity: dict, **ops) -> dict:
    return {"Entity": [{"EntityType": t, "EntityName": n} for t, n in entity.items()],
            "Ops": [{"Key": k, "Value": v if v is not None else 0.0, "Remove": v is None} for k, v in ops.items()]}


def _image(*entries: dict, base: MetadataImage | None = None) -> MetadataImage:
    records, response = alter_client_quotas({"Entries": list(entries), "ValidateOnly": False})
    assert all(e["ErrorCode"] == 0 for e in response["Entries"]), response
    delta = MetadataDelta(base or MetadataImage.empty("c"))
    for r in records:
        delta.replay(decode(encode(r)))
    return delta.apply()


def test_record_round_trips_with_a_default_entity():
    r = ClientQuotaRecord((EntityData("user", None), EntityData("client-id", "app")), "producer_byte_rate", 1024.0)
    assert decode(encode(r)) == r
    assert encode(r)[:3] == bytes([1, 14, 1])      # frame 1, key 14, version 1 (flexible)


def test_precedence_follows_kip_55_and_names_the_shared_sensor():
    image = _image(
        _entry({"client-id": None}, producer_byte_rate=8),
        _entry({"client-id": "app"}, producer_byte_rate=7),
        _entry({"user": None}, producer_byte_rate=6),
        _entry({"user": None, "client-id": None}, producer_byte_rate=5),
        _entry({"user": None, "client-id": "app"}, producer_byte_rate=4),
        _entry({"user": "alice"}, producer_byte_rate=3),
        _entry({"user": "alice", "client-id": None}, producer_byte_rate=2),
        _entry({"user": "alice", "client-id": "app"}, producer_byte_rate=1))
    q = image.client_quotas
    assert q.resolve("alice", "app", "producer_byte_rate") == (1, "alice", "app")
    assert q.resolve("alice", "other", "producer_byte_rate") == (2, "alice", "other")
    assert q.resolve("bob", "app", "producer_byte_rate") == (4, "bob", "app")
    assert q.resolve("bob", "other", "producer_byte_rate") == (5, "bob", "other")
    assert q.resolve("bob", "app", "consumer_byte_rate") is None
    # remove levels one at a time, most specific first: each next level shows through
    steps = [({"user": "alice", "client-id": "app"}, (2, "alice", "app")),
             ({"user": "alice", "client-id": None}, (3, "alice", "")),
             ({"user": "alice"}, (4, "alice", "app")),
             ({"user": None, "client-id": "app"}, (5, "alice", "app")),
             ({"user": None, "client-id": None}, (6, "alice", "")),
             ({"user": None}, (7, "", "app")),
             ({"client-id": "app"}, (8, "", "app")),
             ({"client-id": None}, None)]
    for entity, expected in steps:
        image = _image(_entry(entity, producer_byte_rate=None), base=image)
        assert image.client_quotas.resolve("alice", "app", "producer_byte_rate") == expected


def test_ip_rate_falls_back_to_the_default_ip():
    image = _image(_entry({"ip": None}, connection_creation_rate=10), _entry({"ip": "10.0.0.1"}, connection_creation_rate=2))
    assert image.client_quotas.ip_rate("10.0.0.1") == 2
    assert image.client_quotas.ip_rate("10.0.0.2") == 10


def test_snapshot_rebuilds_the_quotas():
    image = _image(_entry({"user": "alice", "client-id": None}, producer_byte_rate=100, request_percentage=50.5),
                   _entry({"ip": None}, connection_creation_rate=3))
    assert load_snapshot(snapshot_records(image)).client_quotas == image.client_quotas


@pytest.mark.parametrize(("entry", "words"), [
    (_entry({"user": "a"}, nope=1), "Invalid quota key nope"),
    (_entry({"user": "a"}, producer_byte_rate=-5), "must be a positive number"),
    (_entry({"user": "a"}, producer_byte_rate=1.5), "whole number"),
    (_entry({"ip": "a.b"}, connection_creation_rate=1), "not a valid IP"),
    (_entry({"ip": None, "user": "a"}, connection_creation_rate=1), "cannot be combined"),
    (_entry({"ip": None}, producer_byte_rate=1), "Invalid quota key"),
    (_entry({"group": "g"}, producer_byte_rate=1), "Unknown entity type"),
    (_entry({}, producer_byte_rate=1), "empty"),
    ({"Entity": [{"EntityType": "user", "EntityName": "a"}],
      "Ops": [{"Key": "producer_byte_rate", "Value": 1.0, "Remove": False}] * 2}, "twice"),
])
def test_invalid_entries_are_invalid_request_and_write_nothing(entry, words):
    good = _entry({"user": "b"}, consumer_byte_rate=10)
    records, response = alter_client_quotas({"Entries": [entry, good], "ValidateOnly": False})
    bad, ok = response["Entries"]
    assert bad["ErrorCode"] == ErrorCode.INVALID_REQUEST and words in bad["ErrorMessage"]
    assert ok["ErrorCode"] == ErrorCode.NONE
    assert [r.key for r in records] == ["consumer_byte_rate"]


def test_validate_only_writes_nothing():
    records, response = alter_client_quotas({"Entries": [_entry({"user": "b"}, consumer_byte_rate=10)],
                                             "ValidateOnly": True})
    assert records == [] and response["Entries"][0]["ErrorCode"] == 0


def _names(entries):
    return [tuple((e["EntityType"], e["EntityName"]) for e in x["Entity"]) for x in entries]


def test_describe_filters_exact_default_any_and_strict():
    image = _image(_entry({"user": "alice"}, producer_byte_rate=1), _entry({"user": None}, producer_byte_rate=2),
                   _entry({"user": "alice", "client-id": "app"}, consumer_byte_rate=3),
                   _entry({"client-id": "app"}, request_percentage=4.5)).client_quotas

    def comp(t, m, name=None):
        return {"EntityType": t, "MatchType": m, "Match": name}
    assert _names(image.describe([comp("user", MATCH_EXACT, "alice")], True)) == [(("user", "alice"),)]
    assert _names(image.describe([comp("user", MATCH_EXACT, "alice")], False)) == [
        (("client-id", "app"), ("user", "alice")), (("user", "alice"),)]
    assert _names(image.describe([comp("user", MATCH_DEFAULT)], True)) == [(("user", None),)]
    assert len(image.describe([comp("user", MATCH_ANY)], False)) == 3
    assert len(image.describe([], False)) == 4
    assert image.describe([comp("client-id", MATCH_ANY)], True)[0]["Values"] == [
        {"Key": "request_percentage", "Value": 4.5}]


def test_bad_filters():
    assert "more than once" in check_filter([{"EntityType": "user", "MatchType": 2, "Match": None}] * 2)
    assert "Unknown match type" in check_filter([{"EntityType": "user", "MatchType": 7, "Match": None}])
    assert "cannot be combined" in check_filter([{"EntityType": "user", "MatchType": 2, "Match": None},
                                                 {"EntityType": "ip", "MatchType": 2, "Match": None}])
