"""A record value against a ``value_json`` schema: its column values, or why it goes to the dead-letter table.

Sans-IO. The rules (docs/tables.md): the value must be UTF-8 JSON text of an
object; every ``required`` property present and not null; each property of the
schema that is present has its type (``integer``: a JSON number without fraction
that fits a long, booleans excluded; ``number``: any JSON number, stored as a
double; ``string``; ``boolean``), or is null when not required; with
``additionalProperties: false`` no other property. A property absent or null is
a null column.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tierlog.storage.table_config import ValueSchema

__all__ = ["ERROR_CHARS_MAX", "parse_value"]

ERROR_CHARS_MAX = 300       # a dead-letter row's error text
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def parse_value(value: bytes | None, schema: ValueSchema) -> tuple[dict[str, Any] | None, str | None]:
    """(the columns of ``value``, None) or (None, the error sending it to the dead-letter table)."""
    if value is None:
        return None, "the value is null"
    try:
        doc = json.loads(value.decode("utf-8"))
    except UnicodeDecodeError as e:
        return None, _short(f"the value is not UTF-8: {e}")
    except ValueError as e:
        return None, _short(f"the value is not JSON: {e}")
    if not isinstance(doc, dict):
        return None, f"the value is a JSON {type(doc).__name__}, not an object"
    row: dict[str, Any] = {}
    for f in schema.fields:
        v = doc.get(f.name)
        if v is None:
            if f.required:
                return None, f"required property {f.name!r} is {'null' if f.name in doc else 'missing'}"
            row[f.name] = None
            continue
        converted = _convert(v, f.type)
        if converted is None:
            return None, _short(f"property {f.name!r}: expected {f.type}, got {json.dumps(v)[:60]}")
        row[f.name] = converted
    if not schema.additional_properties:
        known = {f.name for f in schema.fields}
        extra = [k for k in doc if k not in known]
        if extra:
            return None, _short(f"property {extra[0]!r} is not in the schema (additionalProperties is false)")
    return row, None


def _convert(v: Any, kind: str) -> Any:
    """``v`` as the column type of ``kind``; None when it does not match."""
    if isinstance(v, bool):
        return v if kind == "boolean" else None
    if kind == "integer":
        if isinstance(v, float) and v.is_integer() and math.isfinite(v):
            v = int(v)
        return v if isinstance(v, int) and _LONG_MIN <= v <= _LONG_MAX else None
    if kind == "number":
        return float(v) if isinstance(v, int | float) and (isinstance(v, float) or abs(v) < 2**1023) else None
    if kind == "string":
        return v if isinstance(v, str) else None
    return None


def _short(text: str) -> str:
    return text if len(text) <= ERROR_CHARS_MAX else text[:ERROR_CHARS_MAX - 3] + "..."
