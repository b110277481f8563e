"""The StandardAuthorizer core: Kafka's evaluation rules, over an image's ACLs."""
import pytest

from tierlog.config import ConfigError
from tierlog.metadata import MetadataDelta, MetadataImage
from tierlog.metadata.acls import (
    AclBinding,
    AclBindingFilter,
    InvalidAcl,
    validate_binding,
)
from tierlog.metadata.acls import (
    AclOperation as Op,
)
from tierlog.metadata.acls import (
    AclPermissionType as Perm,
)
from tierlog.metadata.acls import (
    PatternType as Pat,
)
from tierlog.metadata.acls import (
    ResourceType as Res,
)
from tierlog.metadata.authorizer import (
    STANDARD_AUTHORIZER,
    AclIndex,
    Authorizer,
    authorizer_from_config,
)
from tierlog.metadata.cluster_records import (
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
)
from tierlog.metadata.snapshot import load_snapshot, snapshot_records

ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(name, op, perm=Perm.ALLOW, principal=ALICE, pattern=Pat.LITERAL, host="*", rtype=Res.TOPIC):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def acls(*bindings):
    return {i.to_bytes(16, "big"): b for i, b in enumerate(bindings, 1)}


def check(table, op, name, principal=ALICE, host=HOST, rtype=Res.TOPIC, authorizer=None):
    return (authorizer or Authorizer()).authorize(table, principal, host, op, rtype, name)


def test_literal_allow_is_exact():
    t = acls(acl("t1", Op.WRITE))
    assert check(t, Op.WRITE, "t1")
    assert not check(t, Op.WRITE, "t2")
    assert not check(t, Op.WRITE, "t1x")
    assert not check(t, Op.READ, "t1")
    assert not check(t, Op.WRITE, "t1", principal=BOB)


def test_deny_wins_over_allow_whatever_the_pattern():
    t = acls(acl("*", Op.ALL), acl("secret", Op.READ, Perm.DENY))
    assert check(t, Op.READ, "public")
    assert not check(t, Op.READ, "secret")
    assert check(t, Op.WRITE, "secret")            # the DENY names READ only
    t = acls(acl("pay", Op.READ), acl("pa", Op.ALL, Perm.DENY, pattern=Pat.PREFIXED))
    assert not check(t, Op.READ, "pay")


def test_prefixed_patterns_match_names_that_start_with_them():
    t = acls(acl("orders-", Op.READ, pattern=Pat.PREFIXED), acl("o", Op.WRITE, pattern=Pat.PREFIXED))
    assert check(t, Op.READ, "orders-eu")
    assert check(t, Op.READ, "orders-")
    assert not check(t, Op.READ, "orders")
    assert not check(t, Op.READ, "xorders-eu")
    assert check(t, Op.WRITE, "orders")
    assert not check(t, Op.WRITE, "payments")


def test_implied_describe_from_allow_only():
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert check(acls(acl("t", op)), Op.DESCRIBE, "t"), op
    assert not check(acls(acl("t", Op.CREATE)), Op.DESCRIBE, "t")
    assert check(acls(acl("t", Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS, "t")
    assert not check(acls(acl("t", Op.DESCRIBE_CONFIGS)), Op.ALTER_CONFIGS, "t")
    # a DENY of READ does not deny DESCRIBE (Kafka: DENY implies nothing)
    t = acls(acl("t", Op.DESCRIBE), acl("t", Op.READ, Perm.DENY))
    assert check(t, Op.DESCRIBE, "t")
    assert not check(t, Op.READ, "t")


def test_all_matches_every_operation():
    t = acls(acl("t", Op.ALL))
    assert all(check(t, op, "t") for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS))
    assert not check(acls(acl("t", Op.ALL), acl("t", Op.ALL, Perm.DENY)), Op.READ, "t")


def test_wildcard_principal_host_and_resource():
    t = acls(acl("*", Op.READ, principal="User:*"))
    assert check(t, Op.READ, "anything", principal=BOB)
    t = acls(acl("t", Op.READ, host="10.0.0.2"))
    assert not check(t, Op.READ, "t", host=HOST)
    assert check(t, Op.READ, "t", host="10.0.0.2")
    t = acls(acl("*", Op.READ, Perm.DENY, principal="User:*"), acl("t", Op.READ))
    assert not check(t, Op.READ, "t")


def test_resource_types_are_separate():
    t = acls(acl("g", Op.READ, rtype=Res.GROUP))
    assert check(t, Op.READ, "g", rtype=Res.GROUP)
    assert not check(t, Op.READ, "g", rtype=Res.TOPIC)


def test_super_users_and_no_acl_rule():
    t = acls(acl("t", Op.READ, Perm.DENY, principal="User:admin"))
    assert check(t, Op.READ, "t", principal="User:admin", authorizer=Authorizer(["User:admin"]))
    empty = acls()
    assert not check(empty, Op.READ, "t")
    allow_if_none = Authorizer(allow_everyone_if_no_acl_found=True)
    assert check(empty, Op.READ, "t", authorizer=allow_if_none)
    # an ACL for anyone on the resource takes it out of the no-ACL rule
    assert not check(acls(acl("t", Op.READ, principal=BOB)), Op.READ, "t", authorizer=allow_if_none)
    assert check(acls(acl("t", Op.READ, principal=BOB)), Op.READ, "u", authorizer=allow_if_none)


def test_authorize_any_topic_and_bitfield():
    a = Authorizer()
    assert a.authorize_any(acls(acl("t", Op.WRITE)), ALICE, HOST, Op.WRITE, Res.TOPIC)
    assert not a.authorize_any(acls(acl("t", Op.READ)), ALICE, HOST, Op.WRITE, Res.TOPIC)
    assert not a.authorize_any(acls(acl("t", Op.WRITE), acl("*", Op.WRITE, Perm.DENY)), ALICE, HOST, Op.WRITE,
                               Res.TOPIC)
    bits = a.authorized_operations(acls(acl("t", Op.READ)), ALICE, HOST, Res.TOPIC, "t",
                                   (Op.READ, Op.WRITE, Op.DESCRIBE))
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_index_lookup_does_not_walk_every_acl():
    many = [acl(f"topic-{i}", Op.READ) for i in range(5000)] + [acl("topic-", Op.WRITE, pattern=Pat.PREFIXED)]
    index = AclIndex(many)
    found = list(index.applicable(Res.TOPIC, "topic-42"))
    assert sorted(b.operation for b in found) == [Op.READ, Op.WRITE]


def test_index_is_rebuilt_when_the_image_acls_change():
    a = Authorizer()
    image = MetadataImage.empty("c")
    d = MetadataDelta(image)
    d.replay(AccessControlEntryRecord.of(b"\x01" * 16, acl("t", Op.READ)))
    image = d.apply()
    assert a.authorize(image.acls, ALICE, HOST, Op.READ, Res.TOPIC, "t")
    d = MetadataDelta(image)
    d.replay(RemoveAccessControlEntryRecord(b"\x01" * 16))
    image = d.apply()
    assert not a.authorize(image.acls, ALICE, HOST, Op.READ, Res.TOPIC, "t")


def test_acls_survive_a_snapshot():
    d = MetadataDelta(MetadataImage.empty("c"))
    for i, b in enumerate([acl("t", Op.READ), acl("p-", Op.WRITE, pattern=Pat.PREFIXED)], 1):
        d.replay(AccessControlEntryRecord.of(bytes([i]) * 16, b))
    image = d.apply()
    assert load_snapshot(snapshot_records(image)).acls == image.acls


def test_filters_match_like_kafka():
    t1, star, pre = acl("t1", Op.READ), acl("*", Op.READ), acl("t", Op.READ, pattern=Pat.PREFIXED)
    match = AclBindingFilter(Res.TOPIC, "t1", Pat.MATCH)
    assert [match.matches(b) for b in (t1, star, pre)] == [True, True, True]
    literal = AclBindingFilter(Res.TOPIC, "t1", Pat.LITERAL)
    assert [literal.matches(b) for b in (t1, star, pre)] == [True, False, False]
    assert AclBindingFilter(principal=BOB).matches(t1) is False
    assert AclBindingFilter(operation=Op.UNKNOWN).problem() == "Unknown operation"


@pytest.mark.parametrize("bad", [
    acl("", Op.READ), acl("t", Op.ANY), acl("t", Op.READ, Perm.ANY), acl("t", Op.READ, pattern=Pat.MATCH),
    acl("other", Op.ALTER, rtype=Res.CLUSTER), acl("t", Op.READ, principal="alice"), acl("t", Op.READ, host=""),
])
def test_invalid_bindings_are_refused(bad):
    with pytest.raises(InvalidAcl):
        validate_binding(bad)


def test_config():
    assert authorizer_from_config({}) is None
    a = authorizer_from_config({"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:a; User:b",
                                "allow.everyone.if.no.acl.found": "true"})
    assert a.super_users == {"User:a", "User:b"} and a.allow_if_no_acls
    with pytest.raises(ConfigError):
        authorizer_from_config({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(ConfigError):
        authorizer_from_config({"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "admin"})
