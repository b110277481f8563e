"""Cross-check against an independent encoder: kafka-python's.

Where kafka-python can encode the same message at the same version, a value
generated from our schema is encoded by both; the bytes must be identical.
"""

import importlib
import pkgutil
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import all_versions, body_values

from tierlog.protocol import APIS, ApiKey, encode_request, encode_response
from tierlog.protocol.codec import encode_struct

kafka_protocol = pytest.importorskip("kafka.protocol")
from kafka.protocol.api_message import ApiMessage  # noqa: E402 - only once importorskip found kafka-python


def _kafka_python_classes() -> dict:
    for module in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
        if ".old" not in module.name and "generate_stubs" not in module.name:
            importlib.import_module(module.name)
    found, pending = {}, list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and cls._json:
            found[(cls.API_KEY, cls.type)] = cls
    return found


_CLASSES = _kafka_python_classes()


def _covered(key: int, kind: str, version: int) -> bool:
    cls = _CLASSES.get((key, kind))
    return cls is not None and version <= cls.max_version


_CASES = [c for c in all_versions(APIS) if _covered(*c)]


# kafka-python treats the *AuthorizedOperations int32 fields as bit sets (same
# wire format), renaming some of them to "authorized_operations"
_BITFIELD = "authorized_operations"


# fields Kafka renamed after the version we speak (same wire format): key 74 v0 is KIP-714's
# ListClientMetricsResources, which KIP-1142 renamed ListConfigResources
_RENAMED = {"ConfigResources": "ClientMetricsResources", "ResourceName": "Name"}


def _our_name(their_name: str, value: dict) -> str:
    if their_name not in value and their_name in _RENAMED:
        return _RENAMED[their_name]
    if their_name != _BITFIELD:
        return their_name
    (name,) = [k for k in value if k.endswith("AuthorizedOperations")]
    return name


def _to_kafka_python(data_class, value: dict, version: int):
    """Build kafka-python's data object from our dict (names matched exactly)."""
    kwargs = {}
    for field in data_class._struct._fields:
        if not field.for_version_q(version):
            continue
        item = value[_our_name(field._name, value)]
        if field.type_str == "bitfield":
            item = {bit for bit in range(32) if (item >> bit) & 1}
        elif item is None:
            pass
        elif field.is_struct():
            item = _to_kafka_python(getattr(data_class, field.type_str), item, version)
        elif field.is_struct_array():
            nested = getattr(data_class, field.type_str)
            item = [_to_kafka_python(nested, x, version) for x in item]
        elif field.type_str == "uuid" and field._tag is not None and item == bytes(16):
            # a tagged field at Kafka's default (the zero uuid) is left out of the tag section, by
            # Kafka and by us; kafka-python leaves out only its own default, None
            item = field.default
        elif field.type_str == "uuid":
            item = uuid.UUID(bytes=item)
        kwargs[field.name] = item
    return data_class(version=version, **kwargs)


TIERLOG_TAGS = 1303      # tagged fields from this tag on are tierlog's extensions (KIP-1303): Kafka lacks them


def _without_tierlog_tags(struct, value):
    """``value`` with tierlog's own tagged fields emptied (kafka-python cannot encode them)."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for f in struct.fields:
        if f.name not in out:
            continue
        if f.tag is not None and f.tag >= TIERLOG_TAGS:
            out[f.name] = [] if isinstance(out[f.name], list) else None
            continue
        element = getattr(f.type, "element", None)
        nested = element if element is not None else f.type
        if hasattr(nested, "fields") and out[f.name] is not None:
            items = out[f.name]
            out[f.name] = ([_without_tierlog_tags(nested, x) for x in items] if isinstance(items, list)
                           else _without_tierlog_tags(nested, items))
    return out


@pytest.mark.parametrize("key,kind,version", _CASES)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_body_bytes_match_kafka_python(key, kind, version, data):
    spec = APIS[key]
    struct = spec.request if kind == "request" else spec.response
    body = _without_tierlog_tags(struct, data.draw(body_values(spec, kind, version)))
    ours = bytes(encode_struct(struct, version, spec.is_flexible(version), body))
    cls = _CLASSES[(key, kind)]
    theirs = _to_kafka_python(cls, body, version).encode(version=version)
    assert ours == bytes(theirs)


_HEADER_CASES = [(ApiKey.PRODUCE, 8), (ApiKey.PRODUCE, 9), (ApiKey.METADATA, 12),
                 (ApiKey.API_VERSIONS, 3), (ApiKey.FETCH, 4), (ApiKey.JOIN_GROUP, 6)]


@pytest.mark.parametrize("key,version", _HEADER_CASES)
@pytest.mark.parametrize("client_id", ["tierlog-test", ""])
def test_request_frames_match_kafka_python(key, version, client_id):
    body = APIS[key].request.defaults(version)
    cls = _CLASSES[(key, "request")]
    message = _to_kafka_python(cls, body, version)
    message.with_header(correlation_id=12345, client_id=client_id)
    theirs = message.encode(version=version, header=True)
    assert encode_request(key, version, 12345, client_id, body) == bytes(theirs)


@pytest.mark.parametrize("key,version", _HEADER_CASES)
def test_kafka_python_decodes_our_response_frames(key, version):
    spec = APIS[key]
    body = spec.response.defaults(version)
    frame = b"".join(bytes(p) for p in encode_response(key, version, 777, body))
    body_bytes = bytes(encode_struct(spec.response, version, spec.is_flexible(version), body))
    assert frame.endswith(body_bytes)
    cls = _CLASSES[(key, "response")]
    with_header = cls.decode(frame, version=version, header=True)
    assert with_header.header.correlation_id == 777
    assert with_header == cls.decode(body_bytes, version=version)
