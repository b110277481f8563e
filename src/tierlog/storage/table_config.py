"""The topic configs that make a tiered topic an Iceberg table (docs/tables.md), and their checks.

``tierlog.table.mode`` (``off`` | ``key_value`` | ``value_json``) and
``tierlog.table.value.schema`` (for ``value_json``: a JSON Schema subset). They are
``tierlog.``-prefixed because Kafka has no such configs (a Kafka tool shows them
as what they are: this broker's own), and named after what they set, as Kafka's
``remote.storage.enable`` is. Pure rules, no IO: the controller checks them at
CreateTopics and AlterConfigs (``LogConfig`` calls ``check_table_config``), the
table writer reads the parsed schema.

The value schema is the subset of JSON Schema (draft 2020-12 words) that maps
onto flat Iceberg columns::

    {"type": "object",
     "properties": {"id": {"type": "integer"}, "amount": {"type": "number"},
                    "note": {"type": ["string", "null"]}, "paid": {"type": "boolean"}},
     "required": ["id"],
     "additionalProperties": true}

``integer`` -> long, ``number`` -> double, ``string`` -> string, ``boolean`` -> boolean;
a property is nullable unless it is ``required``. ``additionalProperties: false``
sends values with other properties to the dead-letter table; true (the default)
ignores them. Anything else (nested objects, arrays, ``$ref``, formats) is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "KEY_VALUE",
    "KEY_VALUE_COLUMNS",
    "MODES",
    "OFF",
    "SCHEMA_BYTES_MAX",
    "SCHEMA_FIELDS_MAX",
    "TABLE_KEEP_EXPIRED",
    "TABLE_MODE",
    "TABLE_VALUE_SCHEMA",
    "VALUE_JSON",
    "VALUE_JSON_RESERVED",
    "ValueField",
    "ValueSchema",
    "check_schema_change",
    "check_table_config",
    "parse_value_schema",
]

TABLE_MODE = "tierlog.table.mode"
TABLE_VALUE_SCHEMA = "tierlog.table.value.schema"
TABLE_KEEP_EXPIRED = "tierlog.table.keep.expired"     # true: retention does not cut the table
OFF, KEY_VALUE, VALUE_JSON = "off", "key_value", "value_json"
MODES = (OFF, KEY_VALUE, VALUE_JSON)
KEY_VALUE_COLUMNS = ("partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers")
VALUE_JSON_RESERVED = frozenset(c for c in KEY_VALUE_COLUMNS if c != "value")   # value_json keeps these columns
SCHEMA_BYTES_MAX = 64 * 1024
SCHEMA_FIELDS_MAX = 500
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_TYPES = ("integer", "number", "string", "boolean")
_SCHEMA_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "$schema", "title",
                          "description"})
_FIELD_KEYS = frozenset({"type", "title", "description"})


@dataclass(frozen=True, slots=True)
class ValueField:
    name: str
    type: str            # integer | number | string | boolean (JSON Schema's words)
    required: bool


@dataclass(frozen=True, slots=True)
class ValueSchema:
    fields: tuple[ValueField, ...]
    additional_properties: bool = True


def parse_value_schema(text: str) -> ValueSchema:
    """The schema ``text`` describes; ValueError naming what is wrong."""
    if len(text.encode()) > SCHEMA_BYTES_MAX:
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: longer than {SCHEMA_BYTES_MAX} bytes")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("type") != "object" or not isinstance(doc.get("properties"), dict):
        raise ValueError(f'{TABLE_VALUE_SCHEMA}: want a JSON Schema {{"type": "object", "properties": {{...}}}}')
    unknown = sorted(set(doc) - _SCHEMA_KEYS)
    if unknown:
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: unsupported keyword {unknown[0]!r}")
    properties: dict[str, Any] = doc["properties"]
    if not 0 < len(properties) <= SCHEMA_FIELDS_MAX:
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: 1 to {SCHEMA_FIELDS_MAX} properties, got {len(properties)}")
    required = doc.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) and r in properties for r in required):
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: required must list some of the properties")
    additional = doc.get("additionalProperties", True)
    if additional is not True and additional is not False:
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: additionalProperties must be true or false")
    fields = tuple(_field(name, spec, name in required) for name, spec in properties.items())
    return ValueSchema(fields, additional)


def _field(name: str, spec: Any, required: bool) -> ValueField:
    if not _NAME.match(name):
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: property name {name!r} is not a column name "
                         "(letters, digits and _, up to 128)")
    if name in VALUE_JSON_RESERVED:
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: property {name!r} collides with the table's own column")
    if not isinstance(spec, dict) or set(spec) - _FIELD_KEYS:
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: property {name!r}: only type, title and description are supported")
    kind = spec.get("type")
    if isinstance(kind, list):          # ["string", "null"]: nullable is the default, the null is accepted
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind not in _TYPES:
        raise ValueError(f"{TABLE_VALUE_SCHEMA}: property {name!r}: type must be one of {', '.join(_TYPES)} "
                         "(optionally with null)")
    return ValueField(name, kind, required)


def check_table_config(values: Mapping[str, Any]) -> None:
    """The table configs of a topic's resolved ``values`` agree with each other and with tiering."""
    mode = values.get(TABLE_MODE, OFF)
    schema = values.get(TABLE_VALUE_SCHEMA, "")
    if mode == OFF:
        if schema:
            parse_value_schema(schema)
        return
    if not values.get("remote.storage.enable"):
        raise ValueError(f"{TABLE_MODE}: a table is made of uploaded segments: set remote.storage.enable=true "
                         f"to use {mode}")
    if mode == VALUE_JSON and not schema:
        raise ValueError(f"{TABLE_MODE}: value_json needs {TABLE_VALUE_SCHEMA} (a JSON Schema of the value)")
    if schema:
        parse_value_schema(schema)


def check_schema_change(before: str, after: str) -> None:
    """A new value schema must evolve the table: fields may be added or dropped (the column stays,
    null from then on), a field's type may not change (Iceberg cannot evolve those in place)."""
    if not before or not after or before == after:
        return
    old = {f.name: f.type for f in parse_value_schema(before).fields}
    for f in parse_value_schema(after).fields:
        if f.name in old and old[f.name] != f.type:
            raise ValueError(f"{TABLE_VALUE_SCHEMA}: property {f.name!r} changes type {old[f.name]} -> {f.type}; "
                             "the table cannot evolve that way (add a new property instead)")
