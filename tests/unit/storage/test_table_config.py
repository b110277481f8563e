"""The table topic configs: checked with the topic's other configs and, at the controller, against the cluster."""
from __future__ import annotations

import json

import pytest

from tierlog.metadata.topic_rules import RuleError, TieringRules, validate_topic_configs
from tierlog.protocol.errors import ErrorCode
from tierlog.storage import LogConfig
from tierlog.storage.table_config import check_schema_change, parse_value_schema

TIERED = {"remote.storage.enable": "true"}


def _schema(**props) -> str:
    return json.dumps({"type": "object", "properties": {k: {"type": v} for k, v in props.items()}})


def test_modes_and_their_defaults():
    assert LogConfig().values["tierlog.table.mode"] == "off"
    config = LogConfig.from_props({**TIERED, "tierlog.table.mode": "value_json",
                                   "tierlog.table.value.schema": _schema(id="integer")})
    assert config.values["tierlog.table.mode"] == "value_json"


@pytest.mark.parametrize(("props", "message"), [
    ({"tierlog.table.mode": "key_value"}, "set remote.storage.enable=true to use key_value"),
    ({**TIERED, "tierlog.table.mode": "avro"}, "must be one of off, key_value, value_json"),
    ({**TIERED, "tierlog.table.mode": "value_json"}, "value_json needs tierlog.table.value.schema"),
    ({**TIERED, "tierlog.table.mode": "value_json", "tierlog.table.value.schema": "{"}, "not JSON"),
    ({**TIERED, "tierlog.table.mode": "value_json", "tierlog.table.value.schema": '{"type": "array"}'},
     'want a JSON Schema {"type": "object"'),
    ({**TIERED, "tierlog.table.mode": "value_json", "tierlog.table.value.schema": _schema(offset="integer")},
     "collides with the table's own column"),
    ({**TIERED, "tierlog.table.mode": "value_json", "tierlog.table.value.schema": _schema(a="object")},
     "type must be one of integer, number, string, boolean"),
    ({**TIERED, "tierlog.table.mode": "value_json", "tierlog.table.value.schema": _schema(**{"a b": "string"})},
     "is not a column name"),
])
def test_bad_table_configs_are_invalid_config(props, message):
    with pytest.raises(RuleError, match=None) as err:
        validate_topic_configs(props, {}, TieringRules("orders", system_enabled=True))
    assert err.value.error_code == ErrorCode.INVALID_CONFIG and message in str(err.value)


def test_a_table_is_refused_while_remote_storage_is_encrypted():
    props = {**TIERED, "tierlog.table.mode": "key_value"}
    validate_topic_configs(props, {}, TieringRules("orders", True))
    with pytest.raises(RuleError, match="encrypted at rest"):
        validate_topic_configs(props, {}, TieringRules("orders", True, encryption_enabled=True))


def test_a_schema_may_gain_properties_but_not_change_a_type():
    before = _schema(id="integer", name="string")
    check_schema_change(before, _schema(id="integer", name="string", score="number"))
    check_schema_change(before, _schema(id="integer"))
    props = {**TIERED, "tierlog.table.mode": "value_json", "tierlog.table.value.schema": _schema(id="string")}
    with pytest.raises(RuleError, match="property 'id' changes type integer -> string"):
        validate_topic_configs(props, {}, TieringRules("orders", True, True,
                                                       before={"tierlog.table.value.schema": before}))


def test_required_and_nullable():
    schema = parse_value_schema(json.dumps({"type": "object", "required": ["a"],
                                            "properties": {"a": {"type": "integer"}, "b": {"type": ["null", "string"]}}}))
    assert [(f.name, f.type, f.required) for f in schema.fields] == [("a", "integer", True), ("b", "string", False)]
