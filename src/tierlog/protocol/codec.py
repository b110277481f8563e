"""The codec engine: one generic encoder/decoder for every schema.

Each ``(Struct, version, flexible)`` is compiled once into a :class:`Plan` (an
encode and a decode function) and cached on the Struct. Compilation generates
one small Python function per struct level in which runs of adjacent
fixed-width fields are packed / unpacked with a single precompiled
``struct.Struct`` call, and every other field calls a closure chosen for its
type, nullability and version (classic or compact encodings). Decoded values
are plain dicts keyed by Kafka's field names; ``records`` decode to zero-copy
``memoryview`` slices of the input.

Encoding asserts that a value's keys are fields of its struct (in some
version): a mistyped key is a programmer error, not a silent default. The check
is one C-level subset test per struct value (about 0.15 us); ``python -O`` drops it. Decoding
is unchanged.

Encoding writes into an :class:`Output` (a ``bytearray``). A ``records`` value
may be bytes-like or a list of parts, some of which may be opaque objects with
``__len__`` (file regions a transport will ``sendfile``); those, and large
bytes-like parts, are not copied but recorded as *splices*, and
:meth:`Output.parts` returns the final list of parts.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeAlias

from tierlog.protocol.primitives import (
    FIXED_FORMATS,
    FIXED_SIZES,
    INT8,
    INT32,
    ZERO_UUID,
    Buffer,
    ProtocolError,
    decode_bytes,
    decode_compact_bytes,
    decode_compact_nullable_string,
    decode_compact_string,
    decode_nullable_string,
    decode_string,
    decode_uuid,
    decode_uvarint,
    encode_bytes,
    encode_compact_bytes,
    encode_compact_string,
    encode_string,
    encode_uvarint,
    take,
)
from tierlog.protocol.schema import ArrayOf, Field, FieldType, Struct

__all__ = [
    "DECODE_ERRORS",
    "INLINE_RECORDS_MAX",
    "Output",
    "Plan",
    "decode_struct",
    "encode_struct",
    "plan_for",
    "scalar_codec",
    "unknown_keys",
]

#: bytes-like ``records`` parts at least this large are spliced, not copied
INLINE_RECORDS_MAX = 64 * 1024

_BYTES_LIKE = (bytes, bytearray, memoryview)

# A message is a dict of its fields' values, and a value is of whatever type its schema names: the
# codec is generic over them (Any); the typed views of each message are protocol/typed/.
Message: TypeAlias = dict[str, Any]
Encoder: TypeAlias = Callable[["Output", Any], None]                 # (out, value)
Decoder: TypeAlias = Callable[[Buffer, int], tuple[Any, int]]       # (buf, pos) -> (value, pos after)
Codec: TypeAlias = tuple[Encoder, Decoder]
ItemsEncoder: TypeAlias = Callable[["Output", Sequence[Any]], None]
ItemsDecoder: TypeAlias = Callable[[Buffer, int, int], tuple[list[Any], int]]   # (buf, pos, count)
#: what malformed input raises in a decoder before it is turned into ProtocolError
DECODE_ERRORS = (_struct.error, IndexError, ValueError, OverflowError)


class Output(bytearray):
    """An encode buffer plus the parts to splice into it without copying."""

    __slots__ = ("splices",)

    def __init__(self) -> None:
        super().__init__()
        self.splices: list[tuple[int, Any]] = []

    def splice(self, part: object) -> None:
        """Put ``part`` at the current end of the output, uncopied."""
        self.splices.append((len(self), part))

    def parts(self) -> list[Any]:
        """The output as a list of parts: bytes-like slices and spliced parts."""
        if not self.splices:
            return [self]
        view = memoryview(self)
        parts: list[Any] = []
        start = 0
        for at, part in self.splices:
            if at > start:
                parts.append(view[start:at])
            parts.append(part)
            start = at
        if start < len(self):
            parts.append(view[start:])
        return parts


class Plan(NamedTuple):
    """Compiled codec of one struct at one version."""

    encode: Callable[[Output, Mapping[str, Any]], None]
    decode: Callable[[Buffer, int], tuple[Message, int]]


def plan_for(struct: Struct, version: int, flexible: bool) -> Plan:
    """The cached compiled codec of ``struct`` at ``version``."""
    key = (version, flexible)
    plan = struct.plans.get(key)
    if plan is None:
        plan = struct.plans[key] = _compile_struct(struct, version, flexible)
    return plan


def encode_struct(struct: Struct, version: int, flexible: bool, value: Mapping[str, Any],
                  out: Output | None = None) -> Output:
    """Encode ``value`` (missing keys take defaults) into ``out``; asserts that
    every key of ``value`` is a field of ``struct`` in some version."""
    if out is None:
        out = Output()
    plan_for(struct, version, flexible).encode(out, value)
    return out


def decode_struct(struct: Struct, version: int, flexible: bool, buf: Buffer,
                  pos: int = 0) -> tuple[Message, int]:
    """Decode one struct at ``pos``; raises ProtocolError on bad input."""
    plan = plan_for(struct, version, flexible)
    try:
        return plan.decode(buf, pos)
    except ProtocolError:
        raise
    except DECODE_ERRORS as exc:
        raise ProtocolError(f"cannot decode {struct.name} v{version}: {exc}") from exc


# -- struct compilation -------------------------------------------------------

class _StructBuilder:
    """Generates the source of one struct level's encode and decode functions."""

    def __init__(self, struct: Struct, version: int, flexible: bool):
        self.struct, self.version, self.flexible = struct, version, flexible
        self.ns: dict[str, Any] = {"ProtocolError": ProtocolError,     # the generated code's globals
                         "known": frozenset(f.name for f in struct.fields).issuperset,
                         "unknown": _unknown_keys_message(struct, version)}
        self.enc = ["def encode(out, d):",
                    "    assert known(d), unknown(d)",
                    "    get = d.get"]
        self.dec = ["def decode(buf, pos):"]
        self.result: list[tuple[str, str]] = []
        self.run: list[tuple[Field, str, str]] = []      # fixed-width fields: (field, format letter, var)
        self.tagged: list[tuple[Field, str]] = []
        self.runs = 0

    def add(self, field: Field, i: int) -> None:
        if not self.flexible and self.version in field.tagged_versions:
            raise ValueError(f"{self.struct.name}.{field.name} is tagged in "
                             f"non-flexible version {self.version}")
        var = f"v{i}"
        self.result.append((field.name, var))
        if field.tagged_in(self.version, self.flexible):
            self.tagged.append((field, var))
        elif isinstance(field.type, str) and field.type in FIXED_FORMATS:
            self.run.append((field, FIXED_FORMATS[field.type], var))
        else:
            self.flush_run()
            self.add_field(field, i, var)

    def add_field(self, field: Field, i: int, var: str) -> None:
        enc, dec = _type_codec(field.type, self.version, self.flexible,
                               field.nullable_in(self.version))
        self.ns[f"e{i}"], self.ns[f"d{i}"] = enc, dec
        self.ns[f"x{i}"] = field.default_in(self.version)
        self.enc.append(f"    e{i}(out, get({field.name!r}, x{i}))")
        self.dec.append(f"    {var}, pos = d{i}(buf, pos)")

    def flush_run(self) -> None:
        if not self.run:
            return
        k = self.runs
        self.runs += 1
        fmt = ">" + "".join(letter for _, letter, _ in self.run)
        packer = _struct.Struct(fmt)
        self.ns[f"s{k}"] = packer
        args = []
        for j, (f, _, _) in enumerate(self.run):
            self.ns[f"r{k}_{j}"] = f.default_in(self.version)
            args.append(f"get({f.name!r}, r{k}_{j})")
        self.enc.append(f"    out += s{k}.pack({', '.join(args)})")
        targets = "".join(f"{var}, " for _, _, var in self.run)
        self.dec.append(f"    {targets}= s{k}.unpack_from(buf, pos)")
        self.dec.append(f"    pos += {packer.size}")
        self.run = []

    def finish(self) -> Plan:
        self.flush_run()
        if self.flexible:
            self.add_tag_section()
        items = ", ".join(f"{name!r}: {var}" for name, var in self.result)
        self.dec.append(f"    return {{{items}}}, pos")
        source = "\n".join(self.enc) + "\n\n" + "\n".join(self.dec) + "\n"
        code = compile(source, f"<codec {self.struct.name} v{self.version}>", "exec")
        exec(code, self.ns)  # noqa: S102 - source generated above from the schema
        return Plan(self.ns["encode"], self.ns["decode"])

    def add_tag_section(self) -> None:
        if not self.tagged:
            self.enc.append("    out += b'\\x00'")
            self.ns["skip_tags"] = _make_tag_decoder([], self.version, self.flexible)
            self.dec.append("    _, pos = skip_tags(buf, pos)")
            return
        fields = [f for f, _ in self.tagged]
        self.ns["enc_tags"] = _make_tag_encoder(fields, self.version, self.flexible)
        self.ns["dec_tags"] = _make_tag_decoder(fields, self.version, self.flexible)
        self.enc.append("    enc_tags(out, d)")
        targets = "".join(f"{var}, " for _, var in self.tagged)
        self.dec.append(f"    ({targets}), pos = dec_tags(buf, pos)")


def unknown_keys(d: Mapping[str, Any], names: frozenset[str], struct_name: str, version: int) -> str:
    """The assertion message for a value holding keys that are no field of its struct in any
    version (a mistyped key would silently encode the default)."""
    return f"{struct_name} v{version} has no field {', '.join(sorted(map(str, d.keys() - names)))}"


def _unknown_keys_message(struct: Struct, version: int) -> Callable[[Mapping[str, Any]], str]:
    names = frozenset(f.name for f in struct.fields)

    def message(d: Mapping[str, Any]) -> str:
        return unknown_keys(d, names, struct.name, version)

    return message


def _compile_struct(struct: Struct, version: int, flexible: bool) -> Plan:
    builder = _StructBuilder(struct, version, flexible)
    for i, field in enumerate(struct.fields):
        if field.present_in(version):
            builder.add(field, i)
    return builder.finish()


# -- tagged fields -------------------------------------------------------------

def _make_tag_encoder(fields: list[Field], version: int,
                      flexible: bool) -> Callable[[Output, Mapping[str, Any]], None]:
    entries = []
    tagged = [(f.tag, f) for f in fields if f.tag is not None]
    for tag, f in sorted(tagged, key=lambda tf: tf[0]):
        nullable = f.nullable_in(version)
        enc, _ = _type_codec(f.type, version, flexible, nullable)
        default = f.default_in(version)
        entries.append((f.name, tag, enc, _default_test(f.type, version, flexible, default), default))

    def enc_tags(out: Output, d: Mapping[str, Any]) -> None:
        present = []
        for name, tag, enc, is_default, default in entries:
            value = d.get(name, default)
            if value is default or is_default(value):
                continue
            data = Output()
            enc(data, value)
            if data.splices:
                raise ValueError(f"tagged field {name} cannot hold spliced parts")
            present.append((tag, data))
        out += encode_uvarint(len(present))
        for tag, data in present:
            out += encode_uvarint(tag)
            out += encode_uvarint(len(data))
            out += data

    return enc_tags


def _make_tag_decoder(fields: list[Field], version: int,
                      flexible: bool) -> Callable[[Buffer, int], tuple[list[Any], int]]:
    defaults = [f.default_in(version) for f in fields]
    fresh = [(i, _copier(v)) for i, v in enumerate(defaults) if isinstance(v, (list, dict))]
    by_tag: dict[int | None, tuple[int, Decoder]] = {}
    for i, f in enumerate(fields):
        by_tag[f.tag] = (i, _type_codec(f.type, version, flexible, f.nullable_in(version))[1])

    def dec_tags(buf: Buffer, pos: int) -> tuple[list[Any], int]:
        values = defaults.copy()
        for i, copy in fresh:
            values[i] = copy()
        if buf[pos] == 0:
            return values, pos + 1
        count, pos = decode_uvarint(buf, pos)
        for _ in range(count):
            tag, pos = decode_uvarint(buf, pos)
            size, pos = decode_uvarint(buf, pos)
            _, end = take(buf, pos, size)
            entry = by_tag.get(tag)
            if entry is not None:
                values[entry[0]], pos = entry[1](buf, pos)
                if pos != end:
                    raise ProtocolError(f"tagged field {tag} size {size} does not match its value")
            pos = end
        return values, pos

    return dec_tags


def _copier(value: Any) -> Callable[[], object]:
    """A fast factory of fresh copies of a mutable default value."""
    if isinstance(value, dict) and not any(isinstance(v, (list, dict)) for v in value.values()):
        return value.copy
    if isinstance(value, list) and not value:
        return list
    return lambda: _deep_copy(value)


def _deep_copy(value: Any) -> Any:
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    return value


def _default_test(type_: FieldType, version: int, flexible: bool, default: Any) -> Callable[[Any], bool]:
    """A predicate telling whether a tagged field's value equals its default."""
    if isinstance(type_, Struct) and default is not None:
        tests = [(f.name, f.default_in(version),
                  _default_test(f.type, version, flexible, f.default_in(version)))
                 for f in type_.fields_in(version)]
        return lambda v: v is None or all(t(v.get(n, d)) for n, d, t in tests)    # v: a dict
    if isinstance(type_, ArrayOf) and default is not None:
        return lambda v: v is None or list(v) == default                         # v: a sequence
    if default is None:
        return lambda v: v is None
    return lambda v: v == default


# -- per-type codecs -------------------------------------------------------------

def _type_codec(type_: FieldType, version: int, flexible: bool, nullable: bool) -> Codec:
    """(encode(out, value), decode(buf, pos) -> (value, pos)) of one type."""
    if isinstance(type_, ArrayOf):
        return _array_codec(type_.element, version, flexible, nullable)
    if isinstance(type_, Struct):
        return _struct_codec(type_, version, flexible, nullable)
    if type_ in FIXED_FORMATS:
        return _fixed_codec(type_)
    return _SCALAR_CODECS[type_](flexible, nullable)


def _fixed_codec(type_name: str) -> Codec:
    packer = _struct.Struct(">" + FIXED_FORMATS[type_name])
    pack, unpack_from, size = packer.pack, packer.unpack_from, packer.size

    def enc(out: Output, value: Any) -> None:
        out += pack(value)

    def dec(buf: Buffer, pos: int) -> tuple[Any, int]:
        return unpack_from(buf, pos)[0], pos + size

    return enc, dec


def _not_null(encode: Callable[[Any], bytes], what: str) -> Encoder:
    def enc(out: Output, value: Any) -> None:
        if value is None:
            raise ValueError(f"{what} is not nullable in this version")
        out += encode(value)
    return enc


def _string_codec(flexible: bool, nullable: bool) -> Codec:
    encode = encode_compact_string if flexible else encode_string
    dec: Decoder
    if nullable:
        dec = decode_compact_nullable_string if flexible else decode_nullable_string

        def enc(out: Output, value: Any) -> None:
            out += encode(value)
        return enc, dec
    dec = decode_compact_string if flexible else decode_string
    return _not_null(encode, "string"), dec


def _bytes_codec(flexible: bool, nullable: bool) -> Codec:
    encode = encode_compact_bytes if flexible else encode_bytes
    slice_ = decode_compact_bytes if flexible else decode_bytes

    def dec(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
        raw, pos = slice_(buf, pos)
        if raw is None:
            if not nullable:
                raise ProtocolError("null in non-nullable bytes")
            return None, pos
        return bytes(raw), pos

    if nullable:
        def enc(out: Output, value: Any) -> None:
            out += encode(value)
        return enc, dec
    return _not_null(encode, "bytes"), dec


def _uuid_codec(flexible: bool, nullable: bool) -> Codec:
    def enc(out: Output, value: Any) -> None:
        if value is None:
            value = ZERO_UUID
        if len(value) != 16:
            raise ValueError(f"a uuid is 16 bytes, got {len(value)}")
        out += value
    return enc, decode_uuid


def _put_part(out: Output, part: Any) -> None:
    if isinstance(part, _BYTES_LIKE):
        if isinstance(part, memoryview) and part.itemsize != 1:
            part = part.cast("B")
        if len(part) < INLINE_RECORDS_MAX:
            out += part
            return
    out.splice(part)


def _records_codec(flexible: bool, nullable: bool) -> Codec:
    length: Callable[[int], bytes]
    if flexible:
        null, length = b"\x00", (lambda n: encode_uvarint(n + 1))
    else:
        null, length = b"\xff\xff\xff\xff", INT32.pack

    def enc(out: Output, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ValueError("records are not nullable in this version")
            out += null
        elif isinstance(value, (list, tuple)):
            out += length(sum(_part_len(p) for p in value))
            for part in value:
                _put_part(out, part)
        else:
            out += length(_part_len(value))
            _put_part(out, value)

    slice_ = decode_compact_bytes if flexible else decode_bytes

    def dec(buf: Buffer, pos: int) -> tuple[Buffer | None, int]:
        raw, pos = slice_(buf, pos)
        if raw is None and not nullable:
            raise ProtocolError("null in non-nullable records")
        return raw, pos

    return enc, dec


def _part_len(part: Any) -> int:
    return part.nbytes if isinstance(part, memoryview) else len(part)


_SCALAR_CODECS: dict[str, Callable[[bool, bool], Codec]] = {     # (flexible, nullable) -> codec
    "string": _string_codec,
    "bytes": _bytes_codec,
    "uuid": _uuid_codec,
    "records": _records_codec,
}


def scalar_codec(type_name: str, flexible: bool, nullable: bool) -> Codec:
    """This engine's (encode, decode) of a string, bytes, uuid or records value: the static
    codecs of ``protocol/hot/`` call it for what they do not write out themselves."""
    return _SCALAR_CODECS[type_name](flexible, nullable)


def _struct_codec(struct: Struct, version: int, flexible: bool, nullable: bool) -> Codec:
    plan = plan_for(struct, version, flexible)
    if not nullable:
        def enc(out: Output, value: Any) -> None:
            plan.encode(out, {} if value is None else value)
        return enc, plan.decode
    encode, decode = plan.encode, plan.decode

    def enc_nullable(out: Output, value: Any) -> None:
        if value is None:
            out += b"\xff"
        else:
            out += b"\x01"
            encode(out, value)

    def dec_nullable(buf: Buffer, pos: int) -> tuple[Message | None, int]:
        (marker,) = INT8.unpack_from(buf, pos)
        if marker < 0:
            return None, pos + 1
        return decode(buf, pos + 1)

    return enc_nullable, dec_nullable


# -- arrays --------------------------------------------------------------------

def _count_codec(flexible: bool) -> tuple[Callable[[int], bytes], bytes, Callable[[Buffer, int], tuple[int, int]]]:
    """(encode count, the null array, decode count) where a decoded -1 means a null array."""
    if flexible:
        def dec(buf: Buffer, pos: int) -> tuple[int, int]:
            n, pos = decode_uvarint(buf, pos)
            return n - 1, pos
        return (lambda n: encode_uvarint(n + 1)), b"\x00", dec

    def dec_classic(buf: Buffer, pos: int) -> tuple[int, int]:
        return INT32.unpack_from(buf, pos)[0], pos + 4
    return INT32.pack, b"\xff\xff\xff\xff", dec_classic


def _array_codec(element: FieldType, version: int, flexible: bool, nullable: bool) -> Codec:
    encode_count, null, decode_count = _count_codec(flexible)
    if isinstance(element, str) and element in FIXED_FORMATS:
        enc_items, dec_items = _fixed_items(element)
        min_size = FIXED_SIZES[element]
    else:
        enc_items, dec_items = _general_items(element, version, flexible)
        min_size = 1

    def enc(out: Output, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ValueError("array is not nullable in this version")
            out += null
            return
        out += encode_count(len(value))
        enc_items(out, value)

    def dec(buf: Buffer, pos: int) -> tuple[list[Any] | None, int]:
        n, pos = decode_count(buf, pos)
        if n < 0:
            if n == -1 and nullable:
                return None, pos
            raise ProtocolError(f"invalid array length {n}")
        if n * min_size > len(buf) - pos:
            raise ProtocolError(f"array of {n} items exceeds the frame")
        return dec_items(buf, pos, n)

    return enc, dec


def _fixed_items(element: str) -> tuple[ItemsEncoder, ItemsDecoder]:
    letter, size = FIXED_FORMATS[element], FIXED_SIZES[element]

    def enc_items(out: Output, items: Sequence[Any]) -> None:
        out += _struct.pack(f">{len(items)}{letter}", *items)

    def dec_items(buf: Buffer, pos: int, n: int) -> tuple[list[Any], int]:
        return list(_struct.unpack_from(f">{n}{letter}", buf, pos)), pos + n * size

    return enc_items, dec_items


def _general_items(element: FieldType, version: int, flexible: bool) -> tuple[ItemsEncoder, ItemsDecoder]:
    enc_one, dec_one = _type_codec(element, version, flexible, False)

    def enc_items(out: Output, items: Sequence[Any]) -> None:
        for item in items:
            enc_one(out, item)

    def dec_items(buf: Buffer, pos: int, n: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            item, pos = dec_one(buf, pos)
            append(item)
        return items, pos

    return enc_items, dec_items
