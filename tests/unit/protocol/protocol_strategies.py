"""Hypothesis strategies generated from the protocol schemas themselves."""

from hypothesis import strategies as st

from tierlog.protocol.schema import ArrayOf, Struct

_INTS = {
    "int8": st.integers(-(1 << 7), (1 << 7) - 1),
    "int16": st.integers(-(1 << 15), (1 << 15) - 1),
    "uint16": st.integers(0, (1 << 16) - 1),
    "int32": st.integers(-(1 << 31), (1 << 31) - 1),
    "int64": st.integers(-(1 << 63), (1 << 63) - 1),
}

SCALARS = {
    **_INTS,
    "float64": st.floats(allow_nan=False),
    "bool": st.booleans(),
    "string": st.text(max_size=6),
    "bytes": st.binary(max_size=8),
    "uuid": st.binary(min_size=16, max_size=16),
    "records": st.binary(max_size=24),
}


def type_values(type_, version: int, flexible: bool, nullable: bool):
    if isinstance(type_, ArrayOf):
        base = st.lists(type_values(type_.element, version, flexible, False), max_size=3)
    elif isinstance(type_, Struct):
        base = struct_values(type_, version, flexible)
    else:
        base = SCALARS[type_]
    return st.none() | base if nullable else base


def struct_values(struct: Struct, version: int, flexible: bool):
    """Dicts holding every field of ``struct`` at ``version``."""
    return st.fixed_dictionaries({
        f.name: type_values(f.type, version, flexible, f.nullable_in(version))
        for f in struct.fields_in(version)
    })


def body_values(spec, kind: str, version: int):
    struct = spec.request if kind == "request" else spec.response
    return struct_values(struct, version, spec.is_flexible(version))


def all_versions(apis):
    """(api key, kind, version) of every message the registry describes."""
    return [(key, kind, v) for key, spec in sorted(apis.items())
            for kind in ("request", "response")
            for v in range(spec.min_version, spec.max_version + 1)]
