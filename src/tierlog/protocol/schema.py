"""The schema DSL: message layouts as data.

A message is a :class:`Struct` of :class:`Field` s. A field has Kafka's name, a
type, the versions it exists in, the versions in which it may be null, and
optionally a tag (a tagged field, written in the tagged-field section of
flexible versions only when its value differs from its default).

Types: one of :data:`PRIMITIVE_TYPES`, a nested :class:`Struct`, or an array
written as a one-element list: ``[SomeStruct]`` or ``["int32"]``.

Version ranges are strings as in Kafka's message specs: ``"0+"``, ``"3-7"``,
``"5"`` or ``"none"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from tierlog.protocol.primitives import ZERO_UUID

if TYPE_CHECKING:
    from tierlog.protocol.codec import Plan  # which compiles these schemas

__all__ = [
    "PRIMITIVE_TYPES",
    "VERSION_MAX",
    "ArrayOf",
    "Field",
    "Struct",
    "Versions",
    "parse_versions",
]

PRIMITIVE_TYPES = frozenset({
    "int8", "int16", "uint16", "int32", "int64", "float64", "bool",
    "string", "bytes", "uuid", "records",
})

#: the upper bound used for open ranges such as "3+"
VERSION_MAX = 0x7FFF

_ZERO_VALUES = {
    "int8": 0, "int16": 0, "uint16": 0, "int32": 0, "int64": 0,
    "float64": 0.0, "bool": False, "string": "", "bytes": b"",
    "uuid": ZERO_UUID, "records": None,
}


class Versions(NamedTuple):
    """An inclusive version range; ``lo > hi`` means no version."""

    lo: int
    hi: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def __str__(self) -> str:
        if self.lo > self.hi:
            return "none"
        if self.hi == VERSION_MAX:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


_NO_VERSIONS = Versions(1, 0)


def parse_versions(spec: str | None) -> Versions:
    """Parse ``"0+"``, ``"3-7"``, ``"5"`` or ``"none"`` (None means none)."""
    if spec is None or spec == "none":
        return _NO_VERSIONS
    spec = spec.strip()
    if spec.endswith("+"):
        return Versions(int(spec[:-1]), VERSION_MAX)
    lo, sep, hi = spec.partition("-")
    return Versions(int(lo), int(hi) if sep else int(lo))


class ArrayOf(NamedTuple):
    """An array type; ``element`` is a type name, a Struct or another ArrayOf."""

    element: FieldType


#: a field's type: a primitive's name (PRIMITIVE_TYPES), a Struct or an ArrayOf
FieldType: TypeAlias = "str | Struct | ArrayOf"
#: how a schema spells one: also ``[element]`` for an array
FieldTypeSpec: TypeAlias = "FieldType | list[Any]"


def _normalize_type(type_: FieldTypeSpec) -> FieldType:
    if isinstance(type_, list):
        if len(type_) != 1:
            raise ValueError(f"an array type is a one-element list, got {type_!r}")
        return ArrayOf(_normalize_type(type_[0]))
    if isinstance(type_, (Struct, ArrayOf)):
        return type_
    if type_ not in PRIMITIVE_TYPES:
        raise ValueError(f"unknown field type {type_!r}")
    return type_


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


class Field:
    """One field of a Struct. ``default`` is used for missing keys on encode
    and for absent tagged fields on decode."""

    __slots__ = (
        "_default",
        "name",
        "nullable_versions",
        "tag",
        "tagged_versions",
        "type",
        "versions",
    )

    def __init__(self, name: str, type: FieldTypeSpec, versions: str = "0+",
                 nullable: str | None = None, tag: int | None = None,
                 tagged_versions: str | None = None, default: object = _UNSET):
        self.name = name
        self.type = _normalize_type(type)
        self.versions = parse_versions(versions)
        self.nullable_versions = parse_versions(nullable)
        self.tag = tag
        if tag is None:
            self.tagged_versions = _NO_VERSIONS
        else:
            self.tagged_versions = parse_versions(tagged_versions or versions)
        self._default = default

    def __repr__(self) -> str:
        tag = "" if self.tag is None else f", tag={self.tag}"
        return f"Field({self.name!r}, v{self.versions}{tag})"

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def nullable_in(self, version: int) -> bool:
        return version in self.versions and version in self.nullable_versions

    def tagged_in(self, version: int, flexible: bool) -> bool:
        return flexible and version in self.tagged_versions

    def default_in(self, version: int) -> Any:
        """The default value at ``version`` (a fresh object each call)."""
        if self._default is not _UNSET:
            return _copy_value(self._default)
        if self.nullable_in(version):
            return None
        if isinstance(self.type, ArrayOf):
            return []
        if isinstance(self.type, Struct):
            return self.type.defaults(version)
        return _ZERO_VALUES[self.type]


class Struct:
    """An ordered list of fields. Compiled codecs are cached on the instance."""

    __slots__ = ("fields", "name", "plans")

    def __init__(self, fields: list[Field], name: str | None = None):
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate field names in {name or names}")
        self.fields = tuple(fields)
        self.name = name or "Struct"
        self.plans: dict[tuple[int, bool], Plan] = {}      # (version, flexible) -> codec.plan_for's

    def __repr__(self) -> str:
        return f"Struct({self.name}, {len(self.fields)} fields)"

    def fields_in(self, version: int) -> list[Field]:
        return [f for f in self.fields if f.present_in(version)]

    def defaults(self, version: int) -> dict[str, Any]:
        """Every field of ``version`` at its default."""
        return {f.name: f.default_in(version) for f in self.fields_in(version)}


def _copy_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_copy_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy_value(v) for k, v in value.items()}
    return value
