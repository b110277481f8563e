"""The schema DSL: version ranges, types, defaults."""

import pytest

from tierlog.protocol.primitives import ZERO_UUID
from tierlog.protocol.schema import (
    VERSION_MAX,
    ArrayOf,
    Field,
    Struct,
    Versions,
    parse_versions,
)


@pytest.mark.parametrize("spec,expected", [
    ("0+", Versions(0, VERSION_MAX)), ("3-7", Versions(3, 7)), ("5", Versions(5, 5)),
    ("none", Versions(1, 0)), (None, Versions(1, 0)),
])
def test_parse_versions(spec, expected):
    assert parse_versions(spec) == expected


def test_version_membership_and_text():
    assert 3 in parse_versions("3-7") and 8 not in parse_versions("3-7")
    assert 99 in parse_versions("12+") and 11 not in parse_versions("12+")
    assert 0 not in parse_versions("none")
    assert [str(parse_versions(s)) for s in ("0+", "3-7", "5", "none")] == ["0+", "3-7", "5", "none"]


def test_types_are_normalized_and_checked():
    inner = Struct([Field("A", "int32")])
    assert Field("X", [inner]).type == ArrayOf(inner)
    assert Field("X", [["int8"]]).type == ArrayOf(ArrayOf("int8"))
    with pytest.raises(ValueError):
        Field("X", "int128")
    with pytest.raises(ValueError):
        Field("X", ["int8", "int16"])
    with pytest.raises(ValueError):
        Struct([Field("A", "int8"), Field("A", "int16")])


def test_defaults_follow_type_nullability_and_explicit_values():
    inner = Struct([Field("Id", "int32", default=-1), Field("Name", "string")])
    struct = Struct([
        Field("I", "int64"), Field("F", "float64"), Field("B", "bool"),
        Field("S", "string"), Field("NS", "string", nullable="2+"),
        Field("U", "uuid"), Field("R", "records", nullable="0+"),
        Field("Arr", ["int32"]), Field("NArr", ["int32"], nullable="0+"),
        Field("In", inner), Field("E", "int32", default=7),
        Field("Late", "int8", versions="3+"),
    ])
    assert struct.defaults(1) == {
        "I": 0, "F": 0.0, "B": False, "S": "", "NS": "", "U": ZERO_UUID, "R": None,
        "Arr": [], "NArr": None, "In": {"Id": -1, "Name": ""}, "E": 7,
    }
    assert struct.defaults(2)["NS"] is None
    assert "Late" in struct.defaults(3)


def test_default_objects_are_fresh_copies():
    field = Field("L", ["int32"], default=[])
    first = field.default_in(0)
    first.append(1)
    assert field.default_in(0) == []


def test_tagged_only_in_flexible_tagged_versions():
    field = Field("T", "int32", versions="2+", tag=0, tagged_versions="4+")
    assert not field.tagged_in(3, True)
    assert field.tagged_in(4, True)
    assert not field.tagged_in(4, False)
    assert Field("T", "int32", versions="5+", tag=1).tagged_versions == Versions(5, VERSION_MAX)
