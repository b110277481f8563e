"""The static codecs of the hot messages (protocol/hot/) are current with the schemas and produce
exactly what the generic engine produces, on every version: the same bytes from the same dict,
the same dict from the same bytes, and a ProtocolError where it raises one."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import type_values

from tierlog.protocol import hot, hot_gen
from tierlog.protocol.codec import DECODE_ERRORS, Output, decode_struct, encode_struct
from tierlog.protocol.primitives import ProtocolError

CASES = [(spec, kind, v) for spec in hot_gen.HOT.values() for kind in ("request", "response")
         for v in range(spec.min_version, spec.max_version + 1)]
IDS = [f"{spec.name}-{kind}-v{v}" for spec, kind, v in CASES]


def test_the_hot_codecs_are_generated_from_the_current_schemas():
    assert hot_gen.main(["--check"]) == 0, "run: python -m tierlog.protocol.hot_gen"


def test_every_version_of_every_hot_message_has_a_static_codec_and_no_other_has():
    for spec, _kind, v in CASES:
        assert hot.codecs(spec.key, v) is not None, (spec.name, v)
        assert hot.codecs(spec.key, spec.max_version + 1) is None
    assert hot.codecs(8, 8) is None         # OffsetCommit: the generic codec


def _struct(spec, kind):
    return spec.request if kind == "request" else spec.response


def _static(spec, kind, v):
    found = hot.codecs(spec.key, v)
    if kind == "request":
        return found.encode_request, found.decode_request
    return found.encode_response, found.decode_response


def _partial_values(struct, version, flexible):
    """Dicts holding some fields of ``struct`` (the rest take defaults), nested the same way."""
    fields = {f.name: _partial_type(f.type, version, flexible, f.nullable_in(version))
              for f in struct.fields_in(version)}
    return st.fixed_dictionaries({}, optional=fields)


def _partial_type(type_, version, flexible, nullable):
    from tierlog.protocol.schema import ArrayOf, Struct
    if isinstance(type_, ArrayOf) and isinstance(type_.element, Struct):
        base = st.lists(_partial_values(type_.element, version, flexible), max_size=3)
    elif isinstance(type_, Struct):
        base = _partial_values(type_, version, flexible)
    else:
        return type_values(type_, version, flexible, nullable)
    return st.none() | base if nullable else base


def _generic_decode(struct, v, flexible, frame):
    try:
        return decode_struct(struct, v, flexible, memoryview(frame))
    except ProtocolError:
        return "ProtocolError"


def _static_decode(decode, frame):
    try:
        body, pos = decode(memoryview(frame), 0)
    except ProtocolError:
        return "ProtocolError"
    except DECODE_ERRORS:
        return "ProtocolError"      # protocol/wire.py turns these into ProtocolError, as decode_struct does
    return body, pos


def _same(a, b):
    """Decoded values compare equal, and records slices hold the same bytes."""
    return a == b


@pytest.mark.parametrize("spec,kind,version", CASES, ids=IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_same_bytes_and_same_dicts_as_the_generic_codec(spec, kind, version, data):
    struct, flexible = _struct(spec, kind), spec.is_flexible(version)
    encode, decode = _static(spec, kind, version)
    body = data.draw(_partial_values(struct, version, flexible))
    generic = bytes(encode_struct(struct, version, flexible, body))
    static = Output()
    encode(static, body)
    assert bytes(static) == generic
    assert _same(_static_decode(decode, generic), _generic_decode(struct, version, flexible, generic))
    decoded, _ = decode(memoryview(generic), 0)
    again = Output()
    encode(again, decoded)
    assert bytes(again) == generic
    cut = data.draw(st.integers(0, max(0, len(generic) - 1)), label="cut")
    assert _static_decode(decode, generic[:cut]) == _generic_decode(struct, version, flexible, generic[:cut])


@pytest.mark.parametrize("spec,kind,version", CASES, ids=IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_altered_bytes_decode_alike(spec, kind, version, data):
    """Any bytes: both decode to the same dict, or both reject them."""
    struct, flexible = _struct(spec, kind), spec.is_flexible(version)
    _, decode = _static(spec, kind, version)
    body = data.draw(_partial_values(struct, version, flexible))
    frame = bytearray(encode_struct(struct, version, flexible, body))
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        if frame:
            at = data.draw(st.integers(0, len(frame) - 1), label="at")
            frame[at] = data.draw(st.integers(0, 255), label="byte")
    frame = bytes(frame)
    assert _static_decode(decode, frame) == _generic_decode(struct, version, flexible, frame)


@pytest.mark.parametrize("spec,kind,version", CASES, ids=IDS)
def test_an_empty_dict_encodes_every_default(spec, kind, version):
    struct, flexible = _struct(spec, kind), spec.is_flexible(version)
    encode, decode = _static(spec, kind, version)
    out = Output()
    encode(out, {})
    assert bytes(out) == bytes(encode_struct(struct, version, flexible, {}))
    assert decode(memoryview(bytes(out)), 0)[0] == struct.defaults(version)


def test_a_misspelt_key_is_refused_as_by_the_generic_codec():
    from tierlog.protocol.messages.produce import SPEC
    encode, _ = _static(SPEC, "request", 9)
    with pytest.raises(AssertionError, match="ProduceRequest v9 has no field Akcs"):
        encode(Output(), {"Akcs": 1})


def test_large_records_are_spliced_not_copied():
    from tierlog.protocol.codec import INLINE_RECORDS_MAX
    from tierlog.protocol.messages.fetch import SPEC
    big = bytes(INLINE_RECORDS_MAX)
    body = {"Responses": [{"TopicId": bytes(16), "Partitions": [{"PartitionIndex": 0, "Records": [b"ab", big]}]}]}
    encode, _ = _static(SPEC, "response", 16)
    static = Output()
    encode(static, body)
    generic = encode_struct(SPEC.response, 16, True, body)
    assert [bytes(p) for p in static.parts()] == [bytes(p) for p in generic.parts()]
    assert static.splices and static.splices[0][1] is big
