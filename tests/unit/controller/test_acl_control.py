"""CreateAcls / DeleteAcls on the controller: validation, duplicates, filters, NOT_CONTROLLER."""
import random

from tierlog.controller.acl_control import AclControlManager
from tierlog.metadata import MetadataDelta, MetadataImage
from tierlog.metadata.cluster_records import (
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
)
from tierlog.protocol.errors import ErrorCode


def creation(name="t1", op=4, principal="User:alice", pattern=3, rtype=2):
    return {"ResourceType": rtype, "ResourceName": name, "ResourcePatternType": pattern, "Principal": principal,
            "Host": "*", "Operation": op, "PermissionType": 3}


def apply(image, records):
    d = MetadataDelta(image)
    for r in records:
        d.replay(r)
    return d.apply()


def test_create_validates_and_skips_duplicates():
    m = AclControlManager(random.Random(1))
    image = MetadataImage.empty("c")
    records, resp = m.create_acls({"Creations": [creation(), creation(), creation(principal="nobody"),
                                                 creation("x", rtype=4)]}, image)
    assert [r["ErrorCode"] for r in resp["Results"]] == [0, 0, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]
    assert len(records) == 1 and isinstance(records[0], AccessControlEntryRecord)
    image = apply(image, records)
    records, resp = m.create_acls({"Creations": [creation()]}, image)
    assert records == [] and resp["Results"][0]["ErrorCode"] == 0


def test_delete_by_filter_lists_matches():
    m = AclControlManager(random.Random(1))
    image = MetadataImage.empty("c")
    records, _ = m.create_acls({"Creations": [creation("t1"), creation("t2"), creation("t", pattern=4)]}, image)
    image = apply(image, records)
    f = {"ResourceTypeFilter": 2, "ResourceNameFilter": "t1", "PatternTypeFilter": 2, "PrincipalFilter": None,
         "HostFilter": None, "Operation": 1, "PermissionType": 1}
    bad = {**f, "Operation": 0}
    records, resp = m.delete_acls({"Filters": [f, f, bad]}, image)
    assert all(isinstance(r, RemoveAccessControlEntryRecord) for r in records) and len(records) == 2
    first, second, third = resp["FilterResults"]
    assert sorted(a["ResourceName"] for a in first["MatchingAcls"]) == ["t", "t1"]
    assert len(second["MatchingAcls"]) == 2          # listed by both filters, removed once
    assert third["ErrorCode"] == ErrorCode.INVALID_REQUEST
    image = apply(image, records)
    assert [b.resource_name for b in image.acls.values()] == ["t2"]
